package tokens

import (
	"fmt"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// Tokenizer names for Config.Tokenizer.
const (
	// CL100K is the BPE of current OpenAI-compatible models (cl100k_base),
	// embedded in the binary. The default.
	CL100K = "cl100k"
	// Estimate is a conservative count that never under-counts cl100k, for
	// models whose tokenizer is unknown.
	Estimate = "estimate"
)

// Config selects the tokenizer.
type Config struct {
	// Tokenizer is CL100K (default) or Estimate.
	Tokenizer string
	// CacheSize bounds the memoised counts; default 32768. Counting is a
	// pure function of the text and the same facts come back in recall
	// after recall, so most counts are answered from the cache.
	CacheSize int
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Tokenizer == "" {
		c.Tokenizer = CL100K
	}
	if c.CacheSize <= 0 {
		c.CacheSize = 32768
	}
	return c
}

func (c Config) validate() error {
	if c.Tokenizer != CL100K && c.Tokenizer != Estimate {
		return fmt.Errorf("tokenizer: %q is not %s or %s", c.Tokenizer, CL100K, Estimate)
	}
	return nil
}

// maxCached is the longest text whose count is memoised: fact texts and
// contexts are short and recur; whole prompts are long, unique, and would
// keep their memory alive in the cache for nothing.
const maxCached = 2048

// Counter counts tokens. It is safe for concurrent use.
type Counter struct {
	name  string
	count func(string) int
	cache *lru.Cache[string, int]
}

// New returns a counter for cfg.Tokenizer.
func New(cfg Config) (*Counter, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cache, err := lru.New[string, int](cfg.CacheSize)
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	if cfg.Tokenizer == Estimate {
		return &Counter{name: "estimate", count: estimate, cache: cache}, nil
	}
	enc, err := cl100k()
	if err != nil {
		return nil, err
	}
	return &Counter{name: "cl100k_base", count: func(s string) int { return len(enc.EncodeOrdinary(s)) }, cache: cache}, nil
}

// Name is the tokenizer's name as recall traces report it.
func (c *Counter) Name() string { return c.name }

// Count returns the tokens s costs. It encodes ordinarily: a fact that
// happens to contain "<|endoftext|>" is counted as the plain text the model
// will see.
func (c *Counter) Count(s string) int {
	if len(s) > maxCached {
		return c.count(s)
	}
	if n, ok := c.cache.Get(s); ok {
		return n
	}
	n := c.count(s)
	c.cache.Add(s, n)
	return n
}

// Truncate cuts s to at most n tokens, marking the cut so the model knows
// the text goes on.
func (c *Counter) Truncate(s string, n int) string {
	if c.count(s) <= n {
		return s
	}
	const mark = " …[truncated]"
	budget := n - c.count(mark)
	if budget <= 0 {
		return ""
	}
	rs := []rune(s)
	lo, hi := 0, len(rs)
	for lo < hi { // longest prefix that fits
		mid := (lo + hi + 1) / 2
		if c.count(string(rs[:mid])) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return string(rs[:lo]) + mark
}

// cl100kPattern is cl100k_base's pre-tokenizer.
const cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// cl100k is built once per process: the rank table has 100k entries (about
// 10 MB, slow to parse) and the encoder is immutable and safe for
// concurrent use, so sharing it is a cache, not mutable global state. The
// ranks come from the offline loader, embedded in the binary, and are
// handed to tiktoken directly rather than through tiktoken.GetEncoding, so
// that tiktoken's global loader setting is never touched (which would make
// every other user of tiktoken in the process download files).
var cl100k = sync.OnceValues(func() (*tiktoken.Tiktoken, error) {
	ranks, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe("cl100k_base.tiktoken")
	if err != nil {
		return nil, fmt.Errorf("tokens: load cl100k ranks: %w", err)
	}
	special := map[string]int{
		"<|endoftext|>":   100257,
		"<|fim_prefix|>":  100258,
		"<|fim_middle|>":  100259,
		"<|fim_suffix|>":  100260,
		"<|endofprompt|>": 100276,
	}
	bpe, err := tiktoken.NewCoreBPE(ranks, special, cl100kPattern)
	if err != nil {
		return nil, fmt.Errorf("tokens: cl100k: %w", err)
	}
	allowed := map[string]any{}
	for k := range special {
		allowed[k] = true
	}
	return tiktoken.NewTiktoken(bpe, &tiktoken.Encoding{Name: "cl100k_base", PatStr: cl100kPattern,
		MergeableRanks: ranks, SpecialTokens: special}, allowed), nil
})
