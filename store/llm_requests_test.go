package store_test

import (
	"context"
	"encoding/json"
	"slices"
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
	reqs[0].Metadata = json.RawMessage(`{"document_id": "doc-1", "source_memory_ids": ["m-1"]}`)
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

// TestLLMRequestsByMemory stores two chunks' facts, an observation with
// evidence, and the calls of their retain and consolidation: the
// memory_id filter finds the extraction call of a fact's chunk (created)
// and the consolidation call that decided it (consumed), an
// observation's consolidation call, and nothing for an unrelated memory;
// read back, each call lists the memories it created as memory_ids.
func TestLLMRequestsByMemory(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	chunkA, chunkB, chunkX := store.DeriveID("tm", "e1", "chunk", "0"), store.DeriveID("tm", "e2", "chunk", "0"), store.DeriveID("tm-x", "e1", "chunk", "0")
	f1, f2, f3, other := store.DeriveID("tm", "f1"), store.DeriveID("tm", "f2"), store.DeriveID("tm", "f3"), store.DeriveID("tm-x", "f1")
	obs := store.DeriveID("tm", "obs")
	vec := []float32{1, 0, 0, 0}
	fact := func(id, chunk uuid.UUID, msg int, key string) store.FactRow {
		return store.FactRow{ID: id, FactType: "world", Text: "fact " + key, Embedding: vec, MentionedAt: at, IdemKey: key, ChunkID: chunk, MessageIndex: msg}
	}
	evs := []store.EventRecord{
		{BankID: "tm", EventKey: "e1", DocumentID: "d1", Chunks: []store.ChunkRow{{ID: chunkA, Text: "two facts", StartedAt: at}},
			Facts: []store.FactRow{fact(f2, chunkA, 1, "f2"), fact(f1, chunkA, 0, "f1")}},
		{BankID: "tm", EventKey: "e2", DocumentID: "d2", Chunks: []store.ChunkRow{{ID: chunkB, Text: "one fact", StartedAt: at}},
			Facts: []store.FactRow{fact(f3, chunkB, 0, "f3")}},
		// Another bank's fact of the same chunk id is not the call's.
		{BankID: "tm-x", EventKey: "e1", DocumentID: "d1", Chunks: []store.ChunkRow{{ID: chunkX, Text: "elsewhere", StartedAt: at}},
			Facts: []store.FactRow{fact(other, chunkX, 0, "x1")}},
	}
	if _, err := st.PersistBatch(ctx, evs); err != nil {
		t.Fatal(err)
	}
	// The observation f1 is evidence of, as the consolidation worker writes it.
	if _, err := st.Pool().Exec(ctx, `INSERT INTO memory_units (id, bank_id, fact_type, text, mentioned_at, idempotency_key)
		VALUES ($1, 'tm', 'observation', 'an observation', $2, $3)`, obs, at, obs.String()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `INSERT INTO observation_evidence (observation_id, memory_id, quote, evidence_at) VALUES ($1, $2, 'q', $3)`,
		obs, f1, at); err != nil {
		t.Fatal(err)
	}
	meta := func(m map[string]any) json.RawMessage {
		b, _ := json.Marshal(m)
		return b
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	extractA := llmReq("tm", "retain", "retain_extract_facts", "success", "t1", now.Add(-4*time.Minute), 10, 1)
	extractA.Metadata = meta(map[string]any{"document_id": "d1", "chunk_ids": []uuid.UUID{chunkA}})
	extractB := llmReq("tm", "retain", "retain_extract_facts", "success", "t2", now.Add(-3*time.Minute), 10, 1)
	extractB.Metadata = meta(map[string]any{"chunk_ids": []uuid.UUID{chunkB, chunkX}})
	consolidate := llmReq("tm", "consolidation", "consolidation", "success", "t3", now.Add(-2*time.Minute), 10, 1)
	consolidate.Metadata = meta(map[string]any{"source_memory_ids": []uuid.UUID{f1, f2}})
	reflect := llmReq("tm", "reflect", "reflect", "success", "t4", now.Add(-time.Minute), 10, 1)
	if err := st.AddLLMRequests(ctx, []store.LLMRequest{extractA, extractB, consolidate, reflect}); err != nil {
		t.Fatal(err)
	}
	ids := func(f store.LLMRequestFilter) []uuid.UUID {
		t.Helper()
		f.Limit = 50
		items, total, err := st.ListLLMRequests(ctx, "tm", f)
		if err != nil {
			t.Fatal(err)
		}
		if total != len(items) {
			t.Errorf("%+v: total %d for %d items", f, total, len(items))
		}
		var out []uuid.UUID
		for _, q := range items {
			out = append(out, q.ID)
		}
		return out
	}
	for name, c := range map[string]struct {
		memory uuid.UUID
		want   []uuid.UUID
	}{
		"a fact: its chunk's call and the call that consumed it": {f1, []uuid.UUID{consolidate.ID, extractA.ID}},
		"a fact of the same chunk":                               {f2, []uuid.UUID{consolidate.ID, extractA.ID}},
		"a fact of another chunk":                                {f3, []uuid.UUID{extractB.ID}},
		"an observation: the call that decided its evidence":     {obs, []uuid.UUID{consolidate.ID}},
		"another bank's fact":                                    {other, nil},
		"an unrelated memory":                                    {uuid.New(), nil},
	} {
		if got := ids(store.LLMRequestFilter{MemoryID: c.memory.String()}); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
		if got := ids(store.LLMRequestFilter{MemoryID: c.memory.String(), Group: true}); !slices.Equal(got, c.want) {
			t.Errorf("%s, by run: %v, want %v", name, got, c.want)
		}
	}
	if got := ids(store.LLMRequestFilter{MemoryID: "not-a-uuid"}); got != nil {
		t.Errorf("a memory_id that is no uuid: %v", got)
	}

	items, _, err := st.ListLLMRequests(ctx, "tm", store.LLMRequestFilter{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	created := map[uuid.UUID][]uuid.UUID{}
	for _, q := range items {
		var m struct {
			MemoryIDs []uuid.UUID `json:"memory_ids"`
			Document  string      `json:"document_id"`
		}
		if err := json.Unmarshal(q.Metadata, &m); err != nil {
			t.Fatalf("metadata %s: %v", q.Metadata, err)
		}
		created[q.ID] = m.MemoryIDs
		if q.ID == extractA.ID && m.Document != "d1" {
			t.Errorf("the stored metadata is kept: %s", q.Metadata)
		}
		if q.ID == reflect.ID && string(q.Metadata) != "{}" {
			t.Errorf("a call that created nothing has no memory_ids: %s", q.Metadata)
		}
	}
	for id, want := range map[uuid.UUID][]uuid.UUID{extractA.ID: {f1, f2}, extractB.ID: {f3}, consolidate.ID: {obs}, reflect.ID: nil} {
		if !slices.Equal(created[id], want) {
			t.Errorf("memory_ids of %s: %v, want %v (message order)", id, created[id], want)
		}
	}
}
