package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/memstream/memstream/chunk"
	"github.com/memstream/memstream/extract"
	"github.com/memstream/memstream/llm"
	"github.com/memstream/memstream/priority"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// httptest servers close their connections asynchronously.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

// reply is what the fake server does for one call.
type reply func(w http.ResponseWriter, r *http.Request, req chatRequest)

type chatRequest struct {
	Model          string `json:"model"`
	Messages       []struct{ Role, Content string }
	ResponseFormat struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string          `json:"name"`
			Strict bool            `json:"strict"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

type wireChunk struct {
	ChunkIndex int `json:"chunk_index"`
	Messages   []struct {
		MessageIndex int    `json:"message_index"`
		Name         string `json:"name"`
		Timestamp    string `json:"timestamp"`
		Text         string `json:"text"`
	} `json:"messages"`
}

// chunksOf finds the chunks of the call in its first user message.
func chunksOf(t *testing.T, req chatRequest) []wireChunk {
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		var body struct{ Chunks []wireChunk }
		if err := json.Unmarshal([]byte(m.Content), &body); err != nil {
			t.Errorf("user message is not the chunk JSON: %v", err)
		}
		return body.Chunks
	}
	t.Error("no user message")
	return nil
}

func completion(w http.ResponseWriter, content string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "c1", "object": "chat.completion", "model": "fake",
		"choices": []map[string]any{{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}},
		"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 40, "total_tokens": 140},
	})
}

// answer builds a valid answer: one "LLM:"-prefixed fact per message, so
// tests can tell LLM facts from offline fallbacks.
func answer(t *testing.T, req chatRequest) string {
	var out struct {
		Chunks []map[string]any `json:"chunks"`
	}
	for _, c := range chunksOf(t, req) {
		var facts []map[string]any
		for _, m := range c.Messages {
			facts = append(facts, map[string]any{
				"text": "LLM: " + m.Text, "fact_type": "world", "message_index": m.MessageIndex,
				"entities":         []map[string]string{{"name": m.Name, "kind": "person"}},
				"causal_relations": []any{}, "occurred_start": nil, "occurred_end": nil,
				"mentioned_at": m.Timestamp, "context": "", "tags": []string{"model-tag"},
			})
		}
		out.Chunks = append(out.Chunks, map[string]any{"chunk_index": c.ChunkIndex, "facts": facts})
	}
	b, _ := json.Marshal(out)
	return string(b)
}

var (
	valid = func(t *testing.T) reply {
		return func(w http.ResponseWriter, _ *http.Request, req chatRequest) { completion(w, answer(t, req)) }
	}
	status = func(code int) reply {
		return func(w http.ResponseWriter, _ *http.Request, _ chatRequest) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"error":{"message":"injected %d","type":"server_error"}}`, code)
		}
	}
	hang = func(w http.ResponseWriter, r *http.Request, _ chatRequest) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}
	malformed = func(w http.ResponseWriter, _ *http.Request, _ chatRequest) {
		completion(w, `{"chunks": [{"chunk_index": 0, "facts": [{"text": "unterminated`)
	}
)

// fake is a scripted OpenAI-compatible server: call i gets script[i], and
// calls past the script get the last entry.
type fake struct {
	t        *testing.T
	srv      *httptest.Server
	mu       sync.Mutex
	script   []reply
	calls    int
	requests []chatRequest
	inflight atomic.Int32
	maxIn    atomic.Int32
	delay    time.Duration
}

func newFake(t *testing.T, script ...reply) *fake {
	f := &fake{t: t, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			t.Errorf("unexpected path %s", r.URL.Path)
		}
		n := f.inflight.Add(1)
		defer f.inflight.Add(-1)
		for {
			m := f.maxIn.Load()
			if n <= m || f.maxIn.CompareAndSwap(m, n) {
				break
			}
		}
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("decode request: %v", err)
		}
		f.mu.Lock()
		rep := f.script[min(f.calls, len(f.script)-1)]
		f.calls++
		f.requests = append(f.requests, req)
		f.mu.Unlock()
		if f.delay > 0 {
			time.Sleep(f.delay)
		}
		rep(w, r, req)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) numCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func newExtractor(t *testing.T, f *fake, cfg llm.Config) (*llm.Extractor, *prometheus.Registry) {
	t.Helper()
	return newGatedExtractor(t, f, nil, cfg)
}

