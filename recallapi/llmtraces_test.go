package recallapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/llm"
	"github.com/memstream/memstream/llmtrace"
	"github.com/memstream/memstream/pipeline"
	"github.com/memstream/memstream/store"
)

// TestLLMRequestRoutes serves recorded requests in Hindsight's shapes:
// every LLMRequestEntry field present (null when unknown), the filters,
// the run pages and the stats; a bad query parameter is a 400 naming it.
func TestLLMRequestRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	ctx := context.Background()
	if err := e.st.EnsureBank(ctx, "bank-t"); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	mk := func(op, status, trace string, ago time.Duration, in int) store.LLMRequest {
		return store.LLMRequest{ID: uuid.New(), BankID: "bank-t", Operation: op, Scope: op, TraceID: trace, SpanID: uuid.NewString(),
			Provider: "openai", Model: "m", Status: status, StartedAt: now.Add(-ago), EndedAt: now.Add(-ago + 250*time.Millisecond),
			InputTokens: in, OutputTokens: in / 10, TotalTokens: in + in/10}
	}
	rows := []store.LLMRequest{mk("retain", "success", "t1", 3*time.Minute, 100), mk("retain", "error", "t1", 2*time.Minute, 0),
		mk("reflect", "success", "t2", time.Minute, 50)}
	rows[1].Error = "HTTP 503: overloaded"
	if err := e.st.AddLLMRequests(ctx, rows); err != nil {
		t.Fatal(err)
	}
	b := "/v1/default/banks/bank-t/llm-requests"
	r := e.call("GET", b, "", "")
	if r.status != 200 || r.body["bank_id"] != "bank-t" || r.body["total"] != float64(3) || r.body["limit"] != float64(50) || r.body["offset"] != float64(0) {
		t.Fatalf("list: %d %s", r.status, r.raw)
	}
	items := r.body["items"].([]any)
	first := items[0].(map[string]any)
	for _, k := range []string{"id", "bank_id", "operation", "scope", "trace_id", "span_id", "parent_span_id", "provider", "model", "status",
		"started_at", "ended_at", "duration_ms", "input_tokens", "output_tokens", "cached_tokens", "thoughts_tokens", "total_tokens",
		"input", "output", "error", "llm_info", "metadata"} {
		if _, ok := first[k]; !ok {
			t.Errorf("entry lacks %q: %v", k, first)
		}
	}
	if first["operation"] != "reflect" || first["duration_ms"] != float64(250) || first["input_tokens"] != float64(50) ||
		first["cached_tokens"] != nil || first["parent_span_id"] != nil || first["input"] != nil || first["error"] != nil {
		t.Errorf("newest entry: %v", first)
	}
	if _, err := time.Parse(time.RFC3339Nano, first["started_at"].(string)); err != nil {
		t.Errorf("started_at: %v", err)
	}
	failed := items[1].(map[string]any)
	if failed["status"] != "error" || failed["error"] != "HTTP 503: overloaded" || failed["input_tokens"] != nil {
		t.Errorf("failed entry: %v", failed)
	}
	for q, want := range map[string]float64{"?status=error": 1, "?operation=retain": 2, "?trace_id=t2": 1, "?call_type=llm": 3,
		"?call_type=embedding": 0, "?group=true&limit=1": 2, "?start_date=" + now.Add(-90*time.Second).Format(time.RFC3339): 1} {
		if r := e.call("GET", b+q, "", ""); r.status != 200 || r.body["total"] != want {
			t.Errorf("%s: %d total %v, want %v", q, r.status, r.body["total"], want)
		}
	}
	if r := e.call("GET", b+"?group=true&limit=1&offset=1", "", ""); r.status != 200 || len(r.body["items"].([]any)) != 2 {
		t.Errorf("second run page: %s", r.raw)
	}

	r = e.call("GET", b+"/stats?period=1d", "", "")
	if r.status != 200 || r.body["period"] != "1d" || r.body["trunc"] != "hour" || r.body["start"] == nil {
		t.Fatalf("stats: %d %s", r.status, r.raw)
	}
	var total, success, input float64
	for _, x := range r.body["buckets"].([]any) {
		bk := x.(map[string]any)
		total += bk["total"].(float64)
		success += bk["statuses"].(map[string]any)["success"].(float64)
		tok := bk["tokens"].(map[string]any)
		input += tok["input"].(float64)
		for _, k := range []string{"output", "cached", "thoughts", "total"} {
			if _, ok := tok[k]; !ok {
				t.Errorf("tokens lack %s: %v", k, tok)
			}
		}
	}
	if total != 3 || success != 2 || input != 150 {
		t.Errorf("stats sums: total %v success %v input %v", total, success, input)
	}
	if r := e.call("GET", b+"/stats?operation=reflect", "", ""); r.status != 200 || r.body["period"] != "7d" || len(r.body["buckets"].([]any)) != 1 {
		t.Errorf("reflect stats: %s", r.raw)
	}
	if r := e.call("GET", "/v1/default/banks/other-bank/llm-requests", "", ""); r.status != 200 || r.body["total"] != float64(0) {
		t.Errorf("a bank with no requests: %d %s", r.status, r.raw)
	}

	for q, field := range map[string]string{"?limit=0": "limit", "?limit=501": "limit", "?offset=-1": "offset", "?call_type=chat": "call_type",
		"?group=maybe": "group", "?start_date=yesterday": "start_date", "?end_date=2024-13-01": "end_date", "/stats?period=2d": "period",
		"/stats?call_type=x": "call_type"} {
		r := e.call("GET", b+q, "", "")
		if r.status != 400 || r.errField() != field {
			t.Errorf("%s: %d field %q (%s), want 400 naming %s", q, r.status, r.errField(), r.raw, field)
		}
	}
}

