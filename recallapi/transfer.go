package recallapi

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/store"
)

// archiveFormat names memstream's bank archive: a ZIP of JSON files. It
// carries what the bank was built from (documents as their stored chunks,
// after defense), its configuration, directives and mental models; an
// import retains the chunks again through Kafka, so facts, entities and
// embeddings are rebuilt by the importing instance.
const archiveFormat = "memstream-bank-archive/1"

type archiveDoc struct {
	ID       string            `json:"id"`
	Context  string            `json:"context"`
	Tags     []string          `json:"tags"`
	Metadata map[string]string `json:"metadata"`
	Chunks   []string          `json:"chunks"`
	// ChunkTimes are the chunks' timestamps (RFC 3339, "" when unknown),
	// so an import dates its facts as the originals were, not on the day
	// of the import. An archive without them imports undated chunks.
	ChunkTimes []string `json:"chunk_times,omitempty"`
}

type archiveManifest struct {
	Format     string    `json:"format"`
	BankID     string    `json:"bank_id"`
	ExportedAt time.Time `json:"exported_at"`
	Documents  int       `json:"documents"`
	Chunks     int       `json:"chunks"`
	Data       bool      `json:"include_data"`
	Config     bool      `json:"include_bank_config"`
}

type archiveBank struct {
	Bank         store.Bank          `json:"bank"`
	Config       map[string]any      `json:"config"`
	Directives   []store.Directive   `json:"directives"`
	MentalModels []store.MentalModel `json:"mental_models"`
}

// transferArgs are the transfer routes' query flags, kept in the
// operation so that the runner (on any replica) reads them back.
type transferArgs struct {
	Target     string `json:"target_bank_id,omitempty"`
	Data       bool   `json:"include_data"`
	Config     bool   `json:"include_bank_config"`
	ArchiveKey string `json:"archive_key,omitempty"`
	DocumentID string `json:"document_id,omitempty"`
	// DocumentIDs limit a document-transfer export to these documents.
	DocumentIDs []string `json:"document_ids,omitempty"`
	// OnConflict set makes an import a document-transfer import: the
	// archive's documents merge into an existing bank (skip, replace or
	// new-id for a document id it already has), and nothing else of the
	// archive is applied.
	OnConflict string `json:"on_conflict,omitempty"`
}

func transferFlags(r *http.Request) (transferArgs, error) {
	var a transferArgs
	var err error
	if a.Data, err = boolParam(r, "include_data", true); err != nil {
		return a, err
	}
	if a.Config, err = boolParam(r, "include_bank_config", true); err != nil {
		return a, err
	}
	if _, err = boolParam(r, "include_history", false); err != nil {
		return a, err
	}
	return a, nil
}

func (s *Server) exportTransfer(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	a, err := transferFlags(r)
	if err != nil {
		return err
	}
	if a.DocumentID, err = textParam(r, "document_id"); err != nil {
		return err
	}
	return s.submitExport(w, r, bank, a)
}

// submitExport queues the export of an existing bank.
func (s *Server) submitExport(w http.ResponseWriter, r *http.Request, bank string, a transferArgs) error {
	if _, err := s.d.Store.GetBank(r.Context(), bank); err != nil {
		return err
	}
	op, err := s.newOperation(r.Context(), store.Operation{BankID: bank, Kind: "export", Request: rawJSON(a)})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"operation_id": op.ID.String(), "status": "pending"})
	return nil
}

func (s *Server) cloneBank(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	a, err := transferFlags(r)
	if err != nil {
		return err
	}
	a.Target = r.URL.Query().Get("target_bank_id")
	if !bankIDPattern.MatchString(a.Target) {
		return badRequest("target_bank_id", "target_bank_id is required and must match "+bankIDPattern.String())
	}
	if err := s.checkTargetFree(r, a.Target); err != nil {
		return err
	}
	if _, err := s.d.Store.GetBank(r.Context(), bank); err != nil {
		return err
	}
	op, err := s.newOperation(r.Context(), store.Operation{BankID: bank, Kind: "clone", Request: rawJSON(a)})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"operation_id": op.ID.String(), "status": "pending"})
	return nil
}

