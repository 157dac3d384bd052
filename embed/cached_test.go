package embed

import (
	"context"
	"slices"
	"testing"
)

// countingEmbedder records what reaches it.
type countingEmbedder struct {
	inner *Hash
	calls [][]string
}

func (c *countingEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	c.calls = append(c.calls, slices.Clone(texts))
	return c.inner.EmbedDocuments(ctx, texts)
}

func (c *countingEmbedder) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	c.calls = append(c.calls, append([]string{"query:"}, texts...))
	return c.inner.EmbedQueries(ctx, texts)
}

func (c *countingEmbedder) Dim() int { return c.inner.Dim() }

func TestCachedOnlyMisses(t *testing.T) {
	t.Parallel()
	inner := &countingEmbedder{inner: newHash(t, 64)}
	c, err := NewCached(CachedDeps{Inner: inner}, CachedConfig{Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := c.EmbedDocuments(ctx, []string{"a", "b", "a"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.EmbedDocuments(ctx, []string{"c", "b", "a", "d", "c"})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"a", "b"}, {"c", "d"}}
	if len(inner.calls) != 2 || !slices.Equal(inner.calls[0], want[0]) || !slices.Equal(inner.calls[1], want[1]) {
		t.Fatalf("inner calls = %v, want %v (misses only, deduplicated, in order)", inner.calls, want)
	}
	direct, _ := newHash(t, 64).EmbedDocuments(ctx, []string{"c", "b", "a", "d", "c"})
	for i := range second {
		if !slices.Equal(second[i], direct[i]) {
			t.Errorf("vector %d differs from the inner embedder's", i)
		}
	}
	if !slices.Equal(first[0], second[2]) {
		t.Error("cached vector for \"a\" differs from the first result")
	}
	// Callers may scribble on results without corrupting the cache.
	second[2][0] = 42
	again, _ := c.EmbedDocuments(ctx, []string{"a"})
	if again[0][0] == 42 {
		t.Error("modifying a returned vector changed the cache")
	}
	if hits, misses := c.Stats(); hits != 3 || misses != 6 {
		t.Errorf("Stats() = %d hits, %d misses; want 3, 6", hits, misses)
	}
	if c.Dim() != 64 || c.Name() != "cached" {
		t.Errorf("Dim, Name = %d, %q", c.Dim(), c.Name())
	}
	if _, err := c.EmbedDocuments(ctx, nil); err != nil || len(inner.calls) != 2 {
		t.Errorf("empty input: err %v, calls %d", err, len(inner.calls))
	}
}

func TestCachedName(t *testing.T) {
	t.Parallel()
	c, err := NewCached(CachedDeps{Inner: newHash(t, 0)}, CachedConfig{Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c.Name() != "hash" {
		t.Errorf("Name() = %q, want the inner provider's", c.Name())
	}
	if _, err := NewCached(CachedDeps{Inner: newHash(t, 0)}, CachedConfig{Size: 0}); err == nil {
		t.Error("size 0: want error")
	}
}

// TestCachedKeysByKind checks that a text cached as a document is not served
// as a query: a model with prefixes embeds the two differently.
func TestCachedKeysByKind(t *testing.T) {
	t.Parallel()
	inner := &countingEmbedder{inner: newHash(t, 64)}
	c, err := NewCached(CachedDeps{Inner: inner}, CachedConfig{Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.EmbedDocuments(ctx, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EmbedQueries(ctx, []string{"a", "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EmbedQueries(ctx, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"a"}, {"query:", "a"}}
	if len(inner.calls) != 2 || !slices.Equal(inner.calls[0], want[0]) || !slices.Equal(inner.calls[1], want[1]) {
		t.Fatalf("inner calls = %v, want %v", inner.calls, want)
	}
}