// newGatedExtractor is newExtractor whose calls hold slots of gate.
func newGatedExtractor(t *testing.T, f *fake, gate *priority.Gate, cfg llm.Config) (*llm.Extractor, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.BaseURL = f.srv.URL + "/v1"
	cfg.Model = "fake-model"
	if cfg.Timeout == 0 {
		cfg.Timeout = 300 * time.Millisecond
	}
	cfg.InitialBackoff = 5 * time.Millisecond
	cfg.MaxBackoff = 20 * time.Millisecond
	e, err := llm.New(llm.Deps{Registerer: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Gate: gate}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, reg
}

var t0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

func inputs(n int) []extract.Input {
	var in []extract.Input
	for i := 0; i < n; i++ {
		in = append(in, extract.Input{Context: "ctx", Tags: []string{"project:apollo"}, Parts: []chunk.Part{
			{MessageIndex: 2 * i, Role: "user", Name: "Alice", Timestamp: t0, Text: fmt.Sprintf("I moved to Lisbon in March, number %d.", i)},
			{MessageIndex: 2*i + 1, Role: "assistant", Timestamp: t0.Add(time.Second), Text: "Lisbon is a beautiful city with great food."},
		}})
	}
	return in
}

func counter(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		total := 0.0
	metric:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() != labels[i+1] {
						continue metric
					}
				}
			}
			total += m.GetCounter().GetValue()
		}
		return total
	}
	return 0
}

// checkLLMFacts asserts each input got one LLM fact per message with the
// message's timestamp, the event's tags and context.
func checkLLMFacts(t *testing.T, in []extract.Input, out [][]extract.Fact) {
	t.Helper()
	if len(out) != len(in) {
		t.Fatalf("got %d results for %d inputs", len(out), len(in))
	}
	for i, fs := range out {
		if len(fs) != len(in[i].Parts) {
			t.Fatalf("input %d: %d facts, want %d: %+v", i, len(fs), len(in[i].Parts), fs)
		}
		replies := extract.ReplyContexts(in[i])
		for j, f := range fs {
			p := in[i].Parts[j]
			if f.Text != "LLM: "+p.Text || f.MessageIndex != p.MessageIndex || !f.MentionedAt.Equal(p.Timestamp) {
				t.Errorf("input %d fact %d = %+v, want the LLM fact of %+v", i, j, f, p)
			}
			if !reflect.DeepEqual(f.Tags, []string{"project:apollo"}) || f.Context != extract.JoinContext("ctx", replies[j]) || f.ReplyTo != replies[j] {
				t.Errorf("input %d fact %d: tags %v context %q reply_to %q, want the event's and the turn answered", i, j, f.Tags, f.Context, f.ReplyTo)
			}
		}
	}
}

