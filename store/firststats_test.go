package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/memstream/memstream/store"
)

// TestFirstFactsAnalyzeTheRecallTables checks that a store that has just
// stored its first few hundred facts into a never-analyzed memory_units
// gives it planner statistics itself (a manual ANALYZE: last_analyze, which
// autovacuum never sets), and that a batch below the threshold does not.
func TestFirstFactsAnalyzeTheRecallTables(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	batch := func(ev string, n int) []store.EventRecord {
		var facts []store.FactRow
		for i := range n {
			key := fmt.Sprintf("%s#f%d", ev, i)
			facts = append(facts, store.FactRow{ID: store.DeriveID("b1", key), FactType: "world", Text: "fact " + key,
				Embedding: []float32{1, float32(i), 0, 0}, MentionedAt: at, IdemKey: key})
		}
		return []store.EventRecord{{BankID: "b1", EventKey: ev, DocumentID: "d-" + ev, Facts: facts}}
	}
	analyzed := func() bool {
		var ok bool
		if err := st.Pool().QueryRow(ctx, `SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relid = 'memory_units'::regclass`).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if _, err := st.PersistBatch(ctx, batch("e1", 100)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if analyzed() {
		t.Fatal("memory_units analyzed after 100 facts, before the threshold")
	}
	if _, err := st.PersistBatch(ctx, batch("e2", 450)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !analyzed() {
		if time.Now().After(deadline) {
			t.Fatal("memory_units not analyzed 20 s after 550 facts were stored")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
