package consolidate_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgvector/pgvector-go"

	"github.com/memstream/memstream/consolidate"
	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/text"
)

// recordingEmbedder remembers the document texts it embedded.
type recordingEmbedder struct {
	*embed.Hash
	mu   sync.Mutex
	docs []string
}

func (r *recordingEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	r.mu.Lock()
	r.docs = append(r.docs, texts...)
	r.mu.Unlock()
	return r.Hash.EmbedDocuments(ctx, texts)
}

// A fact that quotes the turn it answers and has no vector yet is
// embedded as ingest would embed it, the quote then the text. An
// observation of one such fact with its text copies the fact's vector,
// quote included, so a question about the request finds it as it finds
// the fact.
func TestQuotingFactsEmbedTheirQuoteObservationsCopyIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	const bank = "ana"
	const quote1 = "In reply to Ana: Which wine goes with slow-roasted lamb?"
	const quote2 = "In reply to Ana: And which cheese would you serve after it?"
	const text1, text2 = "A Syrah would stand up nicely to the lamb", "Aged Comté suits the end of the dinner"
	v1, err := e.emb.EmbedDocuments(ctx, []string{quote1 + "\n" + text1})
	if err != nil {
		t.Fatal(err)
	}
	at := now.Add(-time.Hour)
	f1, f2 := store.DeriveID(bank, "q1"), store.DeriveID(bank, "q2")
	if _, err := e.st.PersistBatch(ctx, []store.EventRecord{{BankID: bank, EventKey: "q", DocumentID: "d",
		Facts: []store.FactRow{
			{ID: f1, FactType: "experience", Text: text1, ReplyTo: quote1, Context: quote1, Embedding: v1[0],
				SearchAux: text.Aux(text1, nil), MentionedAt: at, IdemKey: "q1"},
			{ID: f2, FactType: "experience", Text: text2, ReplyTo: quote2, Context: quote2,
				SearchAux: text.Aux(text2, nil), MentionedAt: at.Add(time.Minute), IdemKey: "q2"},
		}}}); err != nil {
		t.Fatal(err)
	}
	rec := &recordingEmbedder{Hash: e.emb}
	w, err := consolidate.New(consolidate.Deps{Store: e.st, Embedder: rec, Clock: clock}, consolidate.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if res := e.drain(w, bank); res.Facts != 2 || res.Created == 0 {
		t.Fatalf("drain = %+v: want both facts consolidated into observations", res)
	}
	// rec.docs also holds the embedder calibration's probe texts.
	if i := slices.IndexFunc(rec.docs, func(d string) bool { return strings.Contains(d, text2) }); i < 0 || rec.docs[i] != quote2+"\n"+text2 {
		t.Errorf("the fact without a vector: embedded as %q, want its quote, then its text", rec.docs[max(i, 0)])
	}
	obs := valid(e.observations(bank))
	if !slices.ContainsFunc(obs, func(o obsRow) bool { return o.Text == text1 }) {
		t.Fatalf("observations %+v: want one with the first fact's text, which could copy its vector", obs)
	}
	for _, o := range obs {
		src := map[string]string{text1: quote1 + "\n" + text1, text2: quote2 + "\n" + text2}[o.Text]
		if src == "" {
			continue
		}
		want, err := e.emb.EmbedDocuments(ctx, []string{src})
		if err != nil {
			t.Fatal(err)
		}
		var d float64
		if err := e.db.QueryRow(ctx, `SELECT embedding <=> $2 FROM memory_units WHERE id = $1`, o.ID, pgvector.NewHalfVector(want[0])).Scan(&d); err != nil {
			t.Fatal(err)
		}
		if d > 1e-3 {
			t.Errorf("observation %q: vector at cosine distance %.4f from its fact's quote and text, want the fact's vector", o.Text, d)
		}
	}
}