// checkTargetFree refuses a transfer into a bank that exists, or that the
// caller's key may not write.
func (s *Server) checkTargetFree(r *http.Request, target string) error {
	if k := callerKey(r); k != nil && !k.all && !k.banks[target] {
		return &apiError{Status: http.StatusForbidden, Code: "forbidden", Field: "target_bank_id", Message: "this key may not write bank " + target}
	}
	if _, err := s.d.Store.GetBank(r.Context(), target); err == nil {
		return &apiError{Status: http.StatusConflict, Code: "conflict", Field: "target_bank_id", Message: "bank " + target + " already exists"}
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

func (s *Server) importTransfer(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	a, err := transferFlags(r)
	if err != nil {
		return err
	}
	data, man, err := s.readUpload(w, r)
	if err != nil {
		return err
	}
	a.Target = r.URL.Query().Get("target_bank_id")
	if a.Target == "" {
		a.Target = man.BankID
	}
	if !bankIDPattern.MatchString(a.Target) {
		return badRequest("target_bank_id", "target_bank_id must match "+bankIDPattern.String())
	}
	if mode := r.URL.Query().Get("mode"); mode != "" && mode != "restore" {
		return badRequest("mode", "mode must be restore: memstream imports into a new bank")
	}
	if err := s.checkTargetFree(r, a.Target); err != nil {
		return err
	}
	return s.submitImport(w, r, bank, data, a)
}

// submitImport keeps the archive and queues the import operation.
func (s *Server) submitImport(w http.ResponseWriter, r *http.Request, bank string, data []byte, a transferArgs) error {
	id := uuid.New()
	a.ArchiveKey = "arc/import-" + id.String()
	if _, err := s.d.Store.PutFile(r.Context(), store.StoredFile{Key: a.ArchiveKey, BankID: bank, Kind: "archive", MediaType: "application/zip", Data: data}); err != nil {
		return err
	}
	op, err := s.newOperation(r.Context(), store.Operation{ID: id, BankID: bank, Kind: "import", Request: rawJSON(a)})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"operation_id": op.ID.String(), "status": "pending"})
	return nil
}

// readUpload reads the multipart `file` of an import and checks that it
// is a memstream bank archive.
func (s *Server) readUpload(w http.ResponseWriter, r *http.Request) ([]byte, archiveManifest, error) {
	var man archiveManifest
	r.Body = http.MaxBytesReader(w, r.Body, max(s.cfg.MaxBodyBytes, 64<<20))
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		return nil, man, badRequest("file", "the body must be multipart/form-data with the archive as file: "+err.Error())
	}
	defer r.MultipartForm.RemoveAll()
	fhs := r.MultipartForm.File["file"]
	if len(fhs) != 1 {
		return nil, man, badRequest("file", "file must hold one archive")
	}
	f, err := fhs[0].Open()
	if err != nil {
		return nil, man, badRequest("file", err.Error())
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, man, badRequest("file", err.Error())
	}
	if man, _, _, err = readArchive(data); err != nil {
		return nil, man, badRequest("file", "file is not a memstream bank archive: "+err.Error())
	}
	return data, man, nil
}

// exportDocuments is Hindsight's document-transfer export (deprecated in
// Hindsight 1.1.0 for …/transfer/export, and still served there): the
// bank's documents, or those named by document_id, without its
// configuration. Observations are not carried as such: an import
// consolidates the imported facts again.
func (s *Server) exportDocuments(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	a := transferArgs{Data: true, DocumentIDs: queryList(r, "document_id")}
	obs, err := boolParam(r, "include_observations", false)
	if err != nil {
		return err
	}
	if _, err := boolParam(r, "include_knowledge_base", false); err != nil {
		return err
	}
	if obs && len(a.DocumentIDs) > 0 {
		return badRequest("include_observations", "include_observations exports the whole bank: it cannot be combined with document_id")
	}
	return s.submitExport(w, r, bank, a)
}