func TestTransientFailuresRetriedThenSucceed(t *testing.T) {
	t.Parallel()
	f := newFake(t, status(500), status(429), hang, malformed, valid(t))
	e, reg := newExtractor(t, f, llm.Config{MaxRetries: 4, ChunksPerCall: 8, Concurrency: 1})
	in := inputs(3)
	out, err := e.Extract(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkLLMFacts(t, in, out)
	if got := f.numCalls(); got != 5 {
		t.Errorf("calls = %d, want 5 (500, 429, timeout, malformed, re-ask)", got)
	}
	// The re-ask carries the invalid answer and the error.
	last := f.requests[4].Messages
	if len(last) != 4 || last[2].Role != "assistant" || !strings.Contains(last[3].Content, "not valid JSON") {
		t.Errorf("re-ask messages = %+v", last)
	}
	want := map[string]float64{"memstream_llm_retries_total": 3, "memstream_llm_reasks_total": 1, "memstream_llm_fallback_chunks_total": 0, "memstream_llm_invalid_answers_total": 1}
	for name, v := range want {
		if got := counter(t, reg, name); got != v {
			t.Errorf("%s = %v, want %v", name, got, v)
		}
	}
	for outcome, v := range map[string]float64{"ok": 2, "server_error": 1, "rate_limited": 1, "timeout": 1} {
		if got := counter(t, reg, "memstream_llm_calls_total", "outcome", outcome); got != v {
			t.Errorf("calls{outcome=%s} = %v, want %v", outcome, got, v)
		}
	}
	if got := counter(t, reg, "memstream_llm_tokens_total", "kind", "prompt"); got != 200 {
		t.Errorf("prompt tokens = %v, want 200", got)
	}
	if got := counter(t, reg, "memstream_llm_tokens_total", "kind", "completion"); got != 80 {
		t.Errorf("completion tokens = %v, want 80", got)
	}
	req := f.requests[0]
	if req.Model != "fake-model" || req.ResponseFormat.Type != "json_schema" || !req.ResponseFormat.JSONSchema.Strict ||
		!strings.Contains(string(req.ResponseFormat.JSONSchema.Schema), `"causal_relations"`) {
		t.Errorf("request does not ask for strict json_schema output: %+v", req.ResponseFormat)
	}
}

// Only an answer that stays invalid after the re-ask falls back to the
// offline extractor: the model did answer, and would answer the same way.
func TestInvalidAnswersFallBackToOffline(t *testing.T) {
	t.Parallel()
	offline, err := extract.NewOffline(extract.OfflineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		script    []reply
		wantCalls int
	}{
		{"malformed twice", []reply{malformed}, 2},
		{"wrong message index twice", []reply{func(w http.ResponseWriter, _ *http.Request, req chatRequest) {
			completion(w, strings.ReplaceAll(answer(t, req), `"message_index":`, `"message_index":10`))
		}}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, tc.script...)
			e, reg := newExtractor(t, f, llm.Config{MaxRetries: 2, ChunksPerCall: 4, Concurrency: 2, Timeout: 100 * time.Millisecond})
			in := inputs(3)
			out, err := e.Extract(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := offline.Extract(context.Background(), in)
			if !reflect.DeepEqual(out, want) {
				t.Errorf("fallback facts differ from the offline extractor's:\n got %+v\nwant %+v", out, want)
			}
			if len(out[0]) == 0 {
				t.Error("fallback produced no facts; nothing would be persisted")
			}
			if got := counter(t, reg, "memstream_llm_fallback_chunks_total"); got != 3 {
				t.Errorf("fallback chunks = %v, want 3", got)
			}
			if got := f.numCalls(); got != tc.wantCalls {
				t.Errorf("calls = %d, want %d", got, tc.wantCalls)
			}
		})
	}
}

