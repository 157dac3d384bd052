package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

func llmReq(bank, op, scope, status, trace string, at time.Time, in, out int) store.LLMRequest {
	return store.LLMRequest{ID: uuid.New(), BankID: bank, Operation: op, Scope: scope, TraceID: trace, SpanID: uuid.NewString(),
		Provider: "openai", Model: "m", Status: status, StartedAt: at, EndedAt: at.Add(120 * time.Millisecond),
		InputTokens: in, OutputTokens: out, TotalTokens: in + out}
}

// TestLLMRequestsListFilterStatsPrune writes requests of two banks and
// reads them back through every filter, the grouped pages, the stats and
// both prunes; a request of a missing bank is dropped, not an error.
func TestLLMRequestsListFilterStatsPrune(t *testing.T) {
	t.Parallel()
	st := migrated(t, 16)
	ctx := context.Background()
	for _, b := range []string{"tr-a", "tr-b"} {
		if err := st.EnsureBank(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	reqs := []store.LLMRequest{
		llmReq("tr-a", "retain", "retain_extract_facts", "success", "t1", now.Add(-5*time.Minute), 100, 20),
		llmReq("tr-a", "retain", "retain_extract_facts", "error", "t1", now.Add(-4*time.Minute), 0, 0),
		llmReq("tr-a", "reflect", "reflect", "success", "t2", now.Add(-3*time.Minute), 50, 10),
		llmReq("tr-a", "reflect", "reflect", "success", "t2", now.Add(-2*time.Minute), 60, 15),
		llmReq("tr-a", "consolidation", "consolidation", "success", "", now.Add(-time.Minute), 30, 5),
		llmReq("tr-b", "reflect", "reflect", "success", "t3", now.Add(-time.Minute), 1, 1),
		llmReq("no-such-bank", "reflect", "reflect", "success", "t4", now, 1, 1),
	}
	reqs[1].Error = "llm server error (HTTP 503): overloaded"
	reqs[0].Metadata = json.RawMessage(`{"document_id": "doc-1", "memory_ids": ["m-1"]}`)
	if err := st.AddLLMRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	// A retried batch writes nothing twice.
	if err := st.AddLLMRequests(ctx, reqs[:2]); err != nil {
		t.Fatal(err)
	}

	list := func(f store.LLMRequestFilter) ([]store.LLMRequest, int) {
		t.Helper()
		if f.Limit == 0 {
			f.Limit = 50
		}
		items, total, err := st.ListLLMRequests(ctx, "tr-a", f)
		if err != nil {
			t.Fatal(err)
		}
		return items, total
	}
	items, total := list(store.LLMRequestFilter{})
	if total != 5 || len(items) != 5 || !items[0].StartedAt.Equal(now.Add(-time.Minute)) {
		t.Fatalf("all: total %d, %d items, first at %v; want 5, newest first", total, len(items), items[0].StartedAt)
	}
	e := items[3]
	if e.Status != "error" || e.Error == "" || e.InputTokens != 0 || e.DurationMS() != 120 || string(e.Metadata) != "{}" {
		t.Errorf("error row read back as %+v", e)
	}
	if items[4].TotalTokens != 120 || items[0].TraceID != "" {
		t.Errorf("tokens %d, untraced trace %q", items[3].TotalTokens, items[0].TraceID)
	}
	start, end := now.Add(-3*time.Minute), now.Add(-time.Minute)
	for name, c := range map[string]struct {
		f    store.LLMRequestFilter
		want int
	}{
		"status":        {store.LLMRequestFilter{Status: "error"}, 1},
		"operation":     {store.LLMRequestFilter{Operation: "reflect"}, 2},
		"scope":         {store.LLMRequestFilter{Scope: "consolidation"}, 1},
		"provider":      {store.LLMRequestFilter{Provider: "other"}, 0},
		"trace":         {store.LLMRequestFilter{TraceID: "t1"}, 2},
		"call type llm": {store.LLMRequestFilter{CallType: "llm"}, 5},
		"embedding":     {store.LLMRequestFilter{CallType: "embedding"}, 0},
		"document":      {store.LLMRequestFilter{DocumentID: "doc-1"}, 1},
		"memory":        {store.LLMRequestFilter{MemoryID: "m-1"}, 1},
		"dates":         {store.LLMRequestFilter{Start: &start, End: &end}, 2},
	} {
		if _, n := list(c.f); n != c.want {
			t.Errorf("%s: total %d, want %d", name, n, c.want)
		}
	}
	// Pages: by request, then by run (t1, t2 and the untraced one).
	if items, n := list(store.LLMRequestFilter{Limit: 2, Offset: 4}); n != 5 || len(items) != 1 {
		t.Errorf("last page: total %d, %d items", n, len(items))
	}
	if items, n := list(store.LLMRequestFilter{Limit: 2, Offset: 9}); n != 5 || len(items) != 0 {
		t.Errorf("past the end: total %d, %d items; want the total still", n, len(items))
	}
	items, n := list(store.LLMRequestFilter{Group: true, Limit: 2})
	if n != 3 || len(items) != 3 || items[1].TraceID != "t2" || items[2].TraceID != "t2" {
		t.Errorf("first page of runs: total %d, %+v; want the untraced request and run t2 whole", n, items)
	}
	if items, n := list(store.LLMRequestFilter{Group: true, Limit: 2, Offset: 2}); n != 3 || len(items) != 2 || items[0].TraceID != "t1" {
		t.Errorf("second page of runs: total %d, %d items", n, len(items))
	}

	buckets, err := st.LLMRequestStats(ctx, "tr-a", "", "", "day", now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	sum := store.LLMRequestBucket{Statuses: map[string]int{}}
	for _, b := range buckets {
		for k, v := range b.Statuses {
			sum.Statuses[k] += v
		}
		sum.Total += b.Total
		sum.Tokens.Input += b.Tokens.Input
		sum.Tokens.Total += b.Tokens.Total
	}
	if sum.Total != 5 || sum.Statuses["success"] != 4 || sum.Statuses["error"] != 1 || sum.Tokens.Input != 240 || sum.Tokens.Total != 290 {
		t.Errorf("stats sum %+v", sum)
	}
	buckets, err = st.LLMRequestStats(ctx, "tr-a", "reflect", "llm", "hour", now.Add(-time.Hour))
	reflected := 0
	for _, b := range buckets {
		reflected += b.Statuses["success"]
	}
	if err != nil || reflected != 2 {
		t.Errorf("reflect stats %+v %v; want 2 successes", buckets, err)
	}

	// Age: only the first request started before 4m30s ago.
	pruned, err := st.PruneLLMRequests(ctx, now.Add(-270*time.Second), nil, 0)
	if err != nil || pruned != 1 {
		t.Fatalf("age prune: %d, %v; want 1", pruned, err)
	}
	// Cap: tr-a keeps its 2 newest, tr-b is not named and keeps its own.
	pruned, err = st.PruneLLMRequests(ctx, now.Add(-time.Hour), []string{"tr-a"}, 2)
	if err != nil || pruned != 2 {
		t.Fatalf("cap prune: %d, %v; want 2", pruned, err)
	}
	if items, n := list(store.LLMRequestFilter{}); n != 2 || items[1].Operation != "reflect" {
		t.Errorf("after the cap: %d left, %+v", n, items)
	}
	if _, n, _ := st.ListLLMRequests(ctx, "tr-b", store.LLMRequestFilter{Limit: 10}); n != 1 {
		t.Errorf("tr-b: %d left, want 1", n)
	}
}

// TestLLMRequestsRacingBankDelete writes a batch of requests while one of
// their banks is being deleted: the request of the deleted bank is dropped
// and the others are stored. The delete is held uncommitted until the
// batch waits on it, then committed.
func TestLLMRequestsRacingBankDelete(t *testing.T) {
	t.Parallel()
	st := migrated(t, 16)
	ctx := context.Background()
	for _, b := range []string{"gone", "kept"} {
		if err := st.EnsureBank(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	hold, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx)
	if _, err := hold.Exec(ctx, `DELETE FROM banks WHERE id = 'gone'`); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	done := make(chan error, 1)
	go func() {
		done <- st.AddLLMRequests(ctx, []store.LLMRequest{llmReq("gone", "reflect", "reflect", "success", "", now, 1, 1),
			llmReq("kept", "reflect", "reflect", "success", "", now, 1, 1)})
	}()
	waitForBlocked(t, st, hold, `INSERT INTO llm_requests%`)
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("a batch racing the delete of one of its banks: %v", err)
	}
	var kept int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM llm_requests WHERE bank_id = 'kept'`).Scan(&kept); err != nil || kept != 1 {
		t.Fatalf("%d requests of the kept bank (%v), want 1", kept, err)
	}
}