// importDocuments is Hindsight's document-transfer import: an archive's
// documents merge into this bank, a document id the bank has already
// handled by on_conflict (skip, the default; replace; new-id).
func (s *Server) importDocuments(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	mode, err := enumParam(r, "on_conflict", "skip", "replace", "new-id")
	if err != nil {
		return err
	}
	if mode == "" {
		mode = "skip"
	}
	data, _, err := s.readUpload(w, r)
	if err != nil {
		return err
	}
	if err := s.d.Store.EnsureBank(r.Context(), bank); err != nil {
		return err
	}
	return s.submitImport(w, r, bank, data, transferArgs{Target: bank, Data: true, OnConflict: mode})
}

// buildArchive writes a bank's archive.
func (s *Server) buildArchive(ctx context.Context, bank string, a transferArgs) ([]byte, archiveManifest, error) {
	man := archiveManifest{Format: archiveFormat, BankID: bank, ExportedAt: time.Now().UTC(), Data: a.Data, Config: a.Config}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	put := func(name string, v any) error {
		fw, err := zw.Create(name)
		if err != nil {
			return err
		}
		return json.NewEncoder(fw).Encode(v)
	}
	b, err := s.d.Store.GetBank(ctx, bank)
	if err != nil {
		return nil, man, err
	}
	ab := archiveBank{Bank: b, Config: map[string]any{}, Directives: []store.Directive{}, MentalModels: []store.MentalModel{}}
	if a.Config {
		if ab.Config, err = s.d.Store.BankConfig(ctx, bank); err != nil {
			return nil, man, err
		}
		if ab.Directives, _, err = s.d.Store.ListDirectives(ctx, bank, false, 10000, 0); err != nil {
			return nil, man, err
		}
		if ab.MentalModels, err = s.d.Store.ListMentalModels(ctx, bank); err != nil {
			return nil, man, err
		}
	}
	if err := put("bank.json", ab); err != nil {
		return nil, man, err
	}
	fw, err := zw.Create("documents.jsonl")
	if err != nil {
		return nil, man, err
	}
	enc := json.NewEncoder(fw)
	for offset := 0; a.Data; offset += 1000 {
		docs, _, err := s.d.Store.ListDocuments(ctx, bank, "", nil, "", 1000, offset)
		if err != nil {
			return nil, man, err
		}
		for _, d := range docs {
			if a.DocumentID != "" && d.ID != a.DocumentID || len(a.DocumentIDs) > 0 && !slices.Contains(a.DocumentIDs, d.ID) {
				continue
			}
			chunks, _, err := s.d.Store.ListChunks(ctx, bank, d.ID, 100000, 0)
			if err != nil {
				return nil, man, err
			}
			ad := archiveDoc{ID: d.ID, Context: d.Context, Tags: nonNil(d.Tags), Metadata: d.Metadata}
			for _, c := range chunks {
				ad.Chunks = append(ad.Chunks, c.Text)
				at := ""
				if c.StartedAt != nil {
					at = c.StartedAt.UTC().Format(time.RFC3339Nano)
				}
				ad.ChunkTimes = append(ad.ChunkTimes, at)
			}
			man.Documents++
			man.Chunks += len(ad.Chunks)
			if err := enc.Encode(ad); err != nil {
				return nil, man, err
			}
		}
		if len(docs) < 1000 {
			break
		}
	}
	if err := put("manifest.json", man); err != nil {
		return nil, man, err
	}
	if err := zw.Close(); err != nil {
		return nil, man, err
	}
	return buf.Bytes(), man, nil
}

