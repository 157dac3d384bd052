package recall

import (
	"fmt"
	"sync"
	"unicode/utf8"

	lru "github.com/hashicorp/golang-lru/v2"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// Tokenizer names for Config.Tokenizer.
const (
	TokenizerCL100K   = "cl100k"
	TokenizerEstimate = "estimate"
)

// tokenCounter counts the tokens a text costs in the agent's context.
type tokenCounter interface {
	count(s string) int
	name() string
}

// cl100kRanks is loaded once per process: the rank table has 100k entries
// (about 10 MB, ~100 ms to parse), is immutable after construction and is
// safe for concurrent use, so sharing it is a cache, not mutable global
// state. It is loaded directly rather than through tiktoken.GetEncoding so
// that we never touch that package's global loader setting (which would
// make every other user of tiktoken in the process download files).
var cl100kRanks = sync.OnceValues(func() (map[string]int, error) {
	ranks, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe("cl100k_base.tiktoken")
	if err != nil {
		return nil, fmt.Errorf("recall: load cl100k ranks: %w", err)
	}
	return ranks, nil
})

func newTokenCounter(name string) (tokenCounter, error) {
	if name == TokenizerEstimate {
		return estimator{}, nil
	}
	ranks, err := cl100kRanks()
	if err != nil {
		return nil, err
	}
	cache, err := lru.New[string, int](tokenCacheSize)
	if err != nil {
		return nil, err
	}
	return cachedCounter{inner: newCL100KCounter(ranks), cache: cache}, nil
}

// tokenCacheSize bounds the cached counts. Counting with cl100k costs about
// a microsecond a fact (cl100kCounter; tiktoken-go, whose pre-tokenizer is
// a backtracking regexp, takes 11-16 µs), a recall counts up to a hundred
// and fifty facts, and the same facts come back again and again, as do
// their shared contexts.
const tokenCacheSize = 32768

// cachedCounter memoises a counter. The count is a pure function of the
// string, so the cache can never be stale; keying by text rather than by
// fact id keeps it right when consolidation rewrites an observation.
type cachedCounter struct {
	inner tokenCounter
	cache *lru.Cache[string, int]
}

func (c cachedCounter) count(s string) int {
	if n, ok := c.cache.Get(s); ok {
		return n
	}
	n := c.inner.count(s)
	c.cache.Add(s, n)
	return n
}

func (c cachedCounter) name() string { return c.inner.name() }

// estimator is the fallback when the BPE cannot be used. It mimics the
// cl100k pre-tokenizer and charges each piece at least what cl100k can:
// a run of ASCII letters ceil(len/3) tokens; digits one token per three
// (cl100k splits them so); every other ASCII character, spaces included,
// one token (cl100k mostly merges a space into the next word, so this
// over-counts); a non-ASCII rune its UTF-8 length, a hard upper bound since
// a byte-level BPE token is at least one byte (Chinese costs 1-2 tokens a
// character in cl100k, so this over-counts it 1.5-3 times).
// English costs about 4 letters a token, so it over-counts prose by ~30%,
// which costs some results but keeps an agent's context from overflowing.
// Pathological strings of rare letter trigrams could still exceed it; the
// test compares it with cl100k on the fixture texts.
type estimator struct{}

func (estimator) name() string { return "estimate" }

func (estimator) count(s string) int {
	n, letters, digits := 0, 0, 0
	flush := func() {
		n += (letters+2)/3 + (digits+2)/3
		letters, digits = 0, 0
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			if digits > 0 {
				flush()
			}
			letters++
		case r >= '0' && r <= '9':
			if letters > 0 {
				flush()
			}
			digits++
		case r < utf8.RuneSelf:
			flush()
			n++
		default:
			flush()
			n += utf8.RuneLen(r)
		}
	}
	flush()
	return n
}
