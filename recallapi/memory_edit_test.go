package recallapi

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pgvector/pgvector-go"

	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/store"
)

// A memory's new text is embedded as ingest embeds a fact: the stored
// quote of the turn it answers, then the text (extract.EmbeddingTextOf).
// Embedding the new text alone would drop the request from the answer's
// vector, and a question about the request would no longer find it. A
// fact without a quote is embedded as its text alone; context is stored
// as sent and never embedded.
func TestMemoryTextEditKeepsTheQuoteInTheVector(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	ctx := context.Background()
	const bank = "ana"
	const reply = "In reply to Ana: Which wine goes with slow-roasted lamb for the dinner party?"
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	emb, err := embed.NewHash(testDim)
	if err != nil {
		t.Fatal(err)
	}
	old, err := emb.EmbedDocuments(ctx, []string{reply + "\nA Syrah would stand up nicely to it.", "Ana prefers red wine"})
	if err != nil {
		t.Fatal(err)
	}
	answer, plain := store.DeriveID(bank, "f-answer"), store.DeriveID(bank, "f-plain")
	if _, err := e.st.PersistBatch(ctx, []store.EventRecord{{BankID: bank, EventKey: "e1", DocumentID: "d1", Context: "chat conversation",
		Facts: []store.FactRow{
			{ID: answer, FactType: "experience", Text: "A Syrah would stand up nicely to it.", Context: "chat conversation\n" + reply,
				ReplyTo: reply, Embedding: old[0], MentionedAt: at, IdemKey: "f-answer"},
			{ID: plain, FactType: "world", Text: "Ana prefers red wine", Context: "chat conversation",
				Embedding: old[1], MentionedAt: at, IdemKey: "f-plain"},
		}}}); err != nil {
		t.Fatal(err)
	}

	const newAnswer, newPlain = "A Grenache would stand up nicely to it.", "Ana prefers white wine"
	b := "/v1/default/banks/" + bank + "/memories/"
	if r := e.call("PATCH", b+answer.String(), fmt.Sprintf(`{"text":%q,"context":"edited label"}`, newAnswer), ""); r.status != 200 {
		t.Fatalf("edit answer: %d %s", r.status, r.raw)
	}
	if r := e.call("PATCH", b+plain.String(), fmt.Sprintf(`{"text":%q}`, newPlain), ""); r.status != 200 {
		t.Fatalf("edit plain fact: %d %s", r.status, r.raw)
	}

	want, err := emb.EmbedDocuments(ctx, []string{reply + "\n" + newAnswer, newAnswer, newPlain})
	if err != nil {
		t.Fatal(err)
	}
	var dQuote, dAlone, dPlain float64
	var replyTo, ctxText string
	db := pgtest.DB(e.st)
	if err := db.QueryRow(ctx, `SELECT embedding <=> $2, embedding <=> $3, reply_to, context FROM memory_units WHERE id = $1`,
		answer, pgvector.NewHalfVector(want[0]), pgvector.NewHalfVector(want[1])).Scan(&dQuote, &dAlone, &replyTo, &ctxText); err != nil {
		t.Fatal(err)
	}
	if dQuote > 1e-3 || dAlone <= dQuote {
		t.Errorf("edited answer's vector at cosine distance %.4f from the quote and the new text, %.4f from the new text alone: want the first", dQuote, dAlone)
	}
	if replyTo != reply || ctxText != "edited label" {
		t.Errorf("after the edit: reply_to %q, context %q; want the quote kept and the context as sent", replyTo, ctxText)
	}
	if err := db.QueryRow(ctx, `SELECT embedding <=> $2 FROM memory_units WHERE id = $1`, plain, pgvector.NewHalfVector(want[2])).Scan(&dPlain); err != nil {
		t.Fatal(err)
	}
	if dPlain > 1e-3 {
		t.Errorf("a fact without a quote: vector at cosine distance %.4f from its new text, want its text alone", dPlain)
	}
}