// An outage, a bad key or a missing model is reported, classified, for
// every input: the extractor used to fall back to the offline extractor on
// any error, so a wrong API key ingested the whole stream at rule quality
// for good (issue 15 item 10).
func TestProviderFaultsAreReportedNotHidden(t *testing.T) {
	t.Parallel()
	type class struct{ transient, unavailable, rejected bool }
	cases := []struct {
		name      string
		script    []reply
		want      class
		wantCalls int
	}{
		{"server errors exhaust retries", []reply{status(503)}, class{transient: true}, 3},
		{"timeouts exhaust retries", []reply{hang}, class{transient: true}, 3},
		{"rate limited", []reply{status(429)}, class{transient: true}, 3},
		{"bad api key", []reply{status(401)}, class{unavailable: true}, 1},
		{"no such model", []reply{status(404)}, class{unavailable: true}, 1},
		// The group is rejected, then each of its 3 chunks alone.
		{"rejected input", []reply{status(400)}, class{rejected: true}, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, tc.script...)
			e, reg := newExtractor(t, f, llm.Config{MaxRetries: 2, ChunksPerCall: 4, Concurrency: 2, Timeout: 100 * time.Millisecond})
			in := inputs(3)
			_, err := e.Extract(context.Background(), in)
			var be *extract.BatchError
			if !errors.As(err, &be) || be.Len() != len(in) {
				t.Fatalf("Extract error = %v, want a BatchError naming all %d inputs", err, len(in))
			}
			be.Each(func(i int, err error) {
				var le *llm.Error
				if !errors.As(err, &le) {
					t.Fatalf("input %d: error %v is not an *llm.Error", i, err)
				}
				if got := (class{le.Transient(), le.Unavailable(), le.InputRejected()}); got != tc.want {
					t.Errorf("input %d: class %+v, want %+v (%v)", i, got, tc.want, le)
				}
			})
			if got := counter(t, reg, "memstream_llm_fallback_chunks_total"); got != 0 {
				t.Errorf("fallback chunks = %v, want 0: a provider fault must not degrade silently", got)
			}
			if got := f.numCalls(); got != tc.wantCalls {
				t.Errorf("calls = %d, want %d", got, tc.wantCalls)
			}
		})
	}
}

// A chunk the server refuses fails alone: the rest of its call is asked
// again chunk by chunk and keeps its LLM facts.
func TestRejectedChunkFailsAlone(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, req chatRequest) {
		for _, c := range chunksOf(t, req) {
			for _, m := range c.Messages {
				if strings.Contains(m.Text, "number 2.") {
					status(400)(w, r, req)
					return
				}
			}
		}
		valid(t)(w, r, req)
	})
	e, _ := newExtractor(t, f, llm.Config{ChunksPerCall: 4, Concurrency: 2})
	in := inputs(4)
	out, err := e.Extract(context.Background(), in)
	var be *extract.BatchError
	if !errors.As(err, &be) || be.Len() != 1 || be.Err(2) == nil {
		t.Fatalf("Extract error = %v, want only input 2 failed", err)
	}
	good := []int{0, 1, 3}
	var gin []extract.Input
	var gout [][]extract.Fact
	for _, i := range good {
		gin, gout = append(gin, in[i]), append(gout, out[i])
	}
	checkLLMFacts(t, gin, gout)
}

