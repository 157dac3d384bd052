package recallapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/extract"
	"github.com/memstream/memstream/store"
)

// memoryItem is Hindsight's MemoryUnitListItem with memstream's fields
// beside it. Hindsight's entities is a comma-separated string of names;
// memstream's entity list (ids and names) is entity_refs.
type memoryItem struct {
	ID                 string             `json:"id"`
	Text               string             `json:"text"`
	Context            string             `json:"context"`
	Date               string             `json:"date"`
	FactType           string             `json:"fact_type"`
	Type               string             `json:"type"`
	DocumentID         *string            `json:"document_id"`
	MentionedAt        time.Time          `json:"mentioned_at"`
	OccurredStart      *time.Time         `json:"occurred_start"`
	OccurredEnd        *time.Time         `json:"occurred_end"`
	Entities           string             `json:"entities"`
	EntityRefs         []store.EntityName `json:"entity_refs"`
	ChunkID            *string            `json:"chunk_id"`
	ProofCount         int                `json:"proof_count"`
	Tags               []string           `json:"tags"`
	Metadata           map[string]string  `json:"metadata"`
	ConsolidatedAt     *time.Time         `json:"consolidated_at"`
	State              string             `json:"state"`
	InvalidationReason *string            `json:"invalidation_reason"`
	UpdatedAt          time.Time          `json:"updated_at"`
	CreatedAt          time.Time          `json:"created_at"`
	SourceMemoryIDs    []string           `json:"source_memory_ids"`
	SourceEventID      string             `json:"source_event_id"`
	Trend              string             `json:"trend,omitempty"`
	BankID             string             `json:"bank_id"`
}

func viewMemory(m store.Memory) memoryItem {
	names := make([]string, len(m.Entities))
	for i, e := range m.Entities {
		names[i] = e.Name
	}
	v := memoryItem{ID: m.ID.String(), Text: m.Text, Context: m.Context, Date: m.MentionedAt.UTC().Format(time.RFC3339), FactType: m.Type,
		Type: m.Type, MentionedAt: m.MentionedAt, OccurredStart: m.OccurredStart, OccurredEnd: m.OccurredEnd,
		Entities: strings.Join(names, ", "), EntityRefs: nonNil(m.Entities), ProofCount: m.ProofCount, Tags: nonNil(m.Tags),
		Metadata: m.Metadata, State: m.State, UpdatedAt: m.UpdatedAt, CreatedAt: m.CreatedAt, SourceMemoryIDs: []string{},
		SourceEventID: m.SourceEventID, Trend: m.Trend, BankID: m.BankID}
	if m.OccurredStart != nil {
		v.Date = m.OccurredStart.UTC().Format(time.RFC3339)
	}
	if m.DocumentID != "" {
		v.DocumentID = &m.DocumentID
	}
	if m.ChunkID != nil {
		c := m.ChunkID.String()
		v.ChunkID = &c
	}
	if m.InvalidReason != "" {
		v.InvalidationReason = &m.InvalidReason
	}
	return v
}

// listMemories serves GET …/memories/list with Hindsight's filters.
func (s *Server) listMemories(w http.ResponseWriter, r *http.Request) error {
	return s.listUnits(w, r, true)
}

// listObservations serves GET …/observations: the memories list fixed to
// observations, whose items carry proof_count and trend.
func (s *Server) listObservations(w http.ResponseWriter, r *http.Request) error {
	return s.listUnits(w, r, false)
}

