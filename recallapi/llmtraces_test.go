package recallapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/llm"
	"github.com/memstream/memstream/llmtrace"
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
