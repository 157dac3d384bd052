package recallapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/reflect"
	"github.com/memstream/memstream/store"
)

// ReflectRequest is Hindsight's reflect body plus memstream's disposition
// override and query_timestamp.
type ReflectRequest struct {
	Query                 string            `json:"query"`
	Budget                string            `json:"budget"`
	Context               string            `json:"context"`
	MaxTokens             *int              `json:"max_tokens"`
	Include               *reflectInclude   `json:"include"`
	ResponseSchema        json.RawMessage   `json:"response_schema"`
	Tags                  tagList           `json:"tags"`
	TagsMatch             string            `json:"tags_match"`
	TagGroups             []tagGroup        `json:"tag_groups"`
	ApplyAllDirectives    bool              `json:"apply_all_directives"`
	FactTypes             []string          `json:"fact_types"`
	ExcludeMentalModels   bool              `json:"exclude_mental_models"`
	ExcludeMentalModelIDs []string          `json:"exclude_mental_model_ids"`
	SearchObsMaxTokens    *int              `json:"reflect_search_observations_max_tokens"`
	SearchObsWithEntities *bool             `json:"reflect_search_observations_include_entities"`
	QueryTimestamp        string            `json:"query_timestamp"`
	Disposition           *dispositionBody  `json:"disposition"`
	include               reflectInclude    // resolved
	directives            []store.Directive // applied
}

type reflectInclude struct {
	Facts     optional[json.RawMessage] `json:"facts"`
	ToolCalls optional[struct {
		Output *bool `json:"output"`
	}] `json:"tool_calls"`
}

// dispositionBody has pointers so that a trait left out takes the bank's
// value instead of an invalid zero.
type dispositionBody struct {
	Skepticism *int `json:"skepticism"`
	Literalism *int `json:"literalism"`
	Empathy    *int `json:"empathy"`
}

func (s *Server) reflectQuery(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body ReflectRequest
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	out, err := s.Reflect(r.Context(), bank, body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ReflectResponse is Hindsight's ReflectResponse; based_on comes only with
// include.facts and trace only with include.tool_calls, as in Hindsight.
type ReflectResponse struct {
	Text                  string        `json:"text"`
	BasedOn               *reflectBased `json:"based_on,omitempty"`
	StructuredOutput      any           `json:"structured_output,omitempty"`
	StructuredOutputError string        `json:"structured_output_error,omitempty"`
	Usage                 tokenUsage    `json:"usage"`
	Trace                 *reflectTrace `json:"trace,omitempty"`
	Extractive            bool          `json:"extractive,omitempty"`
}

type tokenUsage struct {
	InputTokens    int `json:"input_tokens"`
	OutputTokens   int `json:"output_tokens"`
	TotalTokens    int `json:"total_tokens"`
	CachedTokens   int `json:"cached_tokens"`
	ThoughtsTokens int `json:"thoughts_tokens"`
}

type reflectBased struct {
	Memories     []reflectFact  `json:"memories"`
	MentalModels []reflectModel `json:"mental_models"`
	Directives   []reflectDir   `json:"directives"`
}

type reflectFact struct {
	ID            string            `json:"id"`
	Text          string            `json:"text"`
	Type          string            `json:"type"`
	Context       string            `json:"context"`
	OccurredStart *time.Time        `json:"occurred_start"`
	OccurredEnd   *time.Time        `json:"occurred_end"`
	MentionedAt   time.Time         `json:"mentioned_at"`
	DocumentID    string            `json:"document_id"`
	ChunkID       *string           `json:"chunk_id,omitempty"`
	Tags          []string          `json:"tags"`
	Metadata      map[string]string `json:"metadata"`
}

type reflectModel struct {
	ID      string `json:"id"`
	Text    string `json:"text"`
	Context string `json:"context"`
}

type reflectDir struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Content string `json:"content"`
}

// reflectTrace is Hindsight's ReflectTrace with memstream's loop counters.
type reflectTrace struct {
	ToolCalls  []reflectToolCall `json:"tool_calls"`
	LLMCalls   []reflectLLMCall  `json:"llm_calls"`
	Iterations int               `json:"iterations"`
	Forced     bool              `json:"forced"`
	StopReason string            `json:"stop_reason,omitempty"`
}

type reflectToolCall struct {
	Tool       string         `json:"tool"`
	Input      map[string]any `json:"input"`
	Output     map[string]any `json:"output,omitempty"`
	DurationMS int64          `json:"duration_ms"`
	Iteration  int            `json:"iteration"`
}

type reflectLLMCall struct {
	Scope      string `json:"scope"`
	DurationMS int64  `json:"duration_ms"`
	Tokens     int    `json:"tokens"`
}

// Reflect answers a reflect request in Hindsight's shape, applying the
// bank's directives. It is the reflect route without its HTTP framing.
func (s *Server) Reflect(ctx context.Context, bank string, body ReflectRequest) (ReflectResponse, error) {
	req, err := reflectRequest(bank, body)
	if err != nil {
		return ReflectResponse{}, err
	}
	if s.d.Reflector == nil {
		return ReflectResponse{}, &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable",
			Message: "reflect is not available on this server (no reflector is configured)"}
	}
	if body.Disposition != nil {
		if err := s.fillDisposition(ctx, bank, body.Disposition, req.Disposition); err != nil {
			return ReflectResponse{}, err
		}
	}
	dirs, err := s.applicableDirectives(ctx, bank, body)
	if err != nil {
		return ReflectResponse{}, err
	}
	for _, d := range dirs {
		req.Directives = append(req.Directives, d.Content)
	}
	resp, err := s.d.Reflector.Reflect(ctx, req)
	if err != nil {
		return ReflectResponse{}, err
	}
	u := resp.Usage
	out := ReflectResponse{Text: resp.Text, StructuredOutput: resp.StructuredOutput, StructuredOutputError: resp.StructuredOutputError,
		Usage: tokenUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}, Extractive: resp.Extractive}
	inc := ReflectRequest{}.include
	if body.Include != nil {
		inc = *body.Include
	}
	if inc.Facts.on(false) {
		if out.BasedOn, err = s.basedOn(ctx, bank, resp.BasedOn, dirs); err != nil {
			return out, err
		}
	}
	if inc.ToolCalls.on(false) {
		withOutput := inc.ToolCalls.V.Output == nil || *inc.ToolCalls.V.Output
		out.Trace = traceView(resp.Trace, withOutput)
	}
	return out, nil
}

