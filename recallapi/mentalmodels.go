package recallapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/memstream/memstream/store"
)

const (
	defaultModelMaxTokens = 2048
	maxModelName          = 200
	maxModelQuery         = 8000
	maxModelContent       = 1 << 20
	maxTags               = 100
	maxTagLen             = 200
)

// mentalModelCreate is Hindsight's CreateMentalModelRequest plus
// memstream's initial content.
type mentalModelCreate struct {
	ID          *string         `json:"id"`
	Name        string          `json:"name"`
	SourceQuery string          `json:"source_query"`
	Content     string          `json:"content"`
	Tags        []string        `json:"tags"`
	MaxTokens   *int            `json:"max_tokens"`
	Trigger     json.RawMessage `json:"trigger"`
}

type mentalModelPatch struct {
	Name        *string         `json:"name"`
	SourceQuery *string         `json:"source_query"`
	Content     *string         `json:"content"`
	Tags        *[]string       `json:"tags"`
	MaxTokens   *int            `json:"max_tokens"`
	Trigger     json.RawMessage `json:"trigger"`
}

// mentalModelView is Hindsight's MentalModelResponse with memstream's
// based_on and updated_at.
type mentalModelView struct {
	ID              string          `json:"id"`
	BankID          string          `json:"bank_id"`
	Name            string          `json:"name"`
	SourceQuery     string          `json:"source_query"`
	Content         string          `json:"content"`
	Tags            []string        `json:"tags"`
	MaxTokens       int             `json:"max_tokens"`
	Trigger         map[string]any  `json:"trigger"`
	LastRefreshedAt *time.Time      `json:"last_refreshed_at"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
	IsKnowledgePage bool            `json:"is_knowledge_page"`
	IsStale         bool            `json:"is_stale"`
	BasedOn         json.RawMessage `json:"based_on"`
}

func viewModel(m store.MentalModel) mentalModelView {
	return mentalModelView{ID: m.ID.String(), BankID: m.BankID, Name: m.Name, SourceQuery: m.SourceQuery, Content: m.Content,
		Tags: nonNil(m.Tags), MaxTokens: m.MaxTokens, Trigger: map[string]any{"mode": "full", "refresh_after_consolidation": true},
		LastRefreshedAt: m.LastRefreshedAt, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt, BasedOn: m.BasedOn}
}

// modelDetail reads Hindsight's `detail` query parameter of the mental
// model routes: metadata (no query, content, configuration or what it
// rests on), content (no based_on), or full (everything). Absent, it is
// def: Hindsight lists metadata and gets one model in full.
func modelDetail(r *http.Request, def string) (string, error) {
	d, err := enumParam(r, "detail", "metadata", "content", "full")
	if d == "" {
		d = def
	}
	return d, err
}

// detailView is a model's view cut to a detail level.
func detailView(m store.MentalModel, detail string) any {
	v := viewModel(m)
	if detail == "full" {
		return v
	}
	b, _ := json.Marshal(v)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	delete(out, "based_on")
	if detail == "metadata" {
		for _, k := range []string{"source_query", "content", "max_tokens", "trigger"} {
			delete(out, k)
		}
	}
	return out
}

func validateTags(field string, tags []string) error {
	if len(tags) > maxTags {
		return badRequest(field, fmt.Sprintf("%s has more than %d tags", field, maxTags))
	}
	for i, t := range tags {
		if t == "" || len(t) > maxTagLen {
			f := fmt.Sprintf("%s[%d]", field, i)
			return badRequest(f, f+" must be 1 to 200 bytes")
		}
	}
	return nil
}

func validateModelFields(name, query, content *string, tags *[]string, maxTokens *int) error {
	if name != nil {
		if n := strings.TrimSpace(*name); n == "" || len(n) > maxModelName {
			return badRequest("name", "name is required and at most 200 bytes")
		}
	}
	if query != nil {
		if q := strings.TrimSpace(*query); q == "" || len(q) > maxModelQuery {
			return badRequest("source_query", "source_query is required and at most 8000 bytes")
		}
	}
	if content != nil && len(*content) > maxModelContent {
		return badRequest("content", "content must be at most 1 MiB")
	}
	if tags != nil {
		if err := validateTags("tags", *tags); err != nil {
			return err
		}
	}
	if maxTokens != nil && (*maxTokens < 1 || *maxTokens > 1_000_000) {
		return badRequest("max_tokens", "max_tokens must be between 1 and 1000000")
	}
	return nil
}

func (s *Server) listMentalModels(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	limit, offset, err := page(r)
	if err != nil {
		return err
	}
	mode, err := enumParam(r, "tags_match", "any", "all", "any_strict", "all_strict", "exact")
	if err != nil {
		return err
	}
	items, err := s.d.Store.ListMentalModels(r.Context(), bank)
	if err != nil {
		return err
	}
	if tags := queryList(r, "tags"); len(tags) > 0 {
		if mode == "" {
			mode = "any"
		}
		items = slices.DeleteFunc(items, func(m store.MentalModel) bool { return !tagsMatch(m.Tags, tags, mode) })
	}
	// As Hindsight's: a list carries no content unless asked, so one call
	// does not pull a bank's synthesized knowledge in bulk.
	detail, err := modelDetail(r, "metadata")
	if err != nil {
		return err
	}
	views := make([]any, 0, len(items))
	for _, m := range pageOf(items, limit, offset) {
		views = append(views, detailView(m, detail))
	}
	writeJSON(w, http.StatusOK, list[any]{Items: views, Total: len(items), Limit: limit, Offset: offset})
	return nil
}

// createMentalModel stores the model and, as Hindsight does, returns an
// operation that generates its first content.
func (s *Server) createMentalModel(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body mentalModelCreate
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	out, op, err := s.CreateMentalModel(r.Context(), bank, body)
	if err != nil {
		return err
	}
	// Hindsight's CreateMentalModelResponse, with the model itself beside it.
	writeJSON(w, http.StatusOK, struct {
		mentalModelView
		MentalModelID string `json:"mental_model_id"`
		OperationID   string `json:"operation_id"`
	}{viewModel(out), out.ID.String(), op})
	return nil
}

// CreateMentalModel stores a mental model and queues the operation that
// generates its content (none when content is given); it returns the
// model and the operation id. It is the route without its HTTP framing.
func (s *Server) CreateMentalModel(ctx context.Context, bank string, body mentalModelCreate) (store.MentalModel, string, error) {
	if err := validateModelFields(&body.Name, &body.SourceQuery, &body.Content, &body.Tags, body.MaxTokens); err != nil {
		return store.MentalModel{}, "", err
	}
	m := store.MentalModel{BankID: bank, Name: strings.TrimSpace(body.Name), SourceQuery: strings.TrimSpace(body.SourceQuery),
		Content: body.Content, Tags: body.Tags, MaxTokens: defaultModelMaxTokens}
	if body.ID != nil && *body.ID != "" {
		id, err := uuid.Parse(*body.ID)
		if err != nil {
			return m, "", badRequest("id", "id must be a UUID")
		}
		m.ID = id
	}
	if body.MaxTokens != nil {
		m.MaxTokens = *body.MaxTokens
	}
	if err := s.d.Store.EnsureBank(ctx, bank); err != nil {
		return m, "", err
	}
	out, err := s.d.Store.CreateMentalModel(ctx, m)
	if err != nil {
		return out, "", err
	}
	// Content given at creation is kept: the operation is done already.
	op := store.Operation{BankID: bank, Kind: "refresh_mental_model", MentalModelID: &out.ID, ItemsCount: 1}
	if out.Content != "" {
		op.Status = "completed"
	}
	created, err := s.newOperation(ctx, op)
	if err != nil {
		return out, "", err
	}
	return out, created.ID.String(), nil
}

// getMentalModel is served from the LRU cache; see modelCache for why a
// cached copy is never older than the last committed write.
func (s *Server) getMentalModel(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "mental_model_id")
	if err != nil {
		return err
	}
	detail, err := modelDetail(r, "full")
	if err != nil {
		return err
	}
	m, ok, gen := s.models.get(bank, id.String())
	if !ok {
		if m, err = s.d.Store.GetMentalModel(r.Context(), bank, id); err != nil {
			return err
		}
		s.models.put(m, gen)
	}
	writeJSON(w, http.StatusOK, detailView(m, detail))
	return nil
}

func (s *Server) patchMentalModel(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "mental_model_id")
	if err != nil {
		return err
	}
	var body mentalModelPatch
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if body.Name == nil && body.SourceQuery == nil && body.Content == nil && body.Tags == nil && body.MaxTokens == nil && len(body.Trigger) == 0 {
		return badRequest("", "the body changes nothing: give at least one of name, source_query, content, tags, max_tokens")
	}
	if err := validateModelFields(body.Name, body.SourceQuery, body.Content, body.Tags, body.MaxTokens); err != nil {
		return err
	}
	p := store.MentalModelPatch{Content: body.Content, Tags: body.Tags, MaxTokens: body.MaxTokens}
	if body.Name != nil {
		n := strings.TrimSpace(*body.Name)
		p.Name = &n
	}
	if body.SourceQuery != nil {
		q := strings.TrimSpace(*body.SourceQuery)
		p.SourceQuery = &q
	}
	out, err := s.d.Store.UpdateMentalModel(r.Context(), bank, id, p)
	if err != nil {
		return err
	}
	// The NOTIFY reaches this replica too, but only after a round trip;
	// evicting here gives the writer read-your-writes at once.
	s.models.invalidate(bank, id.String(), "local")
	writeJSON(w, http.StatusOK, viewModel(out))
	return nil
}

func (s *Server) deleteMentalModel(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "mental_model_id")
	if err != nil {
		return err
	}
	if err := s.d.Store.DeleteMentalModel(r.Context(), bank, id); err != nil {
		return err
	}
	s.models.invalidate(bank, id.String(), "local")
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "id": id, "message": "mental model deleted", "deleted_count": 1})
	return nil
}

// refreshMentalModel queues an operation that regenerates the model from
// its source query (Hindsight's async refresh).
func (s *Server) refreshMentalModel(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "mental_model_id")
	if err != nil {
		return err
	}
	if s.d.Refresher == nil {
		return &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable",
			Message: "mental model refresh is not available on this server (no refresher is configured)"}
	}
	if r.ContentLength > 0 {
		var body struct {
			Mode *string `json:"mode"`
		}
		if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
			return err
		}
		if body.Mode != nil && *body.Mode != "full" {
			return badRequest("mode", "mode must be full")
		}
	}
	if _, err := s.d.Store.GetMentalModel(r.Context(), bank, id); err != nil {
		return err
	}
	op, err := s.newOperation(r.Context(), store.Operation{BankID: bank, Kind: "refresh_mental_model", MentalModelID: &id, ItemsCount: 1})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"operation_id": op.ID.String(), "status": op.Status})
	return nil
}

// runRefresh is the runner of refresh_mental_model operations: refresh,
// then evict and announce even after a failure, since the refresher may
// have written part of its work.
func (s *Server) runRefresh(ctx context.Context, o store.Operation) (json.RawMessage, error) {
	if s.d.Refresher == nil || o.MentalModelID == nil {
		return nil, errors.New("no refresher is configured")
	}
	id := *o.MentalModelID
	refreshErr := s.d.Refresher.Refresh(ctx, o.BankID, id.String())
	s.models.invalidate(o.BankID, id.String(), "local")
	if err := s.d.Store.NotifyMentalModel(context.WithoutCancel(ctx), o.BankID, id); err != nil && refreshErr == nil {
		refreshErr = err
	}
	outcome := "content_written"
	if refreshErr != nil {
		outcome = "refresh_failed_error"
	}
	return rawJSON(map[string]any{"mental_model_id": id, "operation_type": "refresh_mental_model", "outcome": outcome}), refreshErr
}

// dryRunRefresh shows what a refresh would write, writing nothing.
func (s *Server) dryRunRefresh(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "mental_model_id")
	if err != nil {
		return err
	}
	if s.d.Refresher == nil {
		return &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "no refresher is configured"}
	}
	m, err := s.d.Store.GetMentalModel(r.Context(), bank, id)
	if err != nil {
		return err
	}
	start := time.Now()
	content, used, err := s.d.Refresher.DryRefresh(r.Context(), bank, id.String())
	if err != nil {
		return err
	}
	outcome := "content_written"
	if content == m.Content {
		outcome = "content_unchanged"
	}
	basedOn := []any{}
	for _, o := range used {
		basedOn = append(basedOn, map[string]any{"id": o, "type": "observation"})
	}
	now := time.Now().UTC()
	writeJSON(w, http.StatusOK, map[string]any{
		"mental_model_id": id.String(), "name": m.Name, "requested_mode": "full", "effective_mode": "full", "mode_fallback_reason": nil,
		"outcome": outcome, "would_persist": content != m.Content,
		"scope":    map[string]any{"tags": nonNil(m.Tags), "tags_match": "any", "tag_groups": nil, "fact_types": []string{"observation"}, "exclude_mental_models": true, "exclude_mental_model_ids": []string{}},
		"window":   map[string]any{"created_after": nil, "created_before": now, "watermark": nil},
		"facts":    map[string]any{"retrieved": map[string]int{"observation": len(used)}, "used": map[string]int{"observation": len(used)}},
		"based_on": map[string]any{"observations": basedOn}, "current_content": m.Content, "candidate_content": content,
		"preview_content": content, "diff": lineDiff(m.Content, content), "delta_operations": nil, "retraction": nil,
		"trace": map[string]any{"recorded_at": now, "effective_mode": "full", "outcome": outcome, "tool_calls": []any{}, "llm_calls": []any{},
			"duration_ms": time.Since(start).Milliseconds(), "warnings": []string{}},
		"usage": tokenUsage{}, "duration_ms": time.Since(start).Milliseconds(), "warnings": []string{},
	})
	return nil
}

// lineDiff is a minimal unified-style diff of two texts, line by line.
func lineDiff(a, b string) string {
	if a == b {
		return ""
	}
	var sb strings.Builder
	for _, l := range strings.Split(a, "\n") {
		if a != "" {
			sb.WriteString("-" + l + "\n")
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if b != "" {
			sb.WriteString("+" + l + "\n")
		}
	}
	return sb.String()
}

// clearMentalModel empties a model's content, keeping its definition.
func (s *Server) clearMentalModel(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "mental_model_id")
	if err != nil {
		return err
	}
	empty := ""
	out, err := s.d.Store.UpdateMentalModel(r.Context(), bank, id, store.MentalModelPatch{Content: &empty})
	if err != nil {
		return err
	}
	s.models.invalidate(bank, id.String(), "local")
	writeJSON(w, http.StatusOK, viewModel(out))
	return nil
}

func (s *Server) mentalModelHistory(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "mental_model_id")
	if err != nil {
		return err
	}
	h, err := s.d.Store.MentalModelHistory(r.Context(), bank, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, h)
	return nil
}
