package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

// countTrend labels by evidence count, enough to see when stats refresh.
func countTrend(ev []time.Time) string { return fmt.Sprintf("n=%d", len(ev)) }

func factIDs(t *testing.T, st *store.Store, bank string) []uuid.UUID {
	t.Helper()
	facts, err := st.PendingFacts(context.Background(), bank, 100)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]uuid.UUID, len(facts))
	for i, f := range facts {
		ids[i] = f.ID
	}
	return ids
}

// threePending returns a fresh store with three pending facts of bank a,
// stored at the returned time.
func threePending(t *testing.T) (*store.Store, []uuid.UUID, time.Time) {
	t.Helper()
	st := migrated(t, 4)
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	persistFacts(t, st, "a", 3, at)
	ids := factIDs(t, st, "a")
	if len(ids) != 3 {
		t.Fatalf("pending = %d", len(ids))
	}
	return st, ids, at
}

func TestApplyConsolidationMergesNearDuplicates(t *testing.T) {
	t.Parallel()
	st, ids, at := threePending(t)
	ctx := context.Background()
	ev := func(id uuid.UUID) store.ObsEvidence {
		return store.ObsEvidence{MemoryID: id, Quote: "q", Relevance: 1, At: at}
	}
	older, newer := store.DeriveID("a", "obs", "1"), store.DeriveID("a", "obs", "2")
	// The first observation rests on two facts.
	out, err := st.ApplyConsolidation(ctx, store.ConsolidationApply{BankID: "a", FactIDs: ids[:2], Now: at, MergeThreshold: 0.97, Trend: countTrend,
		Edits: []store.ObsEdit{{Kind: store.EditCreate, ObservationID: older, Text: "likes tea", Embedding: []float32{1, 0, 0, 0},
			Evidence: []store.ObsEvidence{ev(ids[0]), ev(ids[1])}}}})
	if err != nil || out.Created != 1 || out.Evidence != 2 {
		t.Fatalf("first: %+v %v", out, err)
	}
	// A near-identical observation (cosine 0.995) in another tag scope is
	// left alone; in the same scope it is merged into the one with more
	// evidence.
	if _, err := st.Pool().Exec(ctx, `INSERT INTO memory_units (id, bank_id, fact_type, text, embedding, mentioned_at, tags, idempotency_key)
		VALUES ($1, 'a', 'observation', 'likes tea (tagged)', '[1,0.1,0,0]', now(), '{x}', 'other-scope')`, uuid.New()); err != nil {
		t.Fatal(err)
	}
	out, err = st.ApplyConsolidation(ctx, store.ConsolidationApply{BankID: "a", FactIDs: ids[2:], Now: at.Add(time.Hour), MergeThreshold: 0.97, Trend: countTrend,
		Edits: []store.ObsEdit{{Kind: store.EditCreate, ObservationID: newer, Text: "enjoys tea", Embedding: []float32{1, 0.1, 0, 0},
			Reason: "new", Evidence: []store.ObsEvidence{ev(ids[2])}}}})
	if err != nil || !out.Applied || out.Created != 1 || out.Merged != 1 {
		t.Fatalf("second: %+v %v", out, err)
	}
	var state, reason, trend string
	var proofs int
	if err := st.Pool().QueryRow(ctx, `SELECT state, COALESCE(invalid_reason, '') FROM memory_units WHERE id = $1`, newer).Scan(&state, &reason); err != nil {
		t.Fatal(err)
	}
	if state != "invalidated" || reason != "merged into near-duplicate observation "+older.String() {
		t.Fatalf("merged observation: %s %q", state, reason)
	}
	if err := st.Pool().QueryRow(ctx, `SELECT proof_count, trend FROM memory_units WHERE id = $1`, older).Scan(&proofs, &trend); err != nil {
		t.Fatal(err)
	}
	if proofs != 3 || trend != "n=3" {
		t.Fatalf("survivor proof_count %d trend %q", proofs, trend)
	}
	var other int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM memory_units WHERE idempotency_key = 'other-scope' AND state = 'valid'`).Scan(&other); err != nil || other != 1 {
		t.Fatalf("other-scope observation touched: %d %v", other, err)
	}
	var merges int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM observation_history WHERE action = 'merge'`).Scan(&merges); err != nil || merges != 2 {
		t.Fatalf("merge history rows: %d %v", merges, err)
	}
	// Trends age: a refresh rewrites only the labels that changed.
	// The raw-inserted observation has no label yet; the survivor's is
	// current.
	n, err := st.RefreshTrends(ctx, "a", countTrend)
	if err != nil || n != 1 {
		t.Fatalf("first refresh: %d %v", n, err)
	}
	if n, err = st.RefreshTrends(ctx, "a", countTrend); err != nil || n != 0 {
		t.Fatalf("refresh with unchanged labels: %d %v", n, err)
	}
	n, err = st.RefreshTrends(ctx, "a", func([]time.Time) string { return "STALE" })
	if err != nil || n != 2 {
		t.Fatalf("refresh: %d %v", n, err)
	}
}