// memoryFilter reads the filters of the memory list and graph routes.
func memoryFilter(r *http.Request, anyType bool) (store.MemoryFilter, error) {
	f := store.MemoryFilter{Type: "observation"}
	var err error
	if anyType {
		if f.Type, err = enumParam(r, "type", "world", "experience", "observation"); err != nil {
			return f, err
		}
	}
	if f.Q, err = textParam(r, "q"); err != nil {
		return f, err
	}
	if f.State, err = enumParam(r, "state", "valid", "invalidated", "all"); err != nil {
		return f, err
	}
	if f.DocumentID, err = textParam(r, "document_id"); err != nil {
		return f, err
	}
	if v := r.URL.Query().Get("entity_id"); v != "" {
		id, err := uuid.Parse(v)
		if err != nil {
			return f, badRequest("entity_id", "entity_id must be a UUID")
		}
		f.Entity = &id
	}
	if f.TagsMatch, err = enumParam(r, "tags_match", "any", "all", "any_strict", "all_strict", "exact"); err != nil {
		return f, err
	}
	// Hindsight's clients send tags repeated (tags=a&tags=b); the
	// console's one comma-separated value is read by consoleFilters.
	if tags := queryList(r, "tags"); len(tags) > 1 || f.TagsMatch != "" {
		f.Tags = tags
		if err := validateTags("tags", f.Tags); err != nil {
			return f, err
		}
	}
	if f.TimeField, err = enumParam(r, "time_field", "created_at", "updated_at", "mentioned_at", "occurred_start", "occurred_end"); err != nil {
		return f, err
	}
	for _, p := range []struct {
		name string
		dst  **time.Time
	}{{"start_date", &f.Start}, {"end_date", &f.End}} {
		if *p.dst, err = isoField(p.name, r.URL.Query().Get(p.name)); err != nil {
			return f, err
		}
	}
	if (f.Start != nil || f.End != nil) && f.TimeField == "" {
		f.TimeField = "mentioned_at"
	}
	cs, err := enumParam(r, "consolidation_state", "pending", "done", "failed")
	if err != nil {
		return f, err
	}
	// memstream's worker retries a failed batch until it succeeds, so no
	// fact is left "failed"; the filter selects none.
	f.Consolidation = cs
	return f, nil
}

func (s *Server) listUnits(w http.ResponseWriter, r *http.Request, anyType bool) error {
	id, err := s.bankID(r)
	if err != nil {
		return err
	}
	f, err := memoryFilter(r, anyType)
	if err != nil {
		return err
	}
	if err := consoleFilters(r, &f); err != nil {
		return err
	}
	if f.Limit, f.Offset, err = page(r); err != nil {
		return err
	}
	items := []memoryItem{}
	total := 0
	if f.Consolidation != "failed" {
		mems, n, err := s.d.Store.ListMemories(r.Context(), id, f)
		if err != nil {
			return err
		}
		total = n
		for _, m := range mems {
			items = append(items, viewMemory(m))
		}
		if err := s.addSources(r.Context(), id, items); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, list[memoryItem]{Items: items, Total: total, Limit: f.Limit, Offset: f.Offset})
	return nil
}

// addSources fills source_memory_ids of the observations in a page.
func (s *Server) addSources(ctx context.Context, bank string, items []memoryItem) error {
	var obs []uuid.UUID
	for _, it := range items {
		if it.FactType == "observation" {
			obs = append(obs, uuid.MustParse(it.ID))
		}
	}
	if len(obs) == 0 {
		return nil
	}
	src, err := s.d.Store.ObservationSources(ctx, bank, obs)
	if err != nil {
		return err
	}
	for i := range items {
		for _, m := range src[uuid.MustParse(items[i].ID)] {
			items[i].SourceMemoryIDs = append(items[i].SourceMemoryIDs, m.String())
		}
	}
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
	writeJSON(w, http.StatusOK, memoryDetail(m))
	return nil
}

