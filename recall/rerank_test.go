package recall

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/uuid"
)

type fakeReranker struct {
	fn    func(query string, docs []string) ([]float64, error)
	calls int
}

func (f *fakeReranker) Rerank(_ context.Context, q string, docs []string) ([]float64, error) {
	f.calls++
	return f.fn(q, docs)
}

func rerankFixture() []hydrated {
	texts := []string{"the weather was nice", "we had lunch", "Alice lives in Shanghai", "tail fact"}
	hs := make([]hydrated, len(texts))
	for i, t := range texts {
		hs[i].ID = uuid.New()
		hs[i].Text = t
		hs[i].Scores.Final = 1 - 0.1*float64(i)
	}
	return hs
}

func newTestRecaller(rr Reranker, top int) *Recaller {
	cfg := Config{RerankTop: top}.WithDefaults()
	return &Recaller{rr: rr, cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func TestRerankReordersHeadOnly(t *testing.T) {
	rr := &fakeReranker{fn: func(q string, docs []string) ([]float64, error) {
		out := make([]float64, len(docs))
		for i, d := range docs {
			if strings.Contains(d, "Shanghai") {
				out[i] = 9
			}
		}
		return out, nil
	}}
	r := newTestRecaller(rr, 3)
	hs := rerankFixture()
	note := r.rerank(context.Background(), "where does alice live", hs)
	if hs[0].Text != "Alice lives in Shanghai" || hs[0].Scores.Rerank == nil || *hs[0].Scores.Rerank != 9 {
		t.Fatalf("head after rerank = %q (%v)", hs[0].Text, hs[0].Scores.Rerank)
	}
	if hs[3].Text != "tail fact" || hs[3].Scores.Rerank != nil {
		t.Fatal("a result past RerankTop was touched")
	}
	if hs[2].Scores.Final < hs[3].Scores.Final {
		t.Fatal("the head fell below a result the reranker never saw")
	}
	if !strings.Contains(note, "top 3") {
		t.Fatalf("trace note %q", note)
	}
}

func TestRerankFailureKeepsOrder(t *testing.T) {
	for name, fn := range map[string]func(string, []string) ([]float64, error){
		"error": func(string, []string) ([]float64, error) { return nil, errors.New("503") },
		"short": func(string, []string) ([]float64, error) { return []float64{1}, nil },
	} {
		r := newTestRecaller(&fakeReranker{fn: fn}, 30)
		hs := rerankFixture()
		before := []string{hs[0].Text, hs[1].Text, hs[2].Text, hs[3].Text}
		note := r.rerank(context.Background(), "q", hs)
		for i := range hs {
			if hs[i].Text != before[i] || hs[i].Scores.Rerank != nil {
				t.Fatalf("%s: order or scores changed", name)
			}
		}
		if !strings.HasPrefix(note, "failed") {
			t.Fatalf("%s: note %q", name, note)
		}
	}
}
