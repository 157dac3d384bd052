package embed

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memstream/memstream/config"
)

// The joined vector is a unit vector whose cosine with another is the mean
// of the parts' cosines, for queries and documents alike.
func TestConcatCosineIsTheMeanOfItsParts(t *testing.T) {
	t.Parallel()
	a, b := newHash(t, 64), newHash(t, 32)
	c, err := NewConcat("a+b", a, b)
	if err != nil || c.Dim() != 96 {
		t.Fatalf("NewConcat: dim %d, %v", c.Dim(), err)
	}
	ctx := context.Background()
	texts := []string{"Zhang Wei moved to Shanghai", "张伟搬到了上海", "I like green tea"}
	joined, err := c.EmbedDocuments(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	q, err := c.EmbedQueries(ctx, texts[:1])
	if err != nil {
		t.Fatal(err)
	}
	va, _ := a.EmbedDocuments(ctx, texts)
	vb, _ := b.EmbedDocuments(ctx, texts)
	qa, _ := a.EmbedQueries(ctx, texts[:1])
	qb, _ := b.EmbedQueries(ctx, texts[:1])
	for i := range texts {
		var n float64
		for _, x := range joined[i] {
			n += float64(x) * float64(x)
		}
		if math.Abs(n-1) > 1e-5 {
			t.Errorf("text %d: |v|² = %f, want 1", i, n)
		}
		// With unit parts, the joined vectors' cosine is their dot product.
		want := (cosine(qa[0], va[i]) + cosine(qb[0], vb[i])) / 2
		if got := cosine(q[0], joined[i]); math.Abs(got-want) > 1e-5 {
			t.Errorf("text %d: cosine %f, want the parts' mean %f", i, got, want)
		}
	}
	if _, err := NewConcat("none"); err == nil {
		t.Error("a concat of no models was accepted")
	}
}

// failingEmbedder fails every call, as a provider in an outage does.
type failingEmbedder struct{ dim int }

func (f failingEmbedder) Dim() int { return f.dim }
func (f failingEmbedder) EmbedDocuments(context.Context, []string) ([][]float32, error) {
	return nil, errors.New("provider down")
}
func (f failingEmbedder) EmbedQueries(context.Context, []string) ([][]float32, error) {
	return nil, errors.New("provider down")
}

// A part's error is the joined call's, for queries (whose parts run side
// by side) and documents (in turn) alike: no half-joined vector comes back.
func TestConcatPartErrorFailsTheCall(t *testing.T) {
	t.Parallel()
	c, err := NewConcat("a+down", newHash(t, 16), failingEmbedder{dim: 8})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if v, err := c.EmbedQueries(ctx, []string{"q"}); err == nil || !strings.Contains(err.Error(), "provider down") {
		t.Errorf("EmbedQueries = %v, %v; want the part's error", v, err)
	}
	if v, err := c.EmbedDocuments(ctx, []string{"d"}); err == nil || !strings.Contains(err.Error(), "provider down") {
		t.Errorf("EmbedDocuments = %v, %v; want the part's error", v, err)
	}
}

// The local provider's default is USE and MiniLM joined; embed.model
// selects the USE alone, with the key databases made by it hold.
func TestFromConfigLocalModels(t *testing.T) {
	root := filepath.Dir(testModelDir(t))
	testMiniLMDir(t)
	cfg := config.Default().Embed
	cfg.CacheSize, cfg.ModelDir = 0, root
	e, err := FromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := e.(*Concat)
	if !ok || c.Dim() != 896 || !strings.HasPrefix(c.Model(), config.JoinedLocalModel) {
		t.Fatalf("default local embedder %T %d, want the joined model", e, e.Dim())
	}
	if k := Key(cfg); k != "local/"+config.JoinedLocalModel+"/896" {
		t.Errorf("default Key = %q", k)
	}
	cfg.Model, cfg.Dim = config.USELocalModel, LocalDim
	if e, err = FromConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.(*Local); !ok {
		t.Fatalf("embed.model %s gave %T, want the USE alone", config.USELocalModel, e)
	}
	if k := Key(cfg); k != "local/use-multilingual-v3/512" {
		t.Errorf("Key = %q", k)
	}
}
