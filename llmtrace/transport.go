package llmtrace

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

// run is one operation for one bank: its requests share a trace id and
// point at one operation span, as Hindsight's rows do.
type run struct {
	bank, operation, traceID, spanID string
}

type (
	runKey     struct{}
	scopeKey   struct{}
	docKey     struct{}
	chunksKey  struct{}
	sourcesKey struct{}
)

// Start binds a run of operation for bank to ctx: the LLM requests made
// under the returned context are recorded for bank, sharing one trace id.
// A run already bound for the same bank is joined, so a mental-model
// refresh's reflect calls belong to the refresh. An empty bank binds
// nothing.
func Start(ctx context.Context, bank, operation string) context.Context {
	if bank == "" {
		return ctx
	}
	if r, ok := ctx.Value(runKey{}).(*run); ok && r.bank == bank {
		return ctx
	}
	return context.WithValue(ctx, runKey{}, &run{bank: bank, operation: operation, traceID: uuid.NewString(), spanID: uuid.NewString()})
}

// WithScope names the kind of call the requests made under ctx are
// (retain_extract_facts, reflect, consolidation); without one a request's
// scope is its run's operation.
func WithScope(ctx context.Context, scope string) context.Context {
	return context.WithValue(ctx, scopeKey{}, scope)
}

// WithDocument records documentID as the requests' metadata.document_id
// (the list route's document_id filter).
func WithDocument(ctx context.Context, documentID string) context.Context {
	if documentID == "" {
		return ctx
	}
	return context.WithValue(ctx, docKey{}, documentID)
}

// WithChunks records chunkIDs, the chunks a retain extraction call
// carries, as the requests' metadata.chunk_ids. The ids of the facts are
// only known once the call has answered and the pipeline has stored them;
// the chunks are known now, and the store reads a call's memories (its
// metadata.memory_ids, the memory_id filter) through them.
func WithChunks(ctx context.Context, chunkIDs []uuid.UUID) context.Context {
	if len(chunkIDs) == 0 {
		return ctx
	}
	return context.WithValue(ctx, chunksKey{}, chunkIDs)
}

// WithSourceMemories records memoryIDs, the memories the call is asked
// about (consolidation's input facts), as the requests'
// metadata.source_memory_ids.
func WithSourceMemories(ctx context.Context, memoryIDs []uuid.UUID) context.Context {
	if len(memoryIDs) == 0 {
		return ctx
	}
	return context.WithValue(ctx, sourcesKey{}, memoryIDs)
}

// metadata is what the requests made under ctx were for, as a row's
// metadata object; nil when nothing is bound.
func metadata(ctx context.Context) json.RawMessage {
	m := map[string]any{}
	if doc, ok := ctx.Value(docKey{}).(string); ok {
		m["document_id"] = doc
	}
	if ids, ok := ctx.Value(chunksKey{}).([]uuid.UUID); ok {
		m["chunk_ids"] = ids
	}
	if ids, ok := ctx.Value(sourcesKey{}).([]uuid.UUID); ok {
		m["source_memory_ids"] = ids
	}
	if len(m) == 0 {
		return nil
	}
	b, _ := json.Marshal(m)
	return b
}

// Transport returns base (nil: http.DefaultTransport) with every request
// whose context carries a run recorded. Put it under the LLM gate's
// transport, so a row's latency is the request's and not its wait for a
// slot.
func (r *Recorder) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if r == nil {
		return base
	}
	return &transport{r: r, base: base}
}

type transport struct {
	r    *Recorder
	base http.RoundTripper
}

// pending is a finished request whose answer is not parsed yet: Run
// parses it, off the caller's path.
type pending struct {
	q        store.LLMRequest
	endpoint string
	status   int
	body     []byte
	err      error
}