func readArchive(data []byte) (archiveManifest, archiveBank, []archiveDoc, error) {
	var man archiveManifest
	var ab archiveBank
	var docs []archiveDoc
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return man, ab, nil, err
	}
	seen := map[string]bool{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return man, ab, nil, err
		}
		dec := json.NewDecoder(io.LimitReader(rc, 1<<30))
		switch f.Name {
		case "manifest.json":
			err = dec.Decode(&man)
		case "bank.json":
			err = dec.Decode(&ab)
		case "documents.jsonl":
			for dec.More() {
				var d archiveDoc
				if err = dec.Decode(&d); err != nil {
					break
				}
				docs = append(docs, d)
			}
		}
		rc.Close()
		if err != nil {
			return man, ab, nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		seen[f.Name] = true
	}
	if man.Format != archiveFormat || !seen["bank.json"] {
		return man, ab, nil, fmt.Errorf("no %s manifest", archiveFormat)
	}
	return man, ab, docs, nil
}

// runExport builds the archive and stores it for download.
func (s *Server) runExport(ctx context.Context, o store.Operation) (json.RawMessage, error) {
	var a transferArgs
	_ = json.Unmarshal(o.Request, &a)
	data, man, err := s.buildArchive(ctx, o.BankID, a)
	if err != nil {
		return nil, err
	}
	key := "export-" + o.ID.String()
	if _, err := s.d.Store.PutFile(ctx, store.StoredFile{Key: "arc/" + key, BankID: o.BankID, Kind: "archive",
		Filename: o.BankID + ".zip", MediaType: "application/zip", Data: data}); err != nil {
		return nil, err
	}
	return rawJSON(map[string]any{"download_url": "/v1/default/files/download/" + key, "documents": man.Documents,
		"chunks": man.Chunks, "bytes": len(data)}), nil
}

// runImport restores an archive into its target bank.
func (s *Server) runImport(ctx context.Context, o store.Operation) (json.RawMessage, error) {
	var a transferArgs
	_ = json.Unmarshal(o.Request, &a)
	f, err := s.d.Store.GetFile(ctx, a.ArchiveKey)
	if err != nil {
		return nil, err
	}
	return s.restore(ctx, o, f.Data, a)
}

// runClone is an export and an import back to back, with no archive kept.
func (s *Server) runClone(ctx context.Context, o store.Operation) (json.RawMessage, error) {
	var a transferArgs
	_ = json.Unmarshal(o.Request, &a)
	data, _, err := s.buildArchive(ctx, o.BankID, a)
	if err != nil {
		return nil, err
	}
	return s.restore(ctx, o, data, a)
}

