package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/memstream/memstream/store"
)

// An event that replaces its document deletes what earlier events of it
// stored in the transaction that stores its own content; a replay of it
// deletes nothing (not what was appended since); the batch's earlier
// events of the document are replaced too, their events still claimed.
func TestPersistReplacesDocumentAtomically(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	rec := func(doc, key string, replace bool) store.EventRecord {
		return store.EventRecord{BankID: "b", EventKey: key, DocumentID: doc, ReplaceDocument: replace,
			Chunks: []store.ChunkRow{{ID: store.DeriveID("b", key, "c0"), Text: "text of " + key, StartedAt: time.Now()}}}
	}
	persist := func(recs ...store.EventRecord) {
		t.Helper()
		if _, err := st.PersistBatch(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
	chunks := func(doc string) []string {
		t.Helper()
		cs, _, err := st.ListChunks(ctx, "b", doc, 100, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			out = append(out, c.Text)
		}
		slices.Sort(out)
		return out
	}
	persist(rec("d", "old-1", false), rec("d", "old-2", false))
	persist(rec("d", "new", true))
	if got := chunks("d"); !slices.Equal(got, []string{"text of new"}) {
		t.Fatalf("after the replace: %v", got)
	}
	persist(rec("d", "later", false))
	persist(rec("d", "new", true)) // a replay
	if got := chunks("d"); !slices.Equal(got, []string{"text of later", "text of new"}) {
		t.Fatalf("after a replay of the replace: %v", got)
	}
	// One batch: an append, then a replace of the same document, then
	// an append: the first is replaced, the last kept.
	persist(rec("e", "e-1", false))
	persist(rec("e", "e-2", false), rec("e", "e-3", true), rec("e", "e-4", false), rec("x", "x-1", false))
	if got := chunks("e"); !slices.Equal(got, []string{"text of e-3", "text of e-4"}) {
		t.Fatalf("batch with a replace: %v", got)
	}
	if got := chunks("x"); len(got) != 1 {
		t.Fatalf("another document of the batch: %v", got)
	}
	res, err := st.PersistBatch(ctx, []store.EventRecord{rec("e", "e-2", false)})
	if err != nil || res.Duplicates != 1 {
		t.Fatalf("the replaced event of the batch is not claimed: %+v, %v", res, err)
	}
}