// Every fallback is counted, but logged at most once a minute.
func TestFallbackLoggedOncePerMinute(t *testing.T) {
	t.Parallel()
	f := newFake(t, malformed)
	var buf syncBuffer
	reg := prometheus.NewRegistry()
	e, err := llm.New(llm.Deps{Registerer: reg, Logger: slog.New(slog.NewTextHandler(&buf, nil))}, llm.Config{BaseURL: f.srv.URL + "/v1",
		Model: "m", ChunksPerCall: 2, Concurrency: 1, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for i := 0; i < 3; i++ {
		if _, err := e.Extract(context.Background(), inputs(2)); err != nil {
			t.Fatal(err)
		}
	}
	if got := counter(t, reg, "memstream_llm_fallback_chunks_total"); got != 6 {
		t.Errorf("fallback chunks = %v, want 6", got)
	}
	if n := strings.Count(buf.String(), "offline extractor instead"); n != 1 {
		t.Errorf("fallback logged %d times in three calls, want once:\n%s", n, buf.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRepairsWithoutReask(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, req chatRequest) {
		a := answer(t, req)
		// Fenced JSON, an empty entity name and an unknown kind.
		a = strings.Replace(a, `"kind":"person"`, `"kind":"celebrity"`, 1)
		a = strings.Replace(a, `{"kind":"person","name":""}`, `{"kind":"person","name":"  "}`, 1)
		completion(w, "Here you go:\n```json\n"+a+"\n```")
	})
	e, reg := newExtractor(t, f, llm.Config{ChunksPerCall: 4})
	in := inputs(2)
	out, err := e.Extract(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkLLMFacts(t, in, out)
	if got := out[0][0].Entities; len(got) != 1 || got[0] != (extract.Entity{Name: "Alice", Kind: extract.KindOther}) {
		t.Errorf("entities of first fact = %+v, want Alice/other", got)
	}
	if got := out[0][1].Entities; len(got) != 0 {
		t.Errorf("blank entity name kept: %+v", got)
	}
	if got := counter(t, reg, "memstream_llm_reasks_total"); got != 0 {
		t.Errorf("re-asks = %v, want 0", got)
	}
}

func TestChunksPerCallAndConcurrency(t *testing.T) {
	t.Parallel()
	f := newFake(t, valid(t))
	f.delay = 50 * time.Millisecond
	e, _ := newExtractor(t, f, llm.Config{ChunksPerCall: 3, Concurrency: 2})
	in := inputs(20) // 7 calls: 6×3 + 1×2
	out, err := e.Extract(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkLLMFacts(t, in, out)
	if got := f.numCalls(); got != 7 {
		t.Errorf("calls = %d, want 7", got)
	}
	sizes := map[int]int{}
	for _, r := range f.requests {
		sizes[len(chunksOf(t, r))]++
	}
	if sizes[3] != 6 || sizes[2] != 1 {
		t.Errorf("chunks per call = %v, want six of 3 and one of 2", sizes)
	}
	if m := f.maxIn.Load(); m != 2 {
		t.Errorf("max in-flight calls = %d, want 2", m)
	}
}

func TestTimedFacts(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, req chatRequest) {
		completion(w, `{"chunks":[{"chunk_index":0,"facts":[
			{"text":"Alice moved to Lisbon","fact_type":"experience","message_index":0,"entities":[{"name":"Lisbon","kind":"place"}],
			 "causal_relations":[{"target_index":1,"relation":"causes"}],"occurred_start":"2026-03-01","occurred_end":"2026-04-01T00:00:00Z",
			 "mentioned_at":null,"context":"","tags":[]},
			{"text":"Alice learns Portuguese","fact_type":"experience","message_index":1,"entities":[],
			 "causal_relations":[{"target_index":0,"relation":"caused_by"}],"occurred_start":null,"occurred_end":null,
			 "mentioned_at":null,"context":"","tags":[]}]}]}`)
	})
	e, _ := newExtractor(t, f, llm.Config{})
	out, err := e.Extract(context.Background(), inputs(1))
	if err != nil {
		t.Fatal(err)
	}
	fs := out[0]
	if len(fs) != 2 || fs[0].OccurredStart == nil || !fs[0].OccurredStart.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) ||
		!fs[0].OccurredEnd.Equal(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)) || fs[1].OccurredStart != nil {
		t.Fatalf("facts = %+v", fs)
	}
	if fs[0].Causal[0] != (extract.Causal{TargetIndex: 1, Relation: extract.Causes}) || fs[1].FactType != extract.Experience {
		t.Errorf("facts = %+v", fs)
	}
}

func TestCancelledContextFails(t *testing.T) {
	t.Parallel()
	f := newFake(t, hang)
	e, _ := newExtractor(t, f, llm.Config{Timeout: 5 * time.Second, MaxRetries: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := e.Extract(ctx, inputs(2)); err == nil {
		t.Fatal("Extract succeeded with a cancelled context; the pipeline would ack unextracted records")
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		cfg  llm.Config
		want string
	}{
		{llm.Config{}, "llm.model"},
		{llm.Config{Model: "m", MaxRetries: -1}, "llm.max_retries"},
		{llm.Config{Model: "m", Concurrency: -2}, "llm.concurrency"},
		{llm.Config{Model: "m", ChunksPerCall: -1}, "llm.chunks_per_call"},
	} {
		if _, err := llm.New(llm.Deps{Logger: log}, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) error = %v, want one naming %s", tc.cfg, err, tc.want)
		}
	}
	reg := prometheus.NewRegistry()
	if _, err := llm.New(llm.Deps{Registerer: reg, Logger: log}, llm.Config{Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if mfs, err := reg.Gather(); err != nil || len(mfs) == 0 {
		t.Error("no metrics registered")
	}
}
