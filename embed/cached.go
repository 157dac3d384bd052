package embed

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
)

// cacheKey is the first 128 bits of the SHA-256 of a text and its kind. A
// cryptographic hash costs little next to embedding, and it means nobody can
// craft a text that collides with another bank's fact and so receives its
// vector. The kind is part of the key because a model may embed the same
// text differently as a query and as a document.
type cacheKey [16]byte

func keyOf(k Kind, text string) cacheKey {
	h := sha256.New()
	h.Write([]byte{byte(k)})
	h.Write([]byte(text))
	var sum [sha256.Size]byte
	return cacheKey(h.Sum(sum[:0])[:16])
}

// Cached puts an LRU cache in front of another embedder. Only texts not in
// the cache go to the inner embedder, in one call, in their original order
// and without duplicates. It is safe for concurrent use.
//
// Vectors are copied in and out of the cache, so a caller that modifies a
// returned vector cannot change what later callers get.
type Cached struct {
	inner  Embedder
	cache  *lru.Cache[cacheKey, []float32]
	hits   atomic.Uint64
	misses atomic.Uint64
}

// CachedDeps is the embedder a Cached wraps.
type CachedDeps struct {
	Inner Embedder
}

// CachedConfig sizes the cache.
type CachedConfig struct {
	// Size is the most vectors kept (each Dim*4 bytes); embed.cache_size.
	Size int
}

// NewCached wraps deps.Inner with a cache of at most cfg.Size vectors.
func NewCached(deps CachedDeps, cfg CachedConfig) (*Cached, error) {
	inner, size := deps.Inner, cfg.Size
	if inner == nil {
		return nil, fmt.Errorf("embed: cached: nil inner embedder")
	}
	if size <= 0 {
		return nil, fmt.Errorf("embed.cache_size: must be positive, got %d", size)
	}
	c, err := lru.New[cacheKey, []float32](size)
	if err != nil {
		return nil, fmt.Errorf("embed: cached: %w", err)
	}
	return &Cached{inner: inner, cache: c}, nil
}

// Dim reports the inner embedder's dimension.
func (c *Cached) Dim() int { return c.inner.Dim() }

// Name reports the inner embedder's name when it has one, so metrics and
// logs name the real provider.
func (c *Cached) Name() string {
	if n, ok := c.inner.(interface{ Name() string }); ok {
		return n.Name()
	}
	return "cached"
}

// Stats reports cache hits and misses since creation, counted per text.
func (c *Cached) Stats() (hits, misses uint64) {
	return c.hits.Load(), c.misses.Load()
}

// EmbedDocuments returns one document vector per text, in order.
func (c *Cached) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	return c.embed(ctx, Document, texts)
}

// EmbedQueries returns one query vector per text, in order.
func (c *Cached) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	return c.embed(ctx, Query, texts)
}

func (c *Cached) embed(ctx context.Context, kind Kind, texts []string) ([][]float32, error) {
	dim := c.inner.Dim()
	flat := make([]float32, len(texts)*dim)
	out := make([][]float32, len(texts))
	keys := make([]cacheKey, len(texts))

	var (
		missTexts []string
		missKeys  []cacheKey
		missIdx   map[cacheKey]int // key -> position in missTexts
		pending   []int            // output positions waiting for a miss
	)
	for i, t := range texts {
		keys[i] = keyOf(kind, t)
		out[i] = flat[i*dim : (i+1)*dim : (i+1)*dim]
		if v, ok := c.cache.Get(keys[i]); ok {
			copy(out[i], v)
			continue
		}
		pending = append(pending, i)
		if missIdx == nil {
			missIdx = make(map[cacheKey]int)
		}
		if _, dup := missIdx[keys[i]]; !dup {
			missIdx[keys[i]] = len(missTexts)
			missTexts = append(missTexts, t)
			missKeys = append(missKeys, keys[i])
		}
	}
	c.hits.Add(uint64(len(texts) - len(pending)))
	c.misses.Add(uint64(len(pending)))
	if len(missTexts) == 0 {
		return out, nil
	}

	vecs, err := embedKind(ctx, c.inner, kind, missTexts)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(missTexts) {
		return nil, fmt.Errorf("embed: inner embedder returned %d vectors for %d texts", len(vecs), len(missTexts))
	}
	for j, v := range vecs {
		if len(v) != dim {
			return nil, fmt.Errorf("embed: inner embedder returned %d dimensions, want %d", len(v), dim)
		}
		c.cache.Add(missKeys[j], append([]float32(nil), v...))
	}
	for _, i := range pending {
		copy(out[i], vecs[missIdx[keys[i]]])
	}
	return out, nil
}