// restore creates the target bank from an archive: profile, configuration,
// directives and mental models, then its documents' chunks retained again
// through Kafka; it returns once they are persisted.
func (s *Server) restore(ctx context.Context, o store.Operation, data []byte, a transferArgs) (json.RawMessage, error) {
	_, ab, docs, err := readArchive(data)
	if err != nil {
		return nil, err
	}
	target := a.Target
	if a.OnConflict != "" {
		return s.mergeDocuments(ctx, o, target, docs, a.OnConflict)
	}
	b := ab.Bank
	b.ID, b.CreatedAt, b.UpdatedAt = target, time.Time{}, time.Time{}
	if b.Name == "" || b.Name == ab.Bank.ID {
		b.Name = target
	}
	if _, err := s.d.Store.PutBank(ctx, b); err != nil {
		return nil, err
	}
	if len(ab.Config) > 0 {
		if _, err := s.setBankConfig(ctx, target, ab.Config); err != nil {
			return nil, err
		}
	}
	// A restore may run again (its server died mid-way and another took
	// the operation back): the copies' ids derive from the operation and
	// the originals, and a copy already made is kept.
	for _, d := range ab.Directives {
		d.ID, d.BankID = store.DeriveID("restore", o.ID.String(), "directive", d.ID.String()), target
		if _, err := s.d.Store.GetDirective(ctx, target, d.ID); err == nil {
			continue
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		if _, err := s.d.Store.CreateDirective(ctx, d); err != nil {
			return nil, err
		}
	}
	for _, m := range ab.MentalModels {
		m.ID, m.BankID = store.DeriveID("restore", o.ID.String(), "mental-model", m.ID.String()), target
		if _, err := s.d.Store.GetMentalModel(ctx, target, m.ID); err == nil {
			continue
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		if _, err := s.d.Store.CreateMentalModel(ctx, m); err != nil {
			return nil, err
		}
	}
	events := docEvents(o, target, docs, nil)
	if err := s.publishAndWait(ctx, target, events); err != nil {
		return nil, err
	}
	return rawJSON(map[string]any{"target_bank_id": target, "documents": len(docs), "chunks": len(events),
		"directives": len(ab.Directives), "mental_models": len(ab.MentalModels)}), nil
}

// mergeDocuments retains an archive's documents into an existing bank,
// deciding by onConflict what becomes of a document id the bank has: skip
// it, replace the stored document, or import it under a new id.
func (s *Server) mergeDocuments(ctx context.Context, o store.Operation, target string, docs []archiveDoc, onConflict string) (json.RawMessage, error) {
	var keep []archiveDoc
	replace := map[string]bool{}
	skipped := 0
	for _, d := range docs {
		if _, err := s.d.Store.GetDocument(ctx, target, d.ID); errors.Is(err, store.ErrNotFound) {
			keep = append(keep, d)
			continue
		} else if err != nil {
			return nil, err
		}
		switch onConflict {
		case "replace":
			replace[d.ID] = true
		case "new-id":
			d.ID = d.ID + "-" + o.ID.String()[:8]
		default:
			skipped++
			continue
		}
		keep = append(keep, d)
	}
	events := docEvents(o, target, keep, replace)
	if err := s.publishAndWait(ctx, target, events); err != nil {
		return nil, err
	}
	return rawJSON(map[string]any{"target_bank_id": target, "imported": len(keep), "skipped": skipped,
		"documents": len(keep), "chunks": len(events)}), nil
}

// docEvents are the events that retain an archive's documents into
// target; a document in replace replaces what the bank stored of it.
func docEvents(o store.Operation, target string, docs []archiveDoc, replace map[string]bool) []event.Event {
	var events []event.Event
	for _, d := range docs {
		for i, c := range d.Chunks {
			ev := event.Event{BankID: target, EventID: fmt.Sprintf("import/%s/%d/%s", o.ID, i, shaPrefix([]byte(d.ID))),
				DocumentID: d.ID, Content: c, Context: d.Context, Tags: d.Tags, Metadata: d.Metadata}
			if i == 0 && replace[d.ID] {
				ev.UpdateMode = "replace"
			}
			if i < len(d.ChunkTimes) {
				if t, err := time.Parse(time.RFC3339Nano, d.ChunkTimes[i]); err == nil {
					ev.Timestamp = t.UTC().Format(time.RFC3339Nano)
				}
			}
			events = append(events, ev)
		}
	}
	return events
}

// publishAndWait retains events through Kafka and returns once they are
// persisted.
func (s *Server) publishAndWait(ctx context.Context, target string, events []event.Event) error {
	keys := make([]string, len(events))
	for i := 0; i < len(events); i += 500 {
		batch := events[i:min(len(events), i+500)]
		if _, err := s.d.Publisher.Publish(ctx, batch); err != nil {
			return fmt.Errorf("import into %s: publish: %w", target, err)
		}
		for j, ev := range batch {
			keys[i+j] = ev.EventID
		}
	}
	deadline := time.Now().Add(10 * time.Minute)
	for len(keys) > 0 {
		n, err := s.d.Store.EventsPersisted(ctx, target, keys)
		if err == nil && n == len(keys) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("import into %s: %d of %d chunks persisted within 10 minutes", target, n, len(keys))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// templateManifest is Hindsight's BankTemplateManifest.
type templateManifest struct {
	Version      string           `json:"version"`
	Bank         map[string]any   `json:"bank"`
	MentalModels []templateModel  `json:"mental_models"`
	Directives   []templateDirect `json:"directives"`
}

type templateModel struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	SourceQuery string          `json:"source_query"`
	Tags        []string        `json:"tags"`
	MaxTokens   *int            `json:"max_tokens"`
	Trigger     json.RawMessage `json:"trigger,omitempty"`
}

type templateDirect struct {
	Name     string   `json:"name"`
	Content  string   `json:"content"`
	Priority int      `json:"priority"`
	IsActive *bool    `json:"is_active"`
	Tags     []string `json:"tags"`
}

func (s *Server) exportTemplate(w http.ResponseWriter, r *http.Request) error {
	b, ov, err := s.bankAndConfig(r)
	if err != nil {
		return err
	}
	bank := b.ID
	cfg := map[string]any{}
	for k, v := range ov {
		if k != "background" {
			cfg[k] = v
		}
	}
	cfg["reflect_mission"], cfg["disposition_skepticism"], cfg["disposition_literalism"], cfg["disposition_empathy"] = b.Mission, b.Skepticism, b.Literalism, b.Empathy
	man := templateManifest{Version: "1", Bank: cfg, MentalModels: []templateModel{}, Directives: []templateDirect{}}
	models, err := s.d.Store.ListMentalModels(r.Context(), bank)
	if err != nil {
		return err
	}
	for _, m := range models {
		mt := m.MaxTokens
		man.MentalModels = append(man.MentalModels, templateModel{ID: m.ID.String(), Name: m.Name, SourceQuery: m.SourceQuery, Tags: nonNil(m.Tags),
			MaxTokens: &mt, Trigger: json.RawMessage(`{"mode":"full","refresh_after_consolidation":true}`)})
	}
	dirs, _, err := s.d.Store.ListDirectives(r.Context(), bank, false, 10000, 0)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		active := d.IsActive
		man.Directives = append(man.Directives, templateDirect{Name: d.Name, Content: d.Content, Priority: d.Priority, IsActive: &active, Tags: nonNil(d.Tags)})
	}
	writeJSON(w, http.StatusOK, man)
	return nil
}

// importTemplate applies a bank template: configuration first, then mental
// models (matched by id, else name) and directives (matched by name); each
// new or changed model gets a refresh operation. dry_run reports the same
// and writes nothing.
func (s *Server) importTemplate(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	dry, err := boolParam(r, "dry_run", false)
	if err != nil {
		return err
	}
	var man templateManifest
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &man); err != nil {
		return err
	}
	if man.Version == "" {
		return badRequest("version", "version is required")
	}
	cfg := map[string]any{}
	for k, v := range man.Bank {
		if v == nil {
			continue
		}
		if err := checkConfigValue(k, v); err != nil {
			var ae *apiError
			if errors.As(err, &ae) {
				ae.Field = "bank." + k
			}
			return err
		}
		cfg[k] = v
	}
	for i, m := range man.MentalModels {
		f := fmt.Sprintf("mental_models[%d]", i)
		if m.Name == "" || m.SourceQuery == "" {
			return badRequest(f, f+": name and source_query are required")
		}
	}
	for i, d := range man.Directives {
		f := fmt.Sprintf("directives[%d]", i)
		if err := checkDirective(&d.Name, &d.Content, nil); err != nil {
			return badRequest(f, f+": name and content are required")
		}
	}
	out := map[string]any{"bank_id": bank, "config_applied": len(cfg) > 0, "mental_models_created": []string{}, "mental_models_updated": []string{},
		"directives_created": []string{}, "directives_updated": []string{}, "operation_ids": []string{}, "dry_run": dry}
	existingModels := map[string]store.MentalModel{}
	existingDirs := map[string]store.Directive{}
	if _, err := s.d.Store.GetBank(r.Context(), bank); err == nil {
		ms, err := s.d.Store.ListMentalModels(r.Context(), bank)
		if err != nil {
			return err
		}
		for _, m := range ms {
			existingModels[m.ID.String()], existingModels["name:"+m.Name] = m, m
		}
		ds, _, err := s.d.Store.ListDirectives(r.Context(), bank, false, 10000, 0)
		if err != nil {
			return err
		}
		for _, d := range ds {
			existingDirs[d.Name] = d
		}
	}
	add := func(key, v string) { out[key] = append(out[key].([]string), v) }
	for _, m := range man.MentalModels {
		if _, ok := existingModels[m.ID]; ok {
			add("mental_models_updated", m.ID)
		} else if _, ok := existingModels["name:"+m.Name]; ok {
			add("mental_models_updated", m.ID)
		} else {
			add("mental_models_created", m.ID)
		}
	}
	for _, d := range man.Directives {
		if _, ok := existingDirs[d.Name]; ok {
			add("directives_updated", d.Name)
		} else {
			add("directives_created", d.Name)
		}
	}
	if dry {
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	if err := s.d.Store.EnsureBank(r.Context(), bank); err != nil {
		return err
	}
	if len(cfg) > 0 {
		b, err := s.d.Store.GetBank(r.Context(), bank)
		if err != nil {
			return err
		}
		if v, ok := cfg["reflect_mission"].(string); ok {
			b.Mission = v
		}
		for k, dst := range map[string]*int{"disposition_skepticism": &b.Skepticism, "disposition_literalism": &b.Literalism, "disposition_empathy": &b.Empathy} {
			if v, ok := cfg[k].(float64); ok {
				*dst = int(v)
			}
		}
		if _, err := s.d.Store.PutBank(r.Context(), b); err != nil {
			return err
		}
		if _, err := s.setBankConfig(r.Context(), bank, cfg); err != nil {
			return err
		}
	}
	for _, m := range man.MentalModels {
		mt := defaultModelMaxTokens
		if m.MaxTokens != nil {
			mt = *m.MaxTokens
		}
		var id uuid.UUID
		if ex, ok := existingModels[m.ID]; ok {
			id = ex.ID
		} else if ex, ok := existingModels["name:"+m.Name]; ok {
			id = ex.ID
		}
		if id != uuid.Nil {
			name, q, tags := m.Name, m.SourceQuery, nonNil(m.Tags)
			if _, err := s.d.Store.UpdateMentalModel(r.Context(), bank, id, store.MentalModelPatch{Name: &name, SourceQuery: &q, Tags: &tags, MaxTokens: &mt}); err != nil {
				return err
			}
			s.models.invalidate(bank, id.String(), "local")
		} else {
			// A fresh id: mental model ids are global, and the template's
			// may be a model of the bank it was exported from.
			nm := store.MentalModel{BankID: bank, Name: m.Name, SourceQuery: m.SourceQuery, Tags: nonNil(m.Tags), MaxTokens: mt}
			created, err := s.d.Store.CreateMentalModel(r.Context(), nm)
			if err != nil {
				return err
			}
			id = created.ID
		}
		op, err := s.newOperation(r.Context(), store.Operation{BankID: bank, Kind: "refresh_mental_model", MentalModelID: &id, ItemsCount: 1})
		if err != nil {
			return err
		}
		add("operation_ids", op.ID.String())
	}
	for _, d := range man.Directives {
		active := d.IsActive == nil || *d.IsActive
		if ex, ok := existingDirs[d.Name]; ok {
			tags := nonNil(d.Tags)
			if _, err := s.d.Store.UpdateDirective(r.Context(), bank, ex.ID, store.DirectivePatch{Content: &d.Content, Priority: &d.Priority, IsActive: &active, Tags: &tags}); err != nil {
				return err
			}
			continue
		}
		if _, err := s.d.Store.CreateDirective(r.Context(), store.Directive{ID: uuid.New(), BankID: bank, Name: d.Name, Content: d.Content,
			Priority: d.Priority, IsActive: active, Tags: d.Tags}); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
