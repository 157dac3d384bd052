package embed

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeEmbeddings is an OpenAI-style /v1/embeddings server. Each input's
// vector is [len(input), 1, 1, ...] so tests can check order.
type fakeEmbeddings struct {
	mu       sync.Mutex
	dim      int
	fail     []int // statuses to return, one per request, before succeeding
	stall    int   // requests to leave unanswered until the client gives up
	requests [][]string
	types    []string // input_type of each request, "" when absent
}

func (f *fakeEmbeddings) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/embeddings" {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Input     []string `json:"input"`
		Model     string   `json:"model"`
		InputType string   `json:"input_type"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req.Input)
	f.types = append(f.types, req.InputType)
	var status int
	if len(f.fail) > 0 {
		status, f.fail = f.fail[0], f.fail[1:]
	}
	stall := f.stall > 0
	if stall {
		f.stall--
	}
	f.mu.Unlock()
	if stall {
		<-r.Context().Done()
		return
	}
	if status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"error":{"message":"try again","type":"server_error"}}`))
		return
	}
	type item struct {
		Object    string    `json:"object"`
		Embedding []float32 `json:"embedding"`
		Index     int       `json:"index"`
	}
	resp := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
	}{Object: "list", Model: req.Model}
	// Answer in reverse order: the client must sort by index.
	for i := len(req.Input) - 1; i >= 0; i-- {
		v := make([]float32, f.dim)
		v[0] = float32(len(req.Input[i]))
		resp.Data = append(resp.Data, item{"embedding", v, i})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func newFakeOpenAI(t *testing.T, f *fakeEmbeddings, dim, batch int) *OpenAI {
	t.Helper()
	return newFakeOpenAITimeout(t, f, dim, batch, 0)
}

func newFakeOpenAITimeout(t *testing.T, f *fakeEmbeddings, dim, batch int, timeout time.Duration) *OpenAI {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	o, err := NewOpenAI(OpenAIDeps{HTTPClient: srv.Client()}, OpenAIConfig{
		BaseURL:        srv.URL + "/v1",
		APIKey:         "test",
		Model:          "fake-embed",
		Dim:            dim,
		BatchSize:      batch,
		MaxRetries:     3,
		InitialBackoff: time.Millisecond,
		MaxBackoff:     5 * time.Millisecond,
		RequestTimeout: timeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestOpenAIBatching(t *testing.T) {
	t.Parallel()
	f := &fakeEmbeddings{dim: 4}
	o := newFakeOpenAI(t, f, 4, 2)
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	vecs, err := o.EmbedDocuments(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.requests) != 3 {
		t.Errorf("requests = %d (%v), want 3 batches of at most 2", len(f.requests), f.requests)
	}
	for i, v := range vecs {
		if int(v[0]) != len(texts[i]) {
			t.Errorf("vector %d belongs to a %d-byte text, want %q", i, int(v[0]), texts[i])
		}
	}
	if o.Dim() != 4 || o.Name() != "openai" {
		t.Errorf("Dim, Name = %d, %q", o.Dim(), o.Name())
	}
}

func TestOpenAIRetry(t *testing.T) {
	t.Parallel()
	f := &fakeEmbeddings{dim: 3, fail: []int{500, 429}}
	o := newFakeOpenAI(t, f, 3, 10)
	vecs, err := o.EmbedDocuments(context.Background(), []string{"hello"})
	if err != nil {
		t.Fatalf("want success after retries, got %v", err)
	}
	if len(vecs) != 1 || vecs[0][0] != 5 {
		t.Errorf("vecs = %v", vecs)
	}
	if len(f.requests) != 3 {
		t.Errorf("requests = %d, want 3 (500, 429, success)", len(f.requests))
	}
}

func TestOpenAIRetryOnTimeout(t *testing.T) {
	t.Parallel()
	f := &fakeEmbeddings{dim: 3, stall: 1}
	o := newFakeOpenAITimeout(t, f, 3, 10, 100*time.Millisecond)
	if _, err := o.EmbedDocuments(context.Background(), []string{"x"}); err != nil {
		t.Fatalf("want success after a timed-out attempt, got %v", err)
	}
	if len(f.requests) != 2 {
		t.Errorf("requests = %d, want 2", len(f.requests))
	}
}

func TestOpenAIRetryGivesUp(t *testing.T) {
	t.Parallel()
	f := &fakeEmbeddings{dim: 3, fail: []int{503, 503, 503, 503, 503}}
	o := newFakeOpenAI(t, f, 3, 10)
	if _, err := o.EmbedDocuments(context.Background(), []string{"x"}); err == nil {
		t.Fatal("want error after retries are exhausted")
	}
	if len(f.requests) != 4 {
		t.Errorf("requests = %d, want 1 + MaxRetries(3)", len(f.requests))
	}
}

func TestOpenAINoRetryOnClientError(t *testing.T) {
	t.Parallel()
	f := &fakeEmbeddings{dim: 3, fail: []int{401}}
	o := newFakeOpenAI(t, f, 3, 10)
	if _, err := o.EmbedDocuments(context.Background(), []string{"x"}); err == nil {
		t.Fatal("want error for 401")
	}
	if len(f.requests) != 1 {
		t.Errorf("requests = %d, want 1: a bad key does not get better", len(f.requests))
	}
}

// Failures carry their class, so that ingest stalls on an outage or a bad
// key instead of dead-lettering batches, and dead-letters only an input
// the server refuses.
func TestOpenAIErrorsAreClassified(t *testing.T) {
	t.Parallel()
	type class struct{ transient, unavailable, rejected bool }
	for _, tc := range []struct {
		status int
		want   class
	}{
		{503, class{transient: true}}, {429, class{transient: true}},
		{401, class{unavailable: true}}, {404, class{unavailable: true}},
		{400, class{rejected: true}}, {413, class{rejected: true}},
	} {
		f := &fakeEmbeddings{dim: 3, fail: []int{tc.status, tc.status, tc.status, tc.status}}
		o := newFakeOpenAI(t, f, 3, 10)
		_, err := o.EmbedDocuments(context.Background(), []string{"x"})
		var c interface {
			Transient() bool
			Unavailable() bool
			InputRejected() bool
		}
		if !errors.As(err, &c) {
			t.Fatalf("HTTP %d: error %v carries no class", tc.status, err)
		}
		if got := (class{c.Transient(), c.Unavailable(), c.InputRejected()}); got != tc.want {
			t.Errorf("HTTP %d: class %+v, want %+v", tc.status, got, tc.want)
		}
	}
}

func TestOpenAIDimMismatch(t *testing.T) {
	t.Parallel()
	f := &fakeEmbeddings{dim: 8}
	o := newFakeOpenAI(t, f, 4, 10)
	_, err := o.EmbedDocuments(context.Background(), []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "returned 8 dimensions") || !strings.Contains(err.Error(), "embed.dim is 4") {
		t.Fatalf("err = %v, want a dimension mismatch naming both sizes", err)
	}
}

func TestOpenAIConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg   OpenAIConfig
		field string
	}{
		{OpenAIConfig{Dim: 3}, "embed.model"},
		{OpenAIConfig{Model: "m"}, "embed.dim"},
		{OpenAIConfig{Model: "m", Dim: 3, BatchSize: -1}, "embed.batch_size"},
	} {
		_, err := NewOpenAI(OpenAIDeps{}, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("NewOpenAI(%+v) = %v, want error naming %s", tc.cfg, err, tc.field)
		}
	}
}

// TestOpenAIQueryAndDocument checks that queries and documents get their own
// prefixes and, when asked, their input_type.
func TestOpenAIQueryAndDocument(t *testing.T) {
	t.Parallel()
	f := &fakeEmbeddings{dim: 4}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	o, err := NewOpenAI(OpenAIDeps{HTTPClient: srv.Client()}, OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "e5", Dim: 4,
		Prefixes: Prefixes{Query: "query: ", Document: "passage: "}, SendInputType: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := o.EmbedDocuments(ctx, []string{"Alice moved to Denver"}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.EmbedQueries(ctx, []string{"where does Alice live?"}); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"passage: Alice moved to Denver"}, {"query: where does Alice live?"}}
	if len(f.requests) != 2 || f.requests[0][0] != want[0][0] || f.requests[1][0] != want[1][0] {
		t.Errorf("requests = %q, want %q", f.requests, want)
	}
	if len(f.types) != 2 || f.types[0] != "document" || f.types[1] != "query" {
		t.Errorf("input types = %q, want document, query", f.types)
	}

	// Without SendInputType no input_type field is sent (strict servers
	// refuse unknown fields).
	plain := newFakeOpenAI(t, f, 4, 8)
	if _, err := plain.EmbedQueries(ctx, []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if got := f.types[len(f.types)-1]; got != "" {
		t.Errorf("input_type %q sent without SendInputType", got)
	}
}

// TestOpenAIOwnClient: without deps.HTTPClient the embedder calls through a
// client of its own.
func TestOpenAIOwnClient(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(&fakeEmbeddings{dim: 4})
	t.Cleanup(srv.Close)
	o, err := NewOpenAI(OpenAIDeps{}, OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "m", Dim: 4})
	if err != nil {
		t.Fatal(err)
	}
	if vecs, err := o.EmbedDocuments(context.Background(), []string{"hello"}); err != nil || len(vecs) != 1 {
		t.Fatalf("EmbedDocuments = %d vectors, %v", len(vecs), err)
	}
}