// maxCapture bounds the bytes of an answer kept for its usage report.
const maxCapture = 1 << 20

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	rn, _ := ctx.Value(runKey{}).(*run)
	if rn == nil {
		return t.base.RoundTrip(req)
	}
	scope, _ := ctx.Value(scopeKey{}).(string)
	if scope == "" {
		scope = rn.operation
	}
	p := pending{q: store.LLMRequest{ID: uuid.New(), BankID: rn.bank, Operation: rn.operation, Scope: scope,
		TraceID: rn.traceID, SpanID: uuid.NewString(), ParentSpanID: rn.spanID, Provider: t.r.cfg.Provider,
		Model: t.r.cfg.Model, StartedAt: time.Now()}}
	p.q.Metadata = metadata(ctx)
	_, p.endpoint, _ = strings.Cut(req.URL.Path, "/v1/")
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		p.q.EndedAt, p.err = time.Now(), err
		t.r.record(p)
		return nil, err
	}
	p.status = resp.StatusCode
	resp.Body = &capture{ReadCloser: resp.Body, done: func(body []byte) {
		p.q.EndedAt, p.body = time.Now(), body
		t.r.record(p)
	}}
	return resp, nil
}

// capture keeps the first maxCapture bytes of an answer and hands them
// over once, when the body is read to its end or closed.
type capture struct {
	io.ReadCloser
	buf  []byte
	once sync.Once
	done func([]byte)
}

func (c *capture) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	if room := maxCapture - len(c.buf); room > 0 {
		c.buf = append(c.buf, b[:min(n, room)]...)
	}
	if err == io.EOF {
		c.once.Do(func() { c.done(c.buf) })
	}
	return n, err
}

func (c *capture) Close() error {
	err := c.ReadCloser.Close()
	c.once.Do(func() { c.done(c.buf) })
	return err
}

// answer is the part of an OpenAI-compatible answer a row keeps.
type answer struct {
	Model string `json:"model"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails *struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
	Choices []struct {
		FinishReason string `json:"finish_reason"`
		Message      struct {
			ToolCalls []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// maxError bounds a row's error text.
const maxError = 1000

// row turns a finished request into its row: status, error, usage and
// what describes the call (llm_info).
func (r *Recorder) row(p pending) store.LLMRequest {
	q := p.q
	info := map[string]any{}
	if p.endpoint != "" {
		info["endpoint"] = p.endpoint
	}
	var a answer
	if p.err == nil {
		info["http_status"] = p.status
		_ = json.Unmarshal(p.body, &a) // a body that is not JSON leaves the usage unknown
	}
	switch {
	case p.err != nil:
		q.Status, q.Error = "error", p.err.Error()
	case p.status >= 400:
		q.Status, q.Error = "error", fmt.Sprintf("HTTP %d", p.status)
		if a.Error != nil && a.Error.Message != "" {
			q.Error += ": " + a.Error.Message
		}
	default:
		q.Status = "success"
	}
	if len(q.Error) > maxError {
		q.Error = q.Error[:maxError]
	}
	q.Error = clean(q.Error)
	if a.Model != "" {
		q.Model = clean(a.Model)
	}
	if u := a.Usage; u != nil {
		q.InputTokens, q.OutputTokens, q.TotalTokens = u.PromptTokens, u.CompletionTokens, u.TotalTokens
		if q.TotalTokens == 0 {
			q.TotalTokens = u.PromptTokens + u.CompletionTokens
		}
		if d := u.PromptTokensDetails; d != nil {
			q.CachedTokens = d.CachedTokens
		}
		if d := u.CompletionTokensDetails; d != nil {
			q.ThoughtsTokens = d.ReasoningTokens
		}
	}
	if len(a.Choices) > 0 {
		c := a.Choices[0]
		if c.FinishReason != "" {
			info["finish_reason"] = clean(c.FinishReason)
		}
		if len(c.Message.ToolCalls) > 0 {
			names := make([]string, len(c.Message.ToolCalls))
			for i, tc := range c.Message.ToolCalls {
				names[i] = clean(tc.Function.Name)
			}
			info["tool_calls"] = names
		}
	}
	q.LLMInfo, _ = json.Marshal(info)
	return q
}

// clean makes a string the server sent storable: PostgreSQL refuses NUL
// and invalid UTF-8 in text and jsonb, and one refused row would lose its
// whole batch.
func clean(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "")
}
