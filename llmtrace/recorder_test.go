package llmtrace

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/memstream/memstream/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeStore struct {
	mu      sync.Mutex
	rows    []store.LLMRequest
	fail    error
	pruned  [][]string
	before  time.Time
	keep    int
	written chan struct{}
}

func (f *fakeStore) AddLLMRequests(ctx context.Context, rs []store.LLMRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.rows = append(f.rows, rs...)
	select {
	case f.written <- struct{}{}:
	default:
	}
	return nil
}

func (f *fakeStore) PruneLLMRequests(ctx context.Context, before time.Time, banks []string, keep int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pruned = append(f.pruned, banks)
	f.before, f.keep = before, keep
	if f.fail != nil {
		return 0, f.fail
	}
	return 0, nil
}

func (f *fakeStore) all() []store.LLMRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]store.LLMRequest(nil), f.rows...)
}

func newRecorder(t *testing.T, st Writer, reg prometheus.Registerer, cfg Config) *Recorder {
	t.Helper()
	cfg.Provider, cfg.Model = "openai", "configured-model"
	if cfg.Retention == 0 {
		cfg.Retention = time.Hour
	}
	if cfg.MaxPerBank == 0 {
		cfg.MaxPerBank = 100
	}
	r, err := New(Deps{Store: st, Registerer: reg}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// fakeLLM answers like an OpenAI-compatible server: a chat answer with
// usage, a 503 with an error body, or a model list.
func fakeLLM(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case strings.Contains(string(body), "overloaded"):
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error": {"message": "the model is overloaded", "type": "server_error"}}`)
		case strings.HasSuffix(r.URL.Path, "/models"):
			_, _ = io.WriteString(w, `{"object": "list", "data": [{"id": "m1"}]}`)
		default:
			_, _ = io.WriteString(w, `{"id": "x", "model": "answering-model", "choices": [{"index": 0, "finish_reason": "tool_calls",
				"message": {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "recall", "arguments": "{}"}}]}}],
				"usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
				"prompt_tokens_details": {"cached_tokens": 100}, "completion_tokens_details": {"reasoning_tokens": 7}}}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, c *http.Client, ctx context.Context, method, url, body string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	resp, err := c.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// TestRecordsEachRequestOfARun sends a chat call, a failed call, a model
// list and an unattributed call through the transport, and checks the
// rows Run writes: one per attributed request, with its usage, status,
// error and trace.
func TestRecordsEachRequestOfARun(t *testing.T) {
	srv := fakeLLM(t)
	st := &fakeStore{written: make(chan struct{}, 16)}
	reg := prometheus.NewRegistry()
	r := newRecorder(t, st, reg, Config{FlushInterval: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	c := &http.Client{Transport: r.Transport(nil)}

	runCtx := WithDocument(WithScope(Start(context.Background(), "bank-a", "reflect"), "reflect_tool_call"), "doc-7")
	do(t, c, runCtx, "POST", srv.URL+"/v1/chat/completions", `{"model": "m"}`)
	do(t, c, runCtx, "POST", srv.URL+"/v1/chat/completions", `{"model": "m", "messages": "overloaded"}`)
	// A second Start for the same bank joins the run; no scope: the operation.
	do(t, c, Start(Start(context.Background(), "bank-a", "health"), "bank-a", "other"), "GET", srv.URL+"/v1/models", "")
	do(t, c, context.Background(), "POST", srv.URL+"/v1/chat/completions", `{}`)
	// A request that never gets an answer.
	do(t, c, Start(context.Background(), "bank-b", "retain"), "POST", "http://127.0.0.1:1/v1/chat/completions", `{}`)

	deadline := time.After(5 * time.Second)
	for len(st.all()) < 4 {
		select {
		case <-st.written:
		case <-deadline:
			t.Fatalf("rows written: %d, want 4", len(st.all()))
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rows := st.all()
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4 (the unattributed call is not recorded): %+v", len(rows), rows)
	}
	ok, fail, list, refused := rows[0], rows[1], rows[2], rows[3]
	if ok.BankID != "bank-a" || ok.Operation != "reflect" || ok.Scope != "reflect_tool_call" || ok.Status != "success" ||
		ok.Model != "answering-model" || ok.Provider != "openai" || ok.InputTokens != 120 || ok.OutputTokens != 30 ||
		ok.TotalTokens != 150 || ok.CachedTokens != 100 || ok.ThoughtsTokens != 7 || ok.TraceID == "" || ok.ParentSpanID == "" ||
		ok.SpanID == "" || ok.EndedAt.Before(ok.StartedAt) {
		t.Errorf("chat row: %+v", ok)
	}
	for _, want := range []string{`"finish_reason":"tool_calls"`, `"tool_calls":["recall"]`, `"endpoint":"chat/completions"`, `"http_status":200`} {
		if !strings.Contains(string(ok.LLMInfo), want) {
			t.Errorf("llm_info %s lacks %s", ok.LLMInfo, want)
		}
	}
	if string(ok.Metadata) != `{"document_id":"doc-7"}` {
		t.Errorf("metadata %s", ok.Metadata)
	}
	if fail.Status != "error" || fail.Error != "HTTP 503: the model is overloaded" || fail.Model != "configured-model" ||
		fail.TraceID != ok.TraceID || fail.SpanID == ok.SpanID || fail.InputTokens != 0 {
		t.Errorf("failed row: %+v", fail)
	}
	if list.Operation != "health" || list.Scope != "health" || list.Status != "success" || list.TraceID == ok.TraceID {
		t.Errorf("model list row: %+v", list)
	}
	if refused.BankID != "bank-b" || refused.Status != "error" || !strings.Contains(refused.Error, "connect") {
		t.Errorf("unanswered row: %+v", refused)
	}
	if n := testutil.ToFloat64(r.written); n != 4 {
		t.Errorf("written counter %v", n)
	}
}

// TestNeverBlocksTheCall fills the buffer with no Run draining it: calls
// still go through, and the overflow is counted, not waited for. A failed
// write is counted too, and an ending Run writes what is buffered.
func TestNeverBlocksTheCall(t *testing.T) {
	srv := fakeLLM(t)
	st := &fakeStore{fail: errors.New("database down")}
	r := newRecorder(t, st, nil, Config{Buffer: 2, FlushInterval: time.Hour})
	c := &http.Client{Transport: r.Transport(nil)}
	ctx := Start(context.Background(), "bank-a", "retain")
	start := time.Now()
	for range 5 {
		do(t, c, ctx, "POST", srv.URL+"/v1/chat/completions", `{}`)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("5 calls took %s", d)
	}
	if n := testutil.ToFloat64(r.dropped.WithLabelValues("buffer_full")); n != 3 {
		t.Errorf("buffer_full drops %v, want 3", n)
	}
	// Run on an ended context: it writes what is buffered and returns.
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Run(ended); err != nil {
		t.Fatal(err)
	}
	if n := testutil.ToFloat64(r.dropped.WithLabelValues("write_failed")); n != 2 {
		t.Errorf("write_failed drops %v, want the 2 buffered", n)
	}
}

// TestPrunesWrittenBanks checks that the trace's rule cuts the banks
// written since its last run, and names a bank again after a failed one.
func TestPrunesWrittenBanks(t *testing.T) {
	srv := fakeLLM(t)
	st := &fakeStore{written: make(chan struct{}, 16)}
	r := newRecorder(t, st, nil, Config{FlushInterval: time.Hour, BatchSize: 1, MaxPerBank: 7, Retention: time.Hour})
	rule := r.Retention()
	if rule.Table != "llm_requests" || rule.Prune == nil {
		t.Fatalf("rule %+v", rule)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	c := &http.Client{Transport: r.Transport(nil)}
	do(t, c, Start(context.Background(), "bank-p", "retain"), "POST", srv.URL+"/v1/chat/completions", `{}`)
	<-st.written
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-done
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	st.mu.Lock()
	st.fail = errors.New("down")
	st.mu.Unlock()
	if _, err := rule.Prune(context.Background(), now); err == nil {
		t.Fatal("a failed prune returned no error")
	}
	st.mu.Lock()
	st.fail = nil
	st.mu.Unlock()
	for range 2 {
		if _, err := rule.Prune(context.Background(), now); err != nil {
			t.Fatal(err)
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	// The failed prune, its retry, then nothing written since.
	want := [][]string{{"bank-p"}, {"bank-p"}, {}}
	if len(st.pruned) != len(want) {
		t.Fatalf("prunes named %v; want %v", st.pruned, want)
	}
	for i := range want {
		if strings.Join(st.pruned[i], ",") != strings.Join(want[i], ",") {
			t.Errorf("prune %d named %v; want %v (all: %v)", i, st.pruned[i], want[i], st.pruned)
		}
	}
	if !st.before.Equal(now.Add(-time.Hour)) || st.keep != 7 {
		t.Errorf("pruned before %s keeping %d; want %s and 7", st.before, st.keep, now.Add(-time.Hour))
	}
	if rule := (*Recorder)(nil).Retention(); rule.Prune != nil {
		t.Error("a nil recorder's rule prunes")
	}

	// Tracing off: nothing is recorded, and earlier rows still go by age.
	off := &fakeStore{}
	rule = RetentionRule(nil, off, 2*time.Hour)
	if rule.Prune == nil {
		t.Fatal("with tracing off the rule does not prune by age")
	}
	if _, err := rule.Prune(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	if !off.before.Equal(now.Add(-2*time.Hour)) || off.keep != 0 || len(off.pruned) != 1 || len(off.pruned[0]) != 0 {
		t.Errorf("tracing off pruned before %s, keep %d, banks %v; want %s by age only", off.before, off.keep, off.pruned, now.Add(-2*time.Hour))
	}
}

func TestConfig(t *testing.T) {
	st := &fakeStore{}
	for _, c := range []Config{{Retention: 0, MaxPerBank: 1}, {Retention: time.Hour, MaxPerBank: -1}} {
		if _, err := New(Deps{Store: st}, c); err == nil || !strings.Contains(err.Error(), "llm.trace_") {
			t.Errorf("New(%+v) = %v; want an error naming the key", c, err)
		}
	}
	off, err := New(Deps{Store: st}, Config{Retention: time.Hour})
	if err != nil || off != nil {
		t.Fatalf("MaxPerBank 0 gave %v, %v; want no recorder", off, err)
	}
	if off.Transport(nil) != http.DefaultTransport {
		t.Error("a nil recorder must hand back its base")
	}
}

// TestMetadataMergesWhatTheCallIsFor binds a document, chunks and source
// memories to one context: they go into one metadata object, and a
// context binding none leaves it empty.
func TestMetadataMergesWhatTheCallIsFor(t *testing.T) {
	c1, c2, m1 := uuid.New(), uuid.New(), uuid.New()
	ctx := WithSourceMemories(WithChunks(WithDocument(context.Background(), "doc-1"), []uuid.UUID{c1, c2}), []uuid.UUID{m1})
	if got, want := string(metadata(ctx)), `{"chunk_ids":["`+c1.String()+`","`+c2.String()+`"],"document_id":"doc-1","source_memory_ids":["`+m1.String()+`"]}`; got != want {
		t.Errorf("metadata %s, want %s", got, want)
	}
	if got := metadata(WithChunks(WithSourceMemories(context.Background(), nil), nil)); got != nil {
		t.Errorf("metadata of nothing bound: %s", got)
	}
}