// TestBankLLMHealthIsTraced checks the path end to end: the health
// route's probes, through a recorder's transport, become the bank's LLM
// requests.
func TestBankLLMHealthIsTraced(t *testing.T) {
	t.Parallel()
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object": "list", "data": [{"id": "m1", "object": "model"}]}`)
	}))
	defer fake.Close()
	st := openStore(t)
	rec, err := llmtrace.New(llmtrace.Deps{Store: st}, llmtrace.Config{Provider: "openai", Model: "m1", Retention: time.Hour,
		MaxPerBank: 10, FlushInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rec.Run(context.Background()) }()
	defer func() {
		if err := rec.Stop(context.Background()); err != nil {
			t.Error(err)
		}
		<-done
	}()
	e := newEnv(t, envOpts{st: st, checkLLM: llm.Check(fake.URL+"/v1", "k", rec.Transport(nil))})
	if err := st.EnsureBank(context.Background(), "bank-h"); err != nil {
		t.Fatal(err)
	}
	if r := e.call("POST", "/v1/default/banks/bank-h/health/llm", "", ""); r.status != 200 {
		t.Fatalf("health: %d %s", r.status, r.raw)
	}
	var r resp
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if r = e.call("GET", "/v1/default/banks/bank-h/llm-requests?operation=health_check", "", ""); r.body["total"] == float64(3) {
			break
		}
	}
	if r.body["total"] != float64(3) {
		t.Fatalf("health probes recorded: %s", r.raw)
	}
	items := r.body["items"].([]any)
	one := items[0].(map[string]any)
	if one["status"] != "success" || one["provider"] != "openai" || one["model"] != "m1" || one["trace_id"] != items[2].(map[string]any)["trace_id"] {
		t.Errorf("probe row: %v", one)
	}
}