func TestObservationCandidatesStayInScope(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	ins := func(bank, text, key string, tags []string, vec string, slot string) uuid.UUID {
		id := uuid.New()
		if _, err := st.Pool().Exec(ctx, `INSERT INTO banks (id) VALUES ($1) ON CONFLICT DO NOTHING`, bank); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Pool().Exec(ctx, `INSERT INTO memory_units (id, bank_id, fact_type, text, embedding, mentioned_at, tags, metadata, idempotency_key)
			VALUES ($1, $2, 'observation', $3, $4::halfvec, now(), $5, jsonb_build_object('slot', $6::text), $7)`, id, bank, text, vec, tags, slot, key); err != nil {
			t.Fatal(err)
		}
		return id
	}
	want := ins("a", "Alice lives in Beijing", "k1", []string{"p", "q"}, "[1,0,0,0]", "alice|residence")
	ins("a", "Alice lives in Beijing", "k2", []string{"p"}, "[1,0,0,0]", "alice|residence")
	ins("b", "Alice lives in Beijing", "k3", []string{"p", "q"}, "[1,0,0,0]", "alice|residence")
	kw := ins("a", "Beijing weather is cold", "k4", []string{"q", "p"}, "[0,1,0,0]", "")
	lists, err := st.ObservationCandidates(ctx, store.CandidateQuery{BankID: "a", Tags: []string{"q", "p"}, Embedding: []float32{1, 0, 0, 0},
		Terms: []string{"beijing"}, Slot: "alice|residence", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(lists.Semantic) != 2 || lists.Semantic[0].ID != want || lists.Semantic[0].Similarity < 0.99 {
		t.Fatalf("semantic = %+v", lists.Semantic)
	}
	if len(lists.Slot) != 1 || lists.Slot[0].ID != want || lists.Slot[0].Metadata["slot"] != "alice|residence" {
		t.Fatalf("slot = %+v", lists.Slot)
	}
	if len(lists.Keyword) != 2 || (lists.Keyword[0].ID != kw && lists.Keyword[1].ID != kw) {
		t.Fatalf("keyword = %+v", lists.Keyword)
	}
}

// Consolidating facts never writes their memory_units rows (migration
// 012): the time goes to unit_consolidations, and clearing observations
// puts the facts back on the queue.
func TestConsolidationLeavesFactRowsAlone(t *testing.T) {
	t.Parallel()
	st, ids, at := threePending(t)
	ctx := context.Background()
	rowVersions := func() []string {
		rows, err := st.Pool().Query(ctx, `SELECT xmin::text || ctid::text FROM memory_units WHERE bank_id = 'a' AND fact_type <> 'observation' ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		return out
	}
	count := func(q string) int {
		var n int
		if err := st.Pool().QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := rowVersions()
	obs := store.DeriveID("a", "obs", "1")
	out, err := st.ApplyConsolidation(ctx, store.ConsolidationApply{BankID: "a", FactIDs: ids, Now: at, Trend: countTrend,
		Edits: []store.ObsEdit{{Kind: store.EditCreate, ObservationID: obs, Text: "likes tea", Embedding: []float32{1, 0, 0, 0},
			Evidence: []store.ObsEvidence{{MemoryID: ids[0], Quote: "q", Relevance: 1, At: at}}}}})
	if err != nil || !out.Applied {
		t.Fatalf("apply: %+v %v", out, err)
	}
	if after := rowVersions(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("consolidation rewrote fact rows: %v, then %v", before, after)
	}
	if n := count(`SELECT count(*) FROM unit_consolidations WHERE bank_id = 'a' AND consolidated_at = '2026-11-01T10:00:00Z'`); n != 3 {
		t.Fatalf("consolidation records = %d", n)
	}
	if n := count(`SELECT count(*) FROM consolidation_queue WHERE bank_id = 'a'`); n != 0 {
		t.Fatalf("queue after apply = %d", n)
	}
	hs, err := st.BankHindsightStats(ctx, "a")
	if err != nil || hs.LastConsolidatedAt == nil || !hs.LastConsolidatedAt.Equal(at) {
		t.Fatalf("last_consolidated_at = %v, %v", hs.LastConsolidatedAt, err)
	}
	var opts *string
	if err := st.Pool().QueryRow(ctx, `SELECT reloptions::text FROM pg_class WHERE oid = 'memory_units'::regclass`).Scan(&opts); err != nil || opts != nil {
		t.Fatalf("memory_units storage options = %v, %v; want the defaults", opts, err)
	}
	// One memory's observations cleared: that memory alone is pending again.
	if _, err := st.ClearMemoryObservations(ctx, "a", ids[0]); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM consolidation_queue WHERE bank_id = 'a'`); n != 1 {
		t.Fatalf("queue after clearing one memory's observations = %d", n)
	}
	// All observations cleared: every fact is pending again.
	if _, err := st.ClearObservations(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM consolidation_queue WHERE bank_id = 'a'`); n != 3 {
		t.Fatalf("queue after clearing observations = %d", n)
	}
	if n := count(`SELECT count(*) FROM unit_consolidations WHERE bank_id = 'a'`); n != 0 {
		t.Fatalf("consolidation records after clearing = %d", n)
	}
	// Held until the bank's next consolidation run (migration 013).
	if got := factIDs(t, st, "a"); len(got) != 0 {
		t.Fatalf("pending facts after clearing = %d, want 0 until the next run", len(got))
	}
	if err := st.ReleaseHeldConsolidation(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if got := factIDs(t, st, "a"); len(got) != 3 {
		t.Fatalf("pending facts after a consolidation was asked for = %d", len(got))
	}
}

// A clear of a bank's observations is not undone by a consolidation in
// flight: a batch adjudicated before the clear finds its facts held and
// writes nothing, and the worker sees nothing to do (no backlog) until the
// bank's next run: a fact stored in the bank releases the held ones, one of
// another bank does not.
func TestClearObservationsHoldsConsolidationUntilNextRun(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	persistFacts(t, st, "a", 2, at)
	inFlight := factIDs(t, st, "a") // a worker read these, and adjudicates
	if len(inFlight) != 2 {
		t.Fatalf("pending = %d", len(inFlight))
	}
	if _, err := st.ClearObservations(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	out, err := st.ApplyConsolidation(ctx, store.ConsolidationApply{BankID: "a", FactIDs: inFlight, Now: at, Trend: countTrend,
		Edits: []store.ObsEdit{{Kind: store.EditCreate, ObservationID: store.DeriveID("a", "obs", "late"), Text: "late", Embedding: []float32{1, 0, 0, 0},
			Evidence: []store.ObsEvidence{{MemoryID: inFlight[0], Quote: "q", Relevance: 1, At: at}}}}})
	if err != nil || out.Applied {
		t.Fatalf("a batch read before the clear: %+v, %v; want not applied", out, err)
	}
	var obs int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM memory_units WHERE bank_id = 'a' AND fact_type = 'observation'`).Scan(&obs); err != nil || obs != 0 {
		t.Fatalf("observations after the clear = %d (%v)", obs, err)
	}
	banks, err := st.BanksWithBacklog(ctx)
	if err != nil || len(banks) != 0 {
		t.Fatalf("banks with backlog after the clear = %v, %v", banks, err)
	}
	persistFacts(t, st, "b", 1, at)
	if got := factIDs(t, st, "a"); len(got) != 0 {
		t.Fatalf("another bank's fact released %d held facts", len(got))
	}
	persistFacts(t, st, "a", 1, at.Add(time.Hour))
	if got := factIDs(t, st, "a"); len(got) != 3 {
		t.Fatalf("pending after the bank's next fact = %d, want 3", len(got))
	}
}

// TestRefreshTrendsKeepsAConcurrentConsolidation: the scheduled trend
// refresh reads a bank's observations, labels them, then writes the labels
// that changed. A consolidation that adds evidence to an observation in
// between writes the label of the new evidence; the refresh must not put
// back a label computed from the old. The consolidation runs inside the
// refresh's labelling, after its read.
func TestRefreshTrendsKeepsAConcurrentConsolidation(t *testing.T) {
	t.Parallel()
	st, ids, at := threePending(t)
	ctx := context.Background()
	ev := func(id uuid.UUID) store.ObsEvidence {
		return store.ObsEvidence{MemoryID: id, Quote: "q", Relevance: 1, At: at}
	}
	obs := store.DeriveID("a", "obs", "1")
	if _, err := st.ApplyConsolidation(ctx, store.ConsolidationApply{BankID: "a", FactIDs: ids[:1], Now: at, Trend: countTrend,
		Edits: []store.ObsEdit{{Kind: store.EditCreate, ObservationID: obs, Text: "likes tea", Embedding: []float32{1, 0, 0, 0},
			Evidence: []store.ObsEvidence{ev(ids[0])}}}}); err != nil {
		t.Fatal(err)
	}
	applied := false
	aged := func(times []time.Time) string {
		if !applied {
			applied = true
			out, err := st.ApplyConsolidation(ctx, store.ConsolidationApply{BankID: "a", FactIDs: ids[1:2], Now: at.Add(time.Hour), Trend: countTrend,
				Edits: []store.ObsEdit{{Kind: store.EditEvidence, ObservationID: obs, Evidence: []store.ObsEvidence{ev(ids[1])}}}})
			if err != nil || !out.Applied {
				t.Errorf("the consolidation during the refresh: %+v %v", out, err)
			}
		}
		return "aged " + countTrend(times)
	}
	if _, err := st.RefreshTrends(ctx, "a", aged); err != nil {
		t.Fatal(err)
	}
	var trend string
	var proofs int
	if err := st.Pool().QueryRow(ctx, `SELECT trend, proof_count FROM memory_units WHERE id = $1`, obs).Scan(&trend, &proofs); err != nil {
		t.Fatal(err)
	}
	if proofs != 2 || trend != "n=2" {
		t.Fatalf("after the refresh: proof_count %d, trend %q; want 2 and the consolidation's n=2", proofs, trend)
	}
}