// basedOn expands the ids reflect cites into Hindsight's objects.
func (s *Server) basedOn(ctx context.Context, bank string, b reflect.BasedOn, dirs []store.Directive) (*reflectBased, error) {
	out := &reflectBased{Memories: []reflectFact{}, MentalModels: []reflectModel{}, Directives: []reflectDir{}}
	var ids []uuid.UUID
	for _, raw := range append(append([]string{}, b.Memories...), b.Observations...) {
		if id, err := uuid.Parse(raw); err == nil {
			ids = append(ids, id)
		}
	}
	if len(ids) > 0 {
		mems, err := s.d.Store.GetMemories(ctx, bank, ids)
		if err != nil {
			return nil, err
		}
		byID := map[uuid.UUID]store.Memory{}
		for _, m := range mems {
			byID[m.ID] = m
		}
		for _, id := range ids { // keep reflect's order
			m, ok := byID[id]
			if !ok {
				continue
			}
			f := reflectFact{ID: m.ID.String(), Text: m.Text, Type: m.Type, Context: m.Context, OccurredStart: m.OccurredStart,
				OccurredEnd: m.OccurredEnd, MentionedAt: m.MentionedAt, DocumentID: m.DocumentID, Tags: nonNil(m.Tags), Metadata: m.Metadata}
			if m.ChunkID != nil {
				c := m.ChunkID.String()
				f.ChunkID = &c
			}
			out.Memories = append(out.Memories, f)
		}
	}
	for _, raw := range b.MentalModels {
		id, err := uuid.Parse(raw)
		if err != nil {
			continue
		}
		m, err := s.d.Store.GetMentalModel(ctx, bank, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out.MentalModels = append(out.MentalModels, reflectModel{ID: m.ID.String(), Text: m.Content, Context: m.Name})
	}
	for _, d := range dirs {
		out.Directives = append(out.Directives, reflectDir{ID: d.ID.String(), Name: d.Name, Content: d.Content})
	}
	return out, nil
}

func traceView(t reflect.Trace, withOutput bool) *reflectTrace {
	out := &reflectTrace{ToolCalls: []reflectToolCall{}, LLMCalls: []reflectLLMCall{}, Iterations: t.Iterations, Forced: t.Forced, StopReason: t.StopReason}
	for i, c := range t.ToolCalls {
		in, ok := c.Input.(map[string]any)
		if !ok {
			in = map[string]any{}
			if raw, err := json.Marshal(c.Input); err == nil {
				_ = json.Unmarshal(raw, &in)
			}
		}
		tc := reflectToolCall{Tool: c.Tool, Input: in, DurationMS: c.DurationMS, Iteration: i}
		if withOutput {
			tc.Output = map[string]any{"size": c.OutputSize}
		}
		out.ToolCalls = append(out.ToolCalls, tc)
	}
	for _, c := range t.LLMCalls {
		out.LLMCalls = append(out.LLMCalls, reflectLLMCall{Scope: "reflect", DurationMS: c.DurationMS, Tokens: c.Tokens})
	}
	return out
}

// reflectRequest validates the body. Traits the caller gave are checked
// here; the rest are filled from the bank later.
func reflectRequest(bank string, b ReflectRequest) (reflect.Request, error) {
	req := reflect.Request{BankID: bank, Query: strings.TrimSpace(b.Query), Budget: b.Budget, MaxTokens: 4096, Tags: b.Tags,
		Context: b.Context}
	if req.Query == "" {
		return req, badRequest("query", "query is required")
	}
	if len(req.Query) > 8000 {
		return req, badRequest("query", "query is longer than 8000 bytes")
	}
	if err := budgetAndTokens(b.Budget, b.MaxTokens, b.Tags, &req.Budget, &req.MaxTokens); err != nil {
		return req, err
	}
	if b.Budget == "" {
		req.Budget = "low" // Hindsight's reflect default
	}
	if b.TagsMatch != "" && !validTagsMatch[b.TagsMatch] {
		return req, badRequest("tags_match", "tags_match must be any, all, any_strict, all_strict or exact")
	}
	for _, t := range b.FactTypes {
		if !validTypes[t] {
			return req, badRequest("fact_types", "fact_types: unknown type "+t+" (world, experience, observation)")
		}
	}
	for i := range b.TagGroups {
		if err := b.TagGroups[i].validate("tag_groups[" + itoa(i) + "]"); err != nil {
			return req, err
		}
	}
	if b.QueryTimestamp != "" {
		t, ok := parseISO(b.QueryTimestamp)
		if !ok {
			return req, badRequest("query_timestamp", "query_timestamp must be an ISO 8601 datetime")
		}
		req.QueryTimestamp = &t
	}
	if len(b.ResponseSchema) > 0 && string(b.ResponseSchema) != "null" {
		if err := json.Unmarshal(b.ResponseSchema, &req.ResponseSchema); err != nil || req.ResponseSchema == nil {
			return req, badRequest("response_schema", "response_schema must be a JSON object (a JSON Schema)")
		}
	}
	if d := b.Disposition; d != nil {
		req.Disposition = &reflect.Disposition{}
		for _, t := range []struct {
			field string
			v     *int
			dst   *int
		}{
			{"disposition.skepticism", d.Skepticism, &req.Disposition.Skepticism},
			{"disposition.literalism", d.Literalism, &req.Disposition.Literalism},
			{"disposition.empathy", d.Empathy, &req.Disposition.Empathy},
		} {
			if t.v == nil {
				continue
			}
			if *t.v < 1 || *t.v > 5 {
				return req, badRequest(t.field, t.field+" must be an integer from 1 to 5")
			}
			*t.dst = *t.v
		}
	}
	return req, nil
}

// fillDisposition completes a partial disposition override with the
// bank's own traits (3 for a bank without a profile).
func (s *Server) fillDisposition(ctx context.Context, bank string, given *dispositionBody, d *reflect.Disposition) error {
	if given.Skepticism != nil && given.Literalism != nil && given.Empathy != nil {
		return nil
	}
	base := store.Bank{Skepticism: 3, Literalism: 3, Empathy: 3}
	b, err := s.d.Store.GetBank(ctx, bank)
	switch {
	case err == nil:
		base = b
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	if given.Skepticism == nil {
		d.Skepticism = base.Skepticism
	}
	if given.Literalism == nil {
		d.Literalism = base.Literalism
	}
	if given.Empathy == nil {
		d.Empathy = base.Empathy
	}
	return nil
}
