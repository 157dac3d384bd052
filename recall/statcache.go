package recall

import (
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// statCacheSize bounds the cached term statistics: a few thousand terms
// cover the names and words a set of agents keeps asking about.
const statCacheSize = 8192

// statKey names a cached count: a term's document frequency in a bank, or
// the bank's size when bankSize is set.
type statKey struct {
	bank     string
	term     string
	bankSize bool
}

type statEntry struct {
	v  int64
	at time.Time
}

// statCache holds the keyword arm's counts for Config.StatsTTL. Stale
// counts only shift IDF weights a little; they never hide a fact, because
// matching is done by the index on every query.
type statCache struct {
	ttl time.Duration // ≤ 0: nothing is cached
	c   *lru.Cache[statKey, statEntry]
}

func newStatCache(ttl time.Duration) (*statCache, error) {
	c, err := lru.New[statKey, statEntry](statCacheSize)
	if err != nil {
		return nil, err
	}
	return &statCache{ttl: ttl, c: c}, nil
}

func (s *statCache) get(k statKey, now time.Time) (int64, bool) {
	if s.ttl <= 0 {
		return 0, false
	}
	e, ok := s.c.Get(k)
	if !ok || now.Sub(e.at) > s.ttl {
		return 0, false
	}
	return e.v, true
}

func (s *statCache) put(k statKey, v int64, now time.Time) {
	if s.ttl > 0 {
		s.c.Add(k, statEntry{v: v, at: now})
	}
}

func (s *statCache) bankSize(bank string, now time.Time) (int64, bool) {
	return s.get(statKey{bank: bank, bankSize: true}, now)
}

func (s *statCache) putBankSize(bank string, n int64, now time.Time) {
	s.put(statKey{bank: bank, bankSize: true}, n, now)
}

func (s *statCache) df(bank, term string, now time.Time) (int64, bool) {
	return s.get(statKey{bank: bank, term: term}, now)
}

func (s *statCache) putDF(bank, term string, df int64, now time.Time) {
	s.put(statKey{bank: bank, term: term}, df, now)
}
