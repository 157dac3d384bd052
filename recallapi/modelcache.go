package recallapi

import (
	"fmt"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/memstream/memstream/store"
)

// modelCache keeps recently read mental models, so that agents which read
// the same model before every turn cost no database round trip.
//
// Correctness rests on two rules. Every write evicts the key (locally at
// once, on other replicas through NOTIFY sent in the write's transaction).
// And a read that missed may only fill the cache if no eviction happened
// since it started reading: otherwise a slow read of the old row could put
// it back after the eviction. A global generation counter checks that; a
// fill lost to an unrelated eviction costs only one more miss later.
type modelCache struct {
	mu      sync.Mutex
	lru     *lru.Cache[string, store.MentalModel]
	gen     uint64
	enabled bool

	lookups       *prometheus.CounterVec
	invalidations *prometheus.CounterVec
}

func newModelCache(size int, reg prometheus.Registerer) (*modelCache, error) {
	l, err := lru.New[string, store.MentalModel](size)
	if err != nil {
		return nil, fmt.Errorf("mental model cache: %w", err)
	}
	c := &modelCache{lru: l, enabled: true,
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memstream_api_mental_model_cache_requests_total",
			Help: "Mental model GETs by cache result (hit, miss).",
		}, []string{"result"}),
		invalidations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memstream_api_mental_model_cache_invalidations_total",
			Help: "Mental model cache evictions by source (local write, notify from any replica, purge on listener (re)connect or loss).",
		}, []string{"source"}),
	}
	for _, r := range []string{"hit", "miss"} {
		c.lookups.WithLabelValues(r)
	}
	for _, s := range []string{"local", "notify", "purge"} {
		c.invalidations.WithLabelValues(s)
	}
	if reg != nil {
		if err := reg.Register(c.lookups); err != nil {
			return nil, err
		}
		if err := reg.Register(c.invalidations); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func modelKey(bankID, id string) string { return bankID + "/" + id }

// get returns a cached model and the generation to pass to put on a miss.
func (c *modelCache) get(bankID, id string) (store.MentalModel, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.enabled {
		if m, ok := c.lru.Get(modelKey(bankID, id)); ok {
			c.lookups.WithLabelValues("hit").Inc()
			return m, true, c.gen
		}
	}
	c.lookups.WithLabelValues("miss").Inc()
	return store.MentalModel{}, false, c.gen
}

// put fills the cache after a miss, unless something was evicted since.
func (c *modelCache) put(m store.MentalModel, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.enabled && gen == c.gen {
		c.lru.Add(modelKey(m.BankID, m.ID.String()), m)
	}
}

func (c *modelCache) invalidate(bankID, id, source string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.lru.Remove(modelKey(bankID, id))
	c.invalidations.WithLabelValues(source).Inc()
}

// invalidateBank evicts every model of a bank.
func (c *modelCache) invalidateBank(bankID, source string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	prefix := bankID + "/"
	for _, k := range c.lru.Keys() {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix {
			c.lru.Remove(k)
		}
	}
	c.invalidations.WithLabelValues(source).Inc()
}

// purge drops everything and (re)enables the cache: called when the
// change listener is (again) in effect.
func (c *modelCache) purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.lru.Purge()
	c.enabled = true
	c.invalidations.WithLabelValues("purge").Inc()
}

// disable drops everything and serves every read from the database until
// purge: without a listener, other replicas' writes would go unseen.
func (c *modelCache) disable() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.lru.Purge()
	c.enabled = false
	c.invalidations.WithLabelValues("purge").Inc()
}

func (c *modelCache) len() int { return c.lru.Len() }
