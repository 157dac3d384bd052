package recallapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/store"
)

// documentItem is Hindsight's DocumentListItem with memstream's counts.
type documentItem struct {
	ID               string            `json:"id"`
	BankID           string            `json:"bank_id"`
	ContentHash      *string           `json:"content_hash"`
	CreatedAt        time.Time         `json:"created_at"`
	UpdatedAt        time.Time         `json:"updated_at"`
	TextLength       int               `json:"text_length"`
	MemoryUnitCount  int               `json:"memory_unit_count"`
	ChunkCount       int               `json:"chunk_count"`
	RetainParams     map[string]any    `json:"retain_params"`
	DocumentMetadata map[string]string `json:"document_metadata"`
	Context          string            `json:"context"`
	Tags             []string          `json:"tags"`
	MatchedFields    []string          `json:"matched_fields"`
}

func viewDocument(d store.Document, q string) documentItem {
	v := documentItem{ID: d.ID, BankID: d.BankID, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt, TextLength: d.TextLength,
		MemoryUnitCount: d.Memories, ChunkCount: d.Chunks, DocumentMetadata: d.Metadata, Context: d.Context, Tags: nonNil(d.Tags),
		MatchedFields: []string{}}
	if q != "" {
		v.MatchedFields = append(v.MatchedFields, "id")
	}
	return v
}

func (s *Server) documentID(r *http.Request) (string, string, error) {
	bank, err := s.bankID(r)
	if err != nil {
		return "", "", err
	}
	doc := r.PathValue("document_id")
	if doc == "" || len(doc) > event.MaxIDBytes {
		return "", "", badRequest("document_id", fmt.Sprintf("document_id must be 1 to %d bytes", event.MaxIDBytes))
	}
	return bank, doc, nil
}

func (s *Server) listDocuments(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	limit, offset, err := page(r)
	if err != nil {
		return err
	}
	q, err := textParam(r, "q")
	if err != nil {
		return err
	}
	mode, err := enumParam(r, "tags_match", "any", "all", "any_strict", "all_strict", "exact")
	if err != nil {
		return err
	}
	items, total, err := s.d.Store.ListDocuments(r.Context(), bank, q, queryList(r, "tags"), mode, limit, offset)
	if err != nil {
		return err
	}
	views := make([]documentItem, len(items))
	for i, d := range items {
		views[i] = viewDocument(d, q)
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": views, "total": total, "limit": limit, "offset": offset, "total_is_estimate": false})
	return nil
}

// getDocument is Hindsight's DocumentResponse; the original text is the
// document's chunks in order (after defense: what memstream stores).
func (s *Server) getDocument(w http.ResponseWriter, r *http.Request) error {
	bank, doc, err := s.documentID(r)
	if err != nil {
		return err
	}
	d, err := s.d.Store.GetDocument(r.Context(), bank, doc)
	if err != nil {
		return err
	}
	files, err := s.d.Store.DocumentFiles(r.Context(), bank, doc)
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(d.Text))
	hash := hex.EncodeToString(sum[:])
	v := map[string]any{"id": d.ID, "bank_id": d.BankID, "original_text": d.Text, "content_hash": hash, "created_at": d.CreatedAt,
		"updated_at": d.UpdatedAt, "memory_unit_count": d.Memories, "nodes_by_fact_type": d.NodesByFactType, "tags": nonNil(d.Tags),
		"document_metadata": d.Metadata, "retain_params": map[string]any{"context": d.Context}, "observation_scopes": nil,
		"chunk_count": d.Chunks, "context": d.Context}
	if len(files) > 0 {
		att := make([]any, len(files))
		for i, f := range files {
			att[i] = attachmentView(bank, f)
		}
		v["attachments"] = att
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

type updateDocumentBody struct {
	Tags              *tagList        `json:"tags"`
	ObservationScopes json.RawMessage `json:"observation_scopes"`
}

// updateDocument sets a document's tags, and its facts' (Hindsight's
// retag). observation_scopes is accepted and ignored: memstream keeps
// observations by the facts' own tags.
func (s *Server) updateDocument(w http.ResponseWriter, r *http.Request) error {
	bank, doc, err := s.documentID(r)
	if err != nil {
		return err
	}
	var body updateDocumentBody
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if body.Tags == nil && len(body.ObservationScopes) == 0 {
		return &apiError{Status: http.StatusUnprocessableEntity, Code: "bad_request", Message: "At least one field (tags, observation_scopes) must be provided"}
	}
	if body.Tags != nil {
		if err := validateTags("tags", *body.Tags); err != nil {
			return err
		}
		if err := s.d.Store.SetDocumentTags(r.Context(), bank, doc, nonNil([]string(*body.Tags))); err != nil {
			return err
		}
	} else if _, err := s.d.Store.GetDocument(r.Context(), bank, doc); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true})
	return nil
}

