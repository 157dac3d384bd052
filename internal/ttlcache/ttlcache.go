// Package ttlcache keeps per-key values for a short time, within a bound
// on how many keys it holds: the per-bank settings (defense policy, audit
// switch) that a hot path reads instead of querying PostgreSQL per record
// or request, where an edit may take effect within the TTL.
package ttlcache

import (
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Cache maps keys to values that expire TTL after they were added; past
// Size keys the least recently used goes. It is safe for concurrent use.
type Cache[V any] struct {
	ttl time.Duration
	c   *lru.Cache[string, entry[V]]
}

type entry[V any] struct {
	v       V
	expires time.Time
}

// New returns a cache of at most size keys, each kept for ttl.
func New[V any](size int, ttl time.Duration) (*Cache[V], error) {
	c, err := lru.New[string, entry[V]](size)
	if err != nil {
		return nil, err
	}
	return &Cache[V]{ttl: ttl, c: c}, nil
}

// Get returns key's value while it has not expired.
func (c *Cache[V]) Get(key string) (V, bool) {
	if e, ok := c.c.Get(key); ok && time.Now().Before(e.expires) {
		return e.v, true
	}
	var zero V
	return zero, false
}

// Add keeps v for key for the cache's TTL.
func (c *Cache[V]) Add(key string, v V) { c.c.Add(key, entry[V]{v: v, expires: time.Now().Add(c.ttl)}) }

// Remove drops key, after its value changed.
func (c *Cache[V]) Remove(key string) { c.c.Remove(key) }
