package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/memstream/memstream/store"
)

// A fact's reply_to is stored at ingest and read back with the memory and
// the pending fact, so whatever embeds it again can embed the same quote.
// A text edit whose vector was made with another quote than the stored
// one (a rescan redacted it meanwhile) is refused and changes nothing.
func TestReplyToStoredAndGuardsTextEdits(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	const reply = "In reply to Ana: Which wine goes with lamb?"
	id := store.DeriveID("b1", "answer")
	vec := []float32{1, 0, 0, 0}
	if _, err := st.PersistBatch(ctx, []store.EventRecord{{BankID: "b1", EventKey: "e1", DocumentID: "d1",
		Facts: []store.FactRow{{ID: id, FactType: "experience", Text: "A Syrah.", Context: "chat\n" + reply, ReplyTo: reply,
			Embedding: vec, MentionedAt: at, IdemKey: "answer"}}}}); err != nil {
		t.Fatal(err)
	}
	m, err := st.GetMemory(ctx, "b1", id)
	if err != nil || m.ReplyTo != reply {
		t.Fatalf("memory reply_to %q (%v), want %q", m.ReplyTo, err, reply)
	}
	pending, err := st.PendingFacts(ctx, "b1", 10)
	if err != nil || len(pending) != 1 || pending[0].ReplyTo != reply {
		t.Fatalf("pending facts %+v (%v): want the one fact with its reply_to", pending, err)
	}

	text := "A Grenache."
	stale := store.MemoryEdit{Text: &text, Embedding: []float32{0, 1, 0, 0}, EmbeddedReplyTo: "In reply to Ana: something else"}
	if _, err := st.EditMemory(ctx, "b1", id, stale); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("edit embedded with another quote: %v, want ErrConflict", err)
	}
	if m, _ := st.GetMemory(ctx, "b1", id); m.Text != "A Syrah." {
		t.Fatalf("a refused edit changed the text to %q", m.Text)
	}
	ok := stale
	ok.EmbeddedReplyTo = reply
	if m, err := st.EditMemory(ctx, "b1", id, ok); err != nil || m.Text != text || m.ReplyTo != reply {
		t.Fatalf("edit embedded with the stored quote: %+v %v", m, err)
	}
}