// memoryDetail is one memory as GET …/memories/{id} shows it: memstream's
// shape (entities as {id, name}), with Hindsight's fact_type and
// invalidation_reason beside it.
func memoryDetail(m store.Memory) map[string]any {
	v := map[string]any{"id": m.ID, "bank_id": m.BankID, "type": m.Type, "fact_type": m.Type, "text": m.Text, "context": m.Context,
		"occurred_start": m.OccurredStart, "occurred_end": m.OccurredEnd, "mentioned_at": m.MentionedAt, "tags": nonNil(m.Tags),
		"metadata": m.Metadata, "document_id": m.DocumentID, "chunk_id": m.ChunkID, "source_event_id": m.SourceEventID,
		"proof_count": m.ProofCount, "state": m.State, "entities": nonNil(m.Entities), "created_at": m.CreatedAt, "updated_at": m.UpdatedAt}
	if m.InvalidReason != "" {
		v["invalid_reason"], v["invalidation_reason"] = m.InvalidReason, m.InvalidReason
	}
	if m.Trend != "" {
		v["trend"] = m.Trend
	}
	return v
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

// updateMemoryBody is Hindsight's UpdateMemoryRequest.
type updateMemoryBody struct {
	Text            *string  `json:"text"`
	Context         *string  `json:"context"`
	OccurredStart   *string  `json:"occurred_start"`
	OccurredEnd     *string  `json:"occurred_end"`
	MentionedAt     *string  `json:"mentioned_at"`
	FactType        *string  `json:"fact_type"`
	Entities        []string `json:"entities"`
	ResolveEntities *bool    `json:"resolve_entities"`
	State           *string  `json:"state"`
	Reason          *string  `json:"reason"`
}

// updateMemory edits a memory. A new text is embedded again (after the
// stored quote of the turn it answers, editMemory), so recall finds it by
// its new meaning; a new context is stored and shown but, as at ingest,
// not embedded. Every change is kept in the memory's history. Entities
// are not relinked from the entities field (accepted and ignored:
// memstream's entities come from extraction).
func (s *Server) updateMemory(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "memory_id")
	if err != nil {
		return err
	}
	var body updateMemoryBody
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	e := store.MemoryEdit{Context: body.Context, Reason: deref(body.Reason)}
	if body.Text != nil {
		t := strings.TrimSpace(*body.Text)
		if t == "" || len(t) > 64<<10 {
			return badRequest("text", "text must be 1 byte to 64 KiB")
		}
		if s.d.Embedder == nil {
			return &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "editing a memory's text needs the embedder, which this server lacks"}
		}
		e.Text = &t
	}
	for _, p := range []struct {
		name string
		in   *string
		dst  **time.Time
	}{{"occurred_start", body.OccurredStart, &e.OccurredStart}, {"occurred_end", body.OccurredEnd, &e.OccurredEnd}, {"mentioned_at", body.MentionedAt, &e.MentionedAt}} {
		if p.in != nil {
			if *p.dst, err = isoField(p.name, *p.in); err != nil {
				return err
			}
		}
	}
	if body.FactType != nil {
		if *body.FactType != "world" && *body.FactType != "experience" {
			return badRequest("fact_type", "fact_type must be world or experience (observations are consolidated, not edited into being)")
		}
		e.FactType = body.FactType
	}
	if body.State != nil {
		if *body.State != "valid" && *body.State != "invalidated" {
			return badRequest("state", "state must be valid or invalidated")
		}
		e.State = body.State
		if e.Reason == "" && *body.State == "invalidated" {
			e.Reason = "invalidated through the API"
		}
	}
	m, err := s.editMemory(r.Context(), bank, id, e)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, memoryDetail(m))
	return nil
}

// editMemory applies e; a new text is embedded as the memory's stored
// quote, then the text (extract.EmbeddingTextOf), as ingest embedded it,
// so the edit does not drop the turn the fact answers from its vector.
// The quote is read before embedding and checked again under the row's
// lock; if a rescan redacted it meanwhile, the text is embedded again.
func (s *Server) editMemory(ctx context.Context, bank string, id uuid.UUID, e store.MemoryEdit) (store.Memory, error) {
	if e.Text == nil {
		return s.d.Store.EditMemory(ctx, bank, id, e)
	}
	for attempt := 1; ; attempt++ {
		cur, err := s.d.Store.GetMemory(ctx, bank, id)
		if err != nil {
			return store.Memory{}, err
		}
		vecs, err := s.d.Embedder.EmbedDocuments(ctx, []string{extract.EmbeddingTextOf(cur.ReplyTo, *e.Text)})
		if err != nil || len(vecs) != 1 {
			return store.Memory{}, &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: fmt.Sprintf("could not embed the new text: %v", err)}
		}
		e.Embedding, e.EmbeddedReplyTo = vecs[0], cur.ReplyTo
		m, err := s.d.Store.EditMemory(ctx, bank, id, e)
		if errors.Is(err, store.ErrConflict) && attempt < 3 {
			continue
		}
		return m, err
	}
}

func (s *Server) memoryHistory(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "memory_id")
	if err != nil {
		return err
	}
	h, err := s.d.Store.MemoryHistory(r.Context(), bank, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, h)
	return nil
}

func (s *Server) clearBankMemories(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	typ, err := enumParam(r, "type", "world", "experience", "observation")
	if err != nil {
		return err
	}
	n, err := s.d.Store.ClearMemories(r.Context(), bank, typ)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": fmt.Sprintf("deleted %d memories", n), "deleted_count": n})
	return nil
}

func (s *Server) clearObservations(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	n, err := s.d.Store.ClearObservations(r.Context(), bank)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": fmt.Sprintf("deleted %d observations; their facts will be consolidated again on the bank's next consolidation (a retain, or POST .../consolidate)", n), "deleted_count": n})
	return nil
}

