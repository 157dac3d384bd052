package eval

import (
	"context"
	"hash/fnv"
	"strings"
	"testing"
	"time"
)

func tinyDataset() *Dataset {
	at := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	msg := func(role, text string) Message { return Message{Role: role, Content: text, Timestamp: at} }
	return &Dataset{Events: []Event{
		{BankID: "b", EventID: "e1", DocumentID: "s1", Messages: []Message{
			msg("user", "The weather is grey again."),
			msg("user", "We adopted a greyhound called Biscuit."),
			msg("assistant", "What a lovely name for a dog."),
		}},
		// The same session's fourth turn, delivered as its own event.
		{BankID: "b", EventID: "e2", DocumentID: "s1", Metadata: map[string]string{TurnOffsetKey: "3"}, Messages: []Message{
			msg("user", "张伟搬到杭州了。"),
		}},
		{BankID: "other", EventID: "e3", DocumentID: "s2", Messages: []Message{msg("user", "Biscuit Biscuit Biscuit")}},
	}}
}

func TestBM25RanksRawTurnsOfTheBank(t *testing.T) {
	x := NewBM25(tinyDataset())
	got, _, err := x.Recall(context.Background(), "b", "the greyhound is called?", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0].SessionID != "s1" || got[0].TurnIndex != 1 {
		t.Fatalf("top result %+v, want turn s1#1", got)
	}
	for _, r := range got {
		if r.SessionID == "s2" {
			t.Errorf("returned a turn of another bank: %+v", r)
		}
	}
	zh, _, _ := x.Recall(context.Background(), "b", "张伟现在住在哪个城市", time.Time{})
	if len(zh) == 0 || zh[0].TurnIndex != 3 {
		t.Errorf("CJK query: %+v, want the per-message turn s1#3 first", zh)
	}
	if none, _, _ := x.Recall(context.Background(), "b", "the of and", time.Time{}); len(none) != 0 {
		t.Errorf("a stop-word query matched %d turns", len(none))
	}
}

func TestBM25Tokens(t *testing.T) {
	got := strings.Join(bm25Tokens("The Greyhound's name: 张伟搬家, OK?"), " ")
	if want := "greyhound s name 张伟 伟搬 搬家 ok"; got != want {
		t.Errorf("tokens %q, want %q", got, want)
	}
}

// bagEmbedder embeds a text as hashed lower-cased words, so texts sharing
// words are similar; queries are counted to check EmbedQueries is used.
type bagEmbedder struct{ queries int }

func (b *bagEmbedder) EmbedDocuments(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 64)
		for _, w := range bm25Tokens(t) {
			h := fnv.New32a()
			h.Write([]byte(w))
			v[h.Sum32()%64]++
		}
		out[i] = v
	}
	return out, nil
}

func (b *bagEmbedder) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	b.queries++
	return b.EmbedDocuments(ctx, texts)
}

func TestDenseUsesTheQueryEmbedding(t *testing.T) {
	emb := &bagEmbedder{}
	x, err := NewDense(context.Background(), tinyDataset(), emb)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := x.Recall(context.Background(), "b", "greyhound biscuit", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if emb.queries != 1 {
		t.Errorf("EmbedQueries called %d times, want 1", emb.queries)
	}
	if len(got) != 4 || got[0].TurnIndex != 1 {
		t.Errorf("results %+v, want all four turns of bank b with s1#1 first", got)
	}
}

func TestBaselinesFindPlantedFacts(t *testing.T) {
	d := generate(t, Small())
	reps, err := RunParts(context.Background(), d, NewBM25(d), RunOptions{Name: BaselineBM25, TokenBudget: 2048})
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range Parts {
		r, ok := reps[part]
		if !ok || r.Overall.Questions != len(d.Part(part)) {
			t.Fatalf("part %s: report %v, want all %d questions", part, ok, len(d.Part(part)))
		}
		// Keyword search over raw turns finds a good share of the
		// evidence (the questions avoid the evidence's words, not all of
		// them) and not all of it.
		if v := r.Overall.Turn.RecallAny10; v < 0.2 || v > 0.95 {
			t.Errorf("part %s: BM25 turn recall_any@10 %.3f is implausible", part, v)
		}
	}
}
