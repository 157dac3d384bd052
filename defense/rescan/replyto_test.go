package rescan_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/pgvector/pgvector-go"

	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/defense/rescan"
	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/text"
)

// A fact that answers a turn is embedded as the quote of that turn, then
// its text. When the rescan redacts either, the fact is embedded again
// from both, redacted: a secret in the quoted user turn must not stay in
// the vector's input, and redacting the text must not drop the quote.
func TestRescanReembedsTheRedactedQuoteAndText(t *testing.T) {
	t.Parallel()
	st, url := migratedStore(t)
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("secret seed %d", seed)
	fs := fakeSecrets{rand.New(rand.NewPCG(seed, 11))}
	key := fs.openAIProject()
	emb, err := embed.NewHash(64)
	if err != nil {
		t.Fatal(err)
	}
	gate, err := defense.NewGate(defense.GateDeps{}, defense.GateConfig{FingerprintSalt: []byte("rescan-test-salt-0123456789")})
	if err != nil {
		t.Fatal(err)
	}
	const bank = "quotes"
	if _, err := st.PutBank(ctx, store.Bank{ID: bank, Name: bank, Skepticism: 3, Literalism: 3, Empathy: 3,
		DefensePolicy: json.RawMessage(`{"default":"allow"}`)}); err != nil {
		t.Fatal(err)
	}
	// quoteOnly: the secret is in the user's turn the answer quotes, not
	// in the answer. both: in the quote and in the answer.
	quoteOnly, both := store.DeriveID(bank, "q#f0"), store.DeriveID(bank, "q#f1")
	facts := []struct {
		id          store.UUID
		reply, body string
	}{
		{quoteOnly, "In reply to Ana: the staging key is " + key + ", can you check it works?", "It works for the staging cluster."},
		{both, "In reply to Ana: should I rotate " + key + "?", "Yes, rotate " + key + " today and keep it out of chat."},
	}
	at := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	ev := store.EventRecord{BankID: bank, EventKey: "q", DocumentID: "d"}
	for i, f := range facts {
		v, err := emb.EmbedDocuments(ctx, []string{f.reply + "\n" + f.body})
		if err != nil {
			t.Fatal(err)
		}
		ev.Facts = append(ev.Facts, store.FactRow{ID: f.id, FactType: "experience", Text: f.body, Context: "ops chat\n" + f.reply,
			ReplyTo: f.reply, Embedding: v[0], SearchAux: text.Aux(f.body, nil), MentionedAt: at, IdemKey: fmt.Sprintf("q#f%d", i)})
	}
	if _, err := st.PersistBatch(ctx, []store.EventRecord{ev}); err != nil {
		t.Fatal(err)
	}
	// Consolidation's observation of quoteOnly alone copies its vector
	// (quote included); one with a vector of its own must keep it.
	copied, own := store.DeriveID(bank, "obs", "copied"), store.DeriveID(bank, "obs", "own")
	ownVec, err := emb.EmbedDocuments(ctx, []string{"the staging cluster works"})
	if err != nil {
		t.Fatal(err)
	}
	evidence := []store.ObsEvidence{{MemoryID: quoteOnly, Quote: facts[0].body, Relevance: 1, At: at}}
	if _, err := st.ApplyConsolidation(ctx, store.ConsolidationApply{BankID: bank, FactIDs: []store.UUID{quoteOnly, both}, Now: at,
		Trend: func([]time.Time) string { return "new" },
		Edits: []store.ObsEdit{
			{Kind: store.EditCreate, ObservationID: copied, Text: facts[0].body, Embedding: ev.Facts[0].Embedding, Evidence: evidence},
			{Kind: store.EditCreate, ObservationID: own, Text: "the staging cluster works", Embedding: ownVec[0], Evidence: evidence},
		}}); err != nil {
		t.Fatal(err)
	}

	rep, err := rescan.Run(ctx, rescan.Deps{Store: st, Gate: gate, Embedder: emb},
		rescan.Config{BankID: bank, Policy: defense.Policy{Default: defense.ActionRedact}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Changed[store.RescanTargetUnits] != 2 || rep.Reembedded != 2 || rep.ObservationVectors != 1 || rep.Conflicts != 0 {
		t.Errorf("report %+v: want both facts redacted and embedded again, and the copying observation given the new vector", rep)
	}
	marker := defense.RedactionMarker("openai_project_key")
	db := pgtest.Pool(t, url)
	var dCopied, dOwn float64
	if err := db.QueryRow(ctx, `SELECT (SELECT o.embedding <=> f.embedding FROM memory_units o, memory_units f WHERE o.id = $1 AND f.id = $2),
		(SELECT embedding <=> $4 FROM memory_units WHERE id = $3)`, copied, quoteOnly, own, pgvector.NewHalfVector(ownVec[0])).Scan(&dCopied, &dOwn); err != nil {
		t.Fatal(err)
	}
	if dCopied > 1e-6 || dOwn > 1e-3 {
		t.Errorf("observation vectors: the copy is at cosine distance %.4f from its fact's new vector (want 0), the own one %.4f from its own (want 0)", dCopied, dOwn)
	}
	for _, f := range facts {
		var replyTo, body, ctxText string
		if err := db.QueryRow(ctx, `SELECT reply_to, text, context FROM memory_units WHERE id = $1`, f.id).Scan(&replyTo, &body, &ctxText); err != nil {
			t.Fatal(err)
		}
		// Values are not printed: on failure they may hold the secret.
		if strings.Contains(replyTo+body+ctxText, key) || replyTo != strings.ReplaceAll(f.reply, key, marker) ||
			body != strings.ReplaceAll(f.body, key, marker) {
			t.Fatalf("fact %s: reply_to, text or context not redacted", f.id)
		}
		want, err := emb.EmbedDocuments(ctx, []string{replyTo + "\n" + body, body, f.reply + "\n" + f.body})
		if err != nil {
			t.Fatal(err)
		}
		var dRedacted, dText, dRaw float64
		if err := db.QueryRow(ctx, `SELECT embedding <=> $2, embedding <=> $3, embedding <=> $4 FROM memory_units WHERE id = $1`, f.id,
			pgvector.NewHalfVector(want[0]), pgvector.NewHalfVector(want[1]), pgvector.NewHalfVector(want[2])).
			Scan(&dRedacted, &dText, &dRaw); err != nil {
			t.Fatal(err)
		}
		if dRedacted > 1e-3 || dText <= dRedacted || dRaw <= dRedacted {
			t.Errorf("fact %s: vector at cosine distance %.4f from the redacted quote and text, %.4f from the text alone, %.4f from the raw quote and text: want the first",
				f.id, dRedacted, dText, dRaw)
		}
	}
}
