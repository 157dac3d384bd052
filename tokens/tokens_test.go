package tokens

import (
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// texts are fact-like: English, Chinese, codes, numbers, URLs, emoji.
var texts = []string{
	"Shipment for order A-7731-QX was delayed at customs",
	"张伟搬到深圳工作了，他说那边的天气很热。",
	"The user's daughter starts school in September 2025 (grade 3).",
	"1 2 3 4 5 6 7 8 9 10 11 12 123456789012345",
	"https://example.com/a/b?c=d&e=f#g",
	"Mixed 中文 and English, plus émojis 🎉 and ümlauts.",
	strings.Repeat("internationalization ", 20),
	"",
}

func newCounter(t testing.TB, tokenizer string) *Counter {
	t.Helper()
	c, err := New(Config{Tokenizer: tokenizer})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCL100KCounts pins counts of cl100k_base (the ones tiktoken-go and the
// hand-written counter recall used before agreed on), so a change of
// encoder or ranks shows. Invalid UTF-8 is counted as tiktoken-go counts
// it: each bad byte becomes U+FFFD.
func TestCL100KCounts(t *testing.T) {
	t.Parallel()
	c := newCounter(t, CL100K)
	for s, want := range map[string]int{
		"hello world": 2,
		"":            0,
		"Shipment for order A-7731-QX was delayed at customs": 14,
		"张伟搬到深圳工作了，他说那边的天气很热。":                                31,
		"<|endoftext|>": 7,
		"\xff\xfe":      1,
	} {
		if got := c.Count(s); got != want {
			t.Errorf("Count(%q) = %d, want %d", s, got, want)
		}
	}
	if c.Name() != "cl100k_base" {
		t.Errorf("Name = %q", c.Name())
	}
}

// TestEstimateNeverUnderCounts: the estimate exists for budgets that must
// not overflow, so it may over-count cl100k but never under-count it.
func TestEstimateNeverUnderCounts(t *testing.T) {
	t.Parallel()
	bpe, est := newCounter(t, CL100K), newCounter(t, Estimate)
	for _, s := range texts {
		if e, b := est.Count(s), bpe.Count(s); e < b {
			t.Errorf("estimate %d < cl100k %d for %q", e, b, s)
		}
	}
}

func TestCacheServesTheSameCount(t *testing.T) {
	t.Parallel()
	c := newCounter(t, CL100K)
	long := strings.Repeat("a long prompt that is never cached ", 100)
	for _, s := range append(texts, long) {
		want := c.count(s)
		for range 2 {
			if got := c.Count(s); got != want {
				t.Errorf("Count(%q) = %d, want %d", s, got, want)
			}
		}
	}
	if c.cache.Contains(long) {
		t.Error("a text longer than maxCached was cached")
	}
	if c.cache.Len() != len(texts) {
		t.Errorf("cache holds %d entries, want %d", c.cache.Len(), len(texts))
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	for _, tk := range []string{CL100K, Estimate} {
		c := newCounter(t, tk)
		s := strings.Repeat("The user moved to Lisbon in March. 张伟搬到深圳工作了。", 20)
		for _, n := range []int{0, 3, 10, 50, 200} {
			got := c.Truncate(s, n)
			if c.Count(got) > n || !utf8.ValidString(got) {
				t.Errorf("%s: Truncate(…, %d) = %q: %d tokens or invalid UTF-8", tk, n, got, c.Count(got))
			}
			if n >= 10 && !strings.HasSuffix(got, "…[truncated]") {
				t.Errorf("%s: Truncate(…, %d) = %q lacks the cut mark", tk, n, got)
			}
		}
		if got := c.Truncate("short", 100); got != "short" {
			t.Errorf("%s: a text that fits was changed to %q", tk, got)
		}
	}
}

// TestConcurrentCount shares one counter, as recall and reflect do; run
// with -race it checks the cache and the encoder.
func TestConcurrentCount(t *testing.T) {
	t.Parallel()
	c := newCounter(t, CL100K)
	want := make([]int, len(texts))
	for i, s := range texts {
		want[i] = c.count(s)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				k := (i + g) % len(texts)
				if got := c.Count(texts[k]); got != want[k] {
					t.Errorf("Count(%q) = %d, want %d", texts[k], got, want[k])
				}
			}
		})
	}
	wg.Wait()
}

func TestConfigRejectsUnknownTokenizer(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{Tokenizer: "gpt2"}); err == nil || !strings.Contains(err.Error(), "tokenizer") {
		t.Fatalf("New(gpt2) = %v, want an error naming the tokenizer", err)
	}
}

func BenchmarkCount(b *testing.B) {
	c := newCounter(b, CL100K)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.count(texts[i%len(texts)])
	}
}
