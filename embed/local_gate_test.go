package embed

import (
	"context"
	"runtime"
	"testing"

	"github.com/memstream/memstream/priority"
)

// On a two-core machine one document pass runs at a time: a waiting
// ingest (live) batch goes before a waiting consolidation (background)
// one, and a query never waits for the document slot.
func TestDocumentPassesLiveFirst(t *testing.T) {
	t.Parallel()
	l := &Local{passSlots: newPassSlots(2)}
	bg := priority.WithClass(context.Background(), priority.Background)
	hold, err := l.acquire(bg, Document)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 2)
	go func() {
		rel, err := l.acquire(bg, Document)
		if err == nil {
			order <- "consolidation"
			rel()
		}
	}()
	for _, b := l.docs.Waiting(); b == 0; _, b = l.docs.Waiting() {
		runtime.Gosched()
	}
	go func() {
		rel, err := l.acquire(context.Background(), Document)
		if err == nil {
			order <- "ingest"
			rel()
		}
	}()
	for lv, _ := l.docs.Waiting(); lv == 0; lv, _ = l.docs.Waiting() {
		runtime.Gosched()
	}
	// The query slot is free while both document batches wait.
	q, err := l.acquire(context.Background(), Query)
	if err != nil {
		t.Fatal(err)
	}
	q()
	hold()
	if first, second := <-order, <-order; first != "ingest" || second != "consolidation" {
		t.Fatalf("document passes ran %s, then %s", first, second)
	}
}