func (s *Server) clearMemoryObservations(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "memory_id")
	if err != nil {
		return err
	}
	n, err := s.d.Store.ClearMemoryObservations(r.Context(), bank, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted_count": n})
	return nil
}

func (s *Server) observationScopes(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	limit, offset, err := page(r)
	if err != nil {
		return err
	}
	scopes, total, err := s.d.Store.ObservationScopes(r.Context(), bank, limit, offset)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"scopes": scopes, "total": total, "limit": limit, "offset": offset})
	return nil
}

func (s *Server) listTags(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	q, err := textParam(r, "q")
	if err != nil {
		return err
	}
	limit, offset, err := page(r)
	if err != nil {
		return err
	}
	// Hindsight's q is a wildcard pattern (user:*); a plain word matches
	// anywhere in the tag.
	pattern := ""
	if q != "" {
		esc := strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(q)
		if strings.Contains(esc, "*") {
			pattern = strings.ReplaceAll(esc, "*", "%")
		} else {
			pattern = "%" + esc + "%"
		}
	}
	tags, total, err := s.d.Store.ListTags(r.Context(), bank, pattern, limit, offset)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": tags, "total": total, "limit": limit, "offset": offset})
	return nil
}

// memoryGraph is Hindsight's GraphDataResponse: memories as Cytoscape
// nodes, their links as edges, and the same memories as table rows.
func (s *Server) memoryGraph(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	f, err := memoryFilter(r, true)
	if err != nil {
		return err
	}
	if f.Limit, err = intParam(r, "limit", 1000, 1, 10000); err != nil {
		return err
	}
	if cid := r.URL.Query().Get("chunk_id"); cid != "" {
		if _, err := uuid.Parse(cid); err != nil {
			return badRequest("chunk_id", "chunk_id must be a UUID")
		}
	}
	mems, total, err := s.d.Store.ListMemories(r.Context(), bank, f)
	if err != nil {
		return err
	}
	if cid := r.URL.Query().Get("chunk_id"); cid != "" {
		mems = slices.DeleteFunc(mems, func(m store.Memory) bool { return m.ChunkID == nil || m.ChunkID.String() != cid })
		total = len(mems)
	}
	ids := make([]uuid.UUID, len(mems))
	nodes, rows := make([]any, len(mems)), make([]any, len(mems))
	colors := map[string]string{"world": "#42a5f5", "experience": "#66bb6a", "observation": "#ffa726"}
	for i, m := range mems {
		ids[i] = m.ID
		v := viewMemory(m)
		label := m.Text
		if r := []rune(label); len(r) > 40 {
			label = string(r[:40]) + "…"
		}
		nodes[i] = map[string]any{"data": map[string]any{"id": v.ID, "label": label, "text": m.Text, "date": v.Date, "context": m.Context,
			"entities": v.Entities, "color": colors[m.Type], "fact_type": m.Type}}
		rows[i] = map[string]any{"id": v.ID, "text": m.Text, "context": m.Context, "occurred_start": m.OccurredStart, "occurred_end": m.OccurredEnd,
			"mentioned_at": m.MentionedAt, "date": v.Date, "entities": v.Entities, "document_id": v.DocumentID, "chunk_id": v.ChunkID,
			"fact_type": m.Type, "tags": v.Tags, "created_at": m.CreatedAt, "proof_count": m.ProofCount}
	}
	links, err := s.d.Store.LinksAmong(r.Context(), bank, ids)
	if err != nil {
		return err
	}
	edges := make([]any, len(links))
	for i, l := range links {
		edges[i] = map[string]any{"data": map[string]any{"id": l.From.String() + "-" + l.To.String() + "-" + l.Type, "source": l.From.String(),
			"target": l.To.String(), "linkType": l.Type, "weight": l.Weight, "entityName": "", "color": nil, "lineStyle": nil}}
	}
	writeJSON(w, http.StatusOK, map[string]any{"nodes": nodes, "edges": edges, "table_rows": rows, "total_units": total, "limit": f.Limit})
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

// consoleFilters reads the list filters beyond Hindsight's: tags (comma
// separated; any of them), entity (a UUID), and from/to (RFC 3339 bounds
// on mentioned_at).
func consoleFilters(r *http.Request, f *store.MemoryFilter) error {
	tags, err := textParam(r, "tags")
	if err != nil {
		return err
	}
	if f.Tags != nil {
		tags = "" // read as Hindsight's repeated tags
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