// deleteDocument removes a document and everything derived from it, and
// answers with Hindsight's DeleteDocumentResponse plus memstream's counts.
func (s *Server) deleteDocument(w http.ResponseWriter, r *http.Request) error {
	bank, doc, err := s.documentID(r)
	if err != nil {
		return err
	}
	res, err := s.d.Store.DeleteDocument(r.Context(), bank, doc)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": fmt.Sprintf("Document '%s' and %d memory units deleted", doc, res.MemoryUnits),
		"document_id": doc, "memory_units_deleted": res.MemoryUnits, "bank_id": bank, "deleted": res})
	return nil
}

func (s *Server) listDocumentChunks(w http.ResponseWriter, r *http.Request) error {
	bank, doc, err := s.documentID(r)
	if err != nil {
		return err
	}
	limit, offset, err := page(r)
	if err != nil {
		return err
	}
	if _, err := s.d.Store.GetDocument(r.Context(), bank, doc); err != nil {
		return err
	}
	items, total, err := s.d.Store.ListChunks(r.Context(), bank, doc, limit, offset)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list[store.Chunk]{Items: items, Total: total, Limit: limit, Offset: offset})
	return nil
}

// getChunk serves GET /v1/default/chunks/{id}. The path names no bank, so
// the chunk's own bank is checked against the key; a chunk of a bank the
// key may not read is not found, as if it did not exist.
func (s *Server) getChunk(w http.ResponseWriter, r *http.Request) error {
	id, err := pathUUID(r, "chunk_id")
	if err != nil {
		return err
	}
	c, err := s.d.Store.GetChunk(r.Context(), id)
	if err != nil {
		return err
	}
	if !keyMayRead(r, c.BankID) {
		return notFound("Chunk not found")
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}

// keyMayRead reports whether the caller's key may read bank (always, when
// auth is off).
func keyMayRead(r *http.Request, bank string) bool {
	k := callerKey(r)
	return k == nil || k.all || k.banks[bank]
}

func (s *Server) documentHistory(w http.ResponseWriter, r *http.Request) error {
	bank, doc, err := s.documentID(r)
	if err != nil {
		return err
	}
	limit, offset, err := page(r)
	if err != nil {
		return err
	}
	evs, err := s.d.Store.DocumentHistory(r.Context(), bank, doc)
	if err != nil {
		return err
	}
	empty := map[string]any{"count": 0, "ids": []string{}}
	items := []any{}
	for _, e := range pageOf(evs, limit, offset) {
		it := map[string]any{"document_id": doc, "kind": e.Kind, "created_at": e.At, "operation_id": nil, "fact_id": e.FactID,
			"facts_added": e.FactsAdded, "facts_removed": 0, "observations_created": empty, "observations_updated": empty,
			"observations_removed": empty}
		if strings.HasPrefix(e.EventKey, "retain/") {
			if op, _, ok := strings.Cut(strings.TrimPrefix(e.EventKey, "retain/"), "/"); ok {
				it["operation_id"] = op
			}
		}
		items = append(items, it)
	}
	writeJSON(w, http.StatusOK, map[string]any{"document_id": doc, "total": len(evs), "limit": limit, "offset": offset, "items": items})
	return nil
}

// reprocessDocument extracts a document again: its stored chunks (the
// text after defense) are retained anew as one event, after the facts
// derived from it before are deleted. It returns the retain's operation.
func (s *Server) reprocessDocument(w http.ResponseWriter, r *http.Request) error {
	bank, doc, err := s.documentID(r)
	if err != nil {
		return err
	}
	d, err := s.d.Store.GetDocument(r.Context(), bank, doc)
	if err != nil {
		return err
	}
	if strings.TrimSpace(d.Text) == "" {
		return &apiError{Status: http.StatusConflict, Code: "conflict", Message: "the document has no stored text to reprocess"}
	}
	text, tags, meta := d.Text, d.Tags, d.Metadata
	if _, err := s.d.Store.DeleteDocument(r.Context(), bank, doc); err != nil {
		return err
	}
	body := RetainRequest{Async: true, Items: []retainItem{{Content: contentValue{Text: text}, DocumentID: doc, Tags: tags, Metadata: meta,
		Context: d.Context, EventID: "reprocess/" + uuid.NewString()}}}
	_, out, _, err := s.Retain(context.WithoutCancel(r.Context()), bank, body, "")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "operation_id": out.OperationID, "items_count": out.ItemsCount})
	return nil
}