// TestRetainedFactFindsItsExtractionCall runs an event through the ingest
// pipeline with the LLM extractor (a fake OpenAI server) and the trace
// recorder, then asks the llm-requests route for the calls of one of the
// stored facts: it is the extraction call, which lists the fact in its
// metadata.memory_ids; a memory of no call finds nothing. The pipeline
// and the recorder are stopped before the route is read, so every row is
// written and nothing waits on a clock.
func TestRetainedFactFindsItsExtractionCall(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		calls.Add(1)
		var req struct {
			Messages []struct{ Role, Content string }
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("decode request: %v", err)
		}
		// One fact per message of every chunk the call carries.
		var body struct {
			Chunks []struct {
				ChunkIndex int `json:"chunk_index"`
				Messages   []struct {
					MessageIndex int    `json:"message_index"`
					Name         string `json:"name"`
					Timestamp    string `json:"timestamp"`
					Text         string `json:"text"`
				} `json:"messages"`
			} `json:"chunks"`
		}
		for _, m := range req.Messages {
			if m.Role == "user" {
				if err := json.Unmarshal([]byte(m.Content), &body); err != nil {
					t.Errorf("user message: %v", err)
				}
				break
			}
		}
		var out []map[string]any
		for _, c := range body.Chunks {
			var facts []map[string]any
			for _, m := range c.Messages {
				facts = append(facts, map[string]any{"text": m.Name + " said: " + m.Text, "fact_type": "world", "message_index": m.MessageIndex,
					"entities": []map[string]string{{"name": m.Name, "kind": "person"}}, "causal_relations": []any{},
					"occurred_start": nil, "occurred_end": nil, "mentioned_at": m.Timestamp, "context": "", "tags": []string{}})
			}
			out = append(out, map[string]any{"chunk_index": c.ChunkIndex, "facts": facts})
		}
		content, _ := json.Marshal(map[string]any{"chunks": out})
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "c1", "object": "chat.completion", "model": "fake-model",
			"choices": []map[string]any{{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": string(content)}}},
			"usage":   map[string]any{"prompt_tokens": 80, "completion_tokens": 20, "total_tokens": 100}})
	}))
	defer fake.Close()

	st := openStore(t)
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	rec, err := llmtrace.New(llmtrace.Deps{Store: st}, llmtrace.Config{Provider: "openai", Model: "fake-model", Retention: time.Hour,
		MaxPerBank: 100, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	recDone := make(chan error, 1)
	go func() { recDone <- rec.Run(ctx) }()
	ex, err := llm.New(llm.Deps{Logger: log, Trace: rec}, llm.Config{BaseURL: fake.URL + "/v1", Model: "fake-model", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	emb, err := embed.NewHash(testDim)
	if err != nil {
		t.Fatal(err)
	}
	gate, err := defense.NewGate(defense.GateDeps{Registerer: prometheus.NewRegistry(), Logger: log}, defense.GateConfig{FingerprintSalt: []byte("test-salt-0123456789")})
	if err != nil {
		t.Fatal(err)
	}
	policies, err := pipeline.NewCachedPolicies(pipeline.PolicyDeps{Loader: st}, pipeline.PolicyConfig{Base: defense.DefaultPolicy(), TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipeline.NewStoreResolver(pipeline.StoreResolverDeps{Source: st})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.New(pipeline.Deps{Gate: gate, Policies: policies, Extractor: ex, Embedder: emb, Resolver: res, Store: st,
		DeadLetter: failDeadLetters{t}, Logger: log}, pipeline.Config{Lanes: 1, BatchSize: 8, BatchWait: time.Millisecond, MaxEventBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pDone := make(chan error, 1)
	go func() { pDone <- p.Run(pctx) }()

	at := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	ev, _ := json.Marshal(map[string]any{"bank_id": "bank-x", "event_id": "conv-1/0", "document_id": "conv-1", "messages": []map[string]string{
		{"role": "user", "name": "Alice", "content": "I moved to Lisbon last spring.", "timestamp": at.Format(time.RFC3339)},
		{"role": "user", "name": "Alice", "content": "My sister Ana lives in Porto.", "timestamp": at.Add(time.Minute).Format(time.RFC3339)}}})
	acked := make(chan struct{})
	if err := p.Submit(ctx, pipeline.Message{Record: &kgo.Record{Topic: "events", Key: []byte("conv-1"), Value: ev},
		Ack: func() { close(acked) }}); err != nil {
		t.Fatal(err)
	}
	<-acked // the event's facts are committed
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-pDone; err != nil {
		t.Fatal(err)
	}
	// Stop writes every buffered row.
	if err := rec.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-recDone; err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d LLM calls, want the one extraction call", n)
	}

	facts, _, err := st.ListMemories(ctx, "bank-x", store.MemoryFilter{Limit: 10})
	if err != nil || len(facts) != 2 {
		t.Fatalf("stored facts: %d, %v; want 2", len(facts), err)
	}
	e := newEnv(t, envOpts{st: st})
	b := "/v1/default/banks/bank-x/llm-requests"
	all := e.call("GET", b, "", "")
	if all.status != 200 || all.body["total"] != float64(1) {
		t.Fatalf("all calls: %s", all.raw)
	}
	for _, f := range facts {
		r := e.call("GET", b+"?memory_id="+f.ID.String(), "", "")
		if r.status != 200 || r.body["total"] != float64(1) {
			t.Fatalf("calls of fact %s: %d %s", f.ID, r.status, r.raw)
		}
		call := r.body["items"].([]any)[0].(map[string]any)
		meta := call["metadata"].(map[string]any)
		if call["scope"] != "retain_extract_facts" || call["operation"] != "retain" || meta["document_id"] != "conv-1" {
			t.Errorf("the fact's call: %v", call)
		}
		var created []string
		for _, id := range meta["memory_ids"].([]any) {
			created = append(created, id.(string))
		}
		if !slices.Contains(created, f.ID.String()) || len(created) != 2 {
			t.Errorf("memory_ids %v of the call lack fact %s", created, f.ID)
		}
	}
	if r := e.call("GET", b+"?memory_id="+uuid.NewString(), "", ""); r.status != 200 || r.body["total"] != float64(0) {
		t.Errorf("an unrelated memory's calls: %s", r.raw)
	}
}

// failDeadLetters fails the test: the event must not be dead-lettered.
type failDeadLetters struct{ t *testing.T }

func (f failDeadLetters) DeadLetter(_ context.Context, _ *kgo.Record, e *event.Error, bank string) error {
	f.t.Errorf("event of bank %s dead-lettered: %v", bank, e)
	return nil
}
