package recallapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

// listMemories serves GET …/memories/list?type=&q=&state=&limit=&offset=.
func (s *Server) listMemories(w http.ResponseWriter, r *http.Request) error {
	return s.listUnits(w, r, true)
}

// listObservations serves GET …/observations: the memories list fixed to
// observations, whose items carry proof_count and trend.
func (s *Server) listObservations(w http.ResponseWriter, r *http.Request) error {
	return s.listUnits(w, r, false)
}

func (s *Server) listUnits(w http.ResponseWriter, r *http.Request, anyType bool) error {
	id, err := s.bankID(r)
	if err != nil {
		return err
	}
	f := store.MemoryFilter{Type: "observation"}
	if anyType {
		if f.Type, err = enumParam(r, "type", "world", "experience", "observation"); err != nil {
			return err
		}
	}
	if f.Q, err = textParam(r, "q"); err != nil {
		return err
	}
	if f.State, err = enumParam(r, "state", "valid", "invalidated", "all"); err != nil {
		return err
	}
	if err := consoleFilters(r, &f); err != nil {
		return err
	}
	if f.Limit, f.Offset, err = page(r); err != nil {
		return err
	}
	items, total, err := s.d.Store.ListMemories(r.Context(), id, f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list[store.Memory]{Items: items, Total: total, Limit: f.Limit, Offset: f.Offset})
	return nil
}

func (s *Server) getMemory(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "memory_id")
	if err != nil {
		return err
	}
	m, err := s.d.Store.GetMemory(r.Context(), bank, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}

// invalidateMemory serves DELETE …/memories/{id}: the fact is marked
// invalidated with a reason (query parameter reason) rather than erased,
// so observations that cite it stay explainable. Repeating it is harmless.
func (s *Server) invalidateMemory(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "memory_id")
	if err != nil {
		return err
	}
	reason, err := textParam(r, "reason")
	if err != nil {
		return err
	}
	if reason = strings.TrimSpace(reason); reason == "" {
		reason = "deleted through the API"
	}
	m, err := s.d.Store.InvalidateMemory(r.Context(), bank, id, reason)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "id": m.ID, "state": m.State, "invalid_reason": m.InvalidReason})
	return nil
}

func (s *Server) getObservation(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "observation_id")
	if err != nil {
		return err
	}
	o, err := s.d.Store.GetObservation(r.Context(), bank, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, o)
	return nil
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
	items, total, err := s.d.Store.ListDocuments(r.Context(), bank, limit, offset)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list[store.Document]{Items: items, Total: total, Limit: limit, Offset: offset})
	return nil
}

// deleteDocument removes a document and everything derived from it.
func (s *Server) deleteDocument(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	doc := r.PathValue("document_id")
	if doc == "" || len(doc) > 512 {
		return badRequest("document_id", "document_id must be 1 to 512 bytes")
	}
	res, err := s.d.Store.DeleteDocument(r.Context(), bank, doc)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "bank_id": bank, "document_id": doc, "deleted": res})
	return nil
}

// consoleFilters reads the list filters beyond Hindsight's: tags (comma
// separated; any of them), entity (a UUID), and from/to (RFC 3339 bounds
// on mentioned_at).
func consoleFilters(r *http.Request, f *store.MemoryFilter) error {
	tags, err := textParam(r, "tags")
	if err != nil {
		return err
	}
	for _, t := range strings.Split(tags, ",") {
		if t = strings.TrimSpace(t); t != "" {
			f.Tags = append(f.Tags, t)
		}
	}
	if err := validateTags("tags", f.Tags); err != nil {
		return err
	}
	if v := r.URL.Query().Get("entity"); v != "" {
		id, err := uuid.Parse(v)
		if err != nil {
			return badRequest("entity", "entity must be a UUID")
		}
		f.Entity = &id
	}
	for _, b := range []struct {
		name string
		dst  **time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		if v := r.URL.Query().Get(b.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return badRequest(b.name, b.name+" must be RFC 3339")
			}
			*b.dst = &t
		}
	}
	return nil
}
