package recallapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/memstream/memstream/store"
)

// llmRequestView is Hindsight's LLMRequestEntry: every field is present,
// null when unknown. input and output are always null: memstream does not
// keep prompts or answers (migration 017).
type llmRequestView struct {
	ID             string          `json:"id"`
	BankID         *string         `json:"bank_id"`
	Operation      *string         `json:"operation"`
	Scope          *string         `json:"scope"`
	TraceID        *string         `json:"trace_id"`
	SpanID         *string         `json:"span_id"`
	ParentSpanID   *string         `json:"parent_span_id"`
	Provider       *string         `json:"provider"`
	Model          *string         `json:"model"`
	Status         string          `json:"status"`
	StartedAt      *string         `json:"started_at"`
	EndedAt        *string         `json:"ended_at"`
	DurationMS     *int64          `json:"duration_ms"`
	InputTokens    *int            `json:"input_tokens"`
	OutputTokens   *int            `json:"output_tokens"`
	CachedTokens   *int            `json:"cached_tokens"`
	ThoughtsTokens *int            `json:"thoughts_tokens"`
	TotalTokens    *int            `json:"total_tokens"`
	Input          json.RawMessage `json:"input"`
	Output         json.RawMessage `json:"output"`
	Error          *string         `json:"error"`
	LLMInfo        json.RawMessage `json:"llm_info"`
	Metadata       json.RawMessage `json:"metadata"`
}

func nullStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nullInt(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

func isoTime(t time.Time) *string {
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

func viewLLMRequest(q store.LLMRequest) llmRequestView {
	d := q.DurationMS()
	obj := func(b json.RawMessage) json.RawMessage {
		if len(b) == 0 {
			return json.RawMessage(`{}`)
		}
		return b
	}
	return llmRequestView{ID: q.ID.String(), BankID: nullStr(q.BankID), Operation: nullStr(q.Operation), Scope: nullStr(q.Scope),
		TraceID: nullStr(q.TraceID), SpanID: nullStr(q.SpanID), ParentSpanID: nullStr(q.ParentSpanID), Provider: nullStr(q.Provider),
		Model: nullStr(q.Model), Status: q.Status, StartedAt: isoTime(q.StartedAt), EndedAt: isoTime(q.EndedAt), DurationMS: &d,
		InputTokens: nullInt(q.InputTokens), OutputTokens: nullInt(q.OutputTokens), CachedTokens: nullInt(q.CachedTokens),
		ThoughtsTokens: nullInt(q.ThoughtsTokens), TotalTokens: nullInt(q.TotalTokens),
		Input: json.RawMessage(`null`), Output: json.RawMessage(`null`), Error: nullStr(q.Error),
		LLMInfo: obj(q.LLMInfo), Metadata: obj(q.Metadata)}
}

// callTypes are Hindsight's kinds of model call (LLMCallType).
var callTypes = []string{"llm", "embedding", "rerank", "decision"}

// listLLMRequests serves Hindsight's GET …/llm-requests: the bank's
// recorded LLM requests, newest first, by request or (group) by run.
func (s *Server) listLLMRequests(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	var f store.LLMRequestFilter
	for _, p := range []struct {
		name string
		dst  *string
	}{{"status", &f.Status}, {"operation", &f.Operation}, {"scope", &f.Scope}, {"provider", &f.Provider},
		{"trace_id", &f.TraceID}, {"document_id", &f.DocumentID}, {"memory_id", &f.MemoryID}} {
		if *p.dst, err = textParam(r, p.name); err != nil {
			return err
		}
	}
	if f.CallType, err = enumParam(r, "call_type", callTypes...); err != nil {
		return err
	}
	if f.Group, err = boolParam(r, "group", false); err != nil {
		return err
	}
	if f.Start, err = isoField("start_date", r.URL.Query().Get("start_date")); err != nil {
		return err
	}
	if f.End, err = isoField("end_date", r.URL.Query().Get("end_date")); err != nil {
		return err
	}
	if f.Limit, f.Offset, err = pageWithin(r, 50, 500); err != nil {
		return err
	}
	items, total, err := s.d.Store.ListLLMRequests(r.Context(), bank, f)
	if err != nil {
		return err
	}
	views := make([]llmRequestView, len(items))
	for i, q := range items {
		views[i] = viewLLMRequest(q)
	}
	writeJSON(w, http.StatusOK, map[string]any{"bank_id": bank, "total": total, "limit": f.Limit, "offset": f.Offset, "items": views})
	return nil
}

// llmRequestStats serves Hindsight's GET …/llm-requests/stats: request
// counts by status and summed tokens per time bucket.
func (s *Server) llmRequestStats(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	operation, err := textParam(r, "operation")
	if err != nil {
		return err
	}
	callType, err := enumParam(r, "call_type", callTypes...)
	if err != nil {
		return err
	}
	name, p, err := periodParam(r)
	if err != nil {
		return err
	}
	since := time.Now().Add(-p.window)
	buckets, err := s.d.Store.LLMRequestStats(r.Context(), bank, operation, callType, p.trunc, since)
	if err != nil {
		return err
	}
	type bucket struct {
		Time     string             `json:"time"`
		Statuses map[string]int     `json:"statuses"`
		Total    int                `json:"total"`
		Tokens   store.LLMTokenSums `json:"tokens"`
	}
	out := make([]bucket, len(buckets))
	for i, b := range buckets {
		out[i] = bucket{Time: *isoTime(b.Time), Statuses: b.Statuses, Total: b.Total, Tokens: b.Tokens}
	}
	writeJSON(w, http.StatusOK, map[string]any{"bank_id": bank, "period": name, "trunc": p.trunc, "start": *isoTime(since), "buckets": out})
	return nil
}
