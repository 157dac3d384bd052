package recall

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/dlclark/regexp2"
	tiktoken "github.com/pkoukk/tiktoken-go"
)

// tiktokenCL100K is the reference: tiktoken-go's encoder over the same
// ranks, and the same pattern compiled with regexp2 for comparing pieces.
var tiktokenCL100K = sync.OnceValues(func() (*tiktoken.Tiktoken, error) {
	ranks, err := cl100kRanks()
	if err != nil {
		return nil, err
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
		return nil, err
	}
	set := map[string]any{}
	for k := range special {
		set[k] = true
	}
	return tiktoken.NewTiktoken(bpe, &tiktoken.Encoding{Name: "cl100k_base", PatStr: cl100kPattern, MergeableRanks: ranks, SpecialTokens: special}, set), nil
})

var cl100kRegexp = sync.OnceValue(func() *regexp2.Regexp {
	return regexp2.MustCompile(cl100kPattern, regexp2.None)
})

type cl100kRef struct {
	enc *tiktoken.Tiktoken
	c   cl100kCounter
}

func newCL100KRef(tb testing.TB) cl100kRef {
	tb.Helper()
	enc, err := tiktokenCL100K()
	if err != nil {
		tb.Fatal(err)
	}
	ranks, err := cl100kRanks()
	if err != nil {
		tb.Fatal(err)
	}
	return cl100kRef{enc: enc, c: newCL100KCounter(ranks)}
}

// regexpPieces splits s as tiktoken-go does: regexp2 over []rune(s), each
// match cut out of the rune slice.
func regexpPieces(s string) []string {
	runes := []rune(s)
	var out []string
	m, _ := cl100kRegexp().FindRunesMatch(runes)
	for m != nil {
		out = append(out, string(runes[m.Index:m.Index+m.Length]))
		m, _ = cl100kRegexp().FindNextMatch(m)
	}
	return out
}

// pieces splits s with the hand-written pre-tokenizer.
func (c cl100kCounter) pieces(s string) []string {
	s = replaceInvalidUTF8(s)
	var out []string
	for i := 0; i < len(s); {
		j := c.next(s, i)
		out = append(out, s[i:j])
		i = j
	}
	return out
}

// check compares the count (and, with pieces, the split) of s with
// tiktoken-go's.
func (r cl100kRef) check(t testing.TB, s string, pieces bool) bool {
	t.Helper()
	want := len(r.enc.EncodeOrdinary(s))
	got := r.c.count(s)
	ok := true
	if got != want {
		t.Errorf("count(%q) = %d, tiktoken-go says %d", s, got, want)
		ok = false
	}
	if pieces {
		if gp, wp := r.c.pieces(s), regexpPieces(s); !slices.Equal(gp, wp) {
			t.Errorf("pieces(%q) = %q, regexp gives %q", s, gp, wp)
			ok = false
		}
	}
	return ok
}

var cl100kTricky = []string{
	"",
	"a",
	" ",
	"hello world",
	"Hello, World!",
	"The user's daughter starts school in September 2025 (grade 3).",
	"I'm sure they'll say we've done what you'd expect; it's theirs, isn't it?",
	"I'M SURE THEY'LL SAY WE'VE DONE WHAT YOU'D EXPECT; IT'S THEIRS, ISN'T IT?",
	"'S 'T 'RE 'VE 'M 'LL 'D 'Re 'rE 'lL 'x 're 'r 'l 'v '",
	"'sa 'tis 'really 'velvet 'llama 'dd ''s '''",
	"1 2 3 4 5 6 7 8 9 10 11 12 123456789012345",
	"1234567 12.5% $1,000,000.00 3.14159 ４５６７ ²³ ½¾ Ⅻ 〇一二",
	"张伟搬到深圳工作了，他说那边的天气很热。",
	"Mixed 中文 and English, plus émojis 🎉 and ümlauts.",
	"e\u0301e\u0301 cafe\u0301 \u0301a a\u0301\u0301b \u0301\u0301",
	"👨‍👩‍👧‍👦 family 🏳️‍🌈 flag 👍🏽 ok",
	"line one\nline two\r\nline three\r\n\r\nend",
	"\n\n\n",
	"\r\n\r\n  \r\n\t\n x",
	"  \n  x",
	"a  \n\n  b",
	"trailing spaces   ",
	"   leading",
	"a   1",
	"a   !",
	"a \t b",
	"a\t\tb",
	"a \u00a0b \u3000c \u2028d \u2029e \u0085f \u1680g \u202fh \u205fi \u200bj \ufeffk",
	"\u00a0\u00a0x \u3000\u3000中 \u2028\u2028\n",
	"\v\f\v x \f\fy",
	"!!! ??? ... --- ***",
	" !!!\n\n\nx",
	"a ...\r\n\r\nb",
	"tab\t!\tx \t!",
	"https://example.com/a/b?c=d&e=f#g",
	"Order A-7731-QX for a standing desk was shipped to Maria Lopez",
	"<|endoftext|> is plain text here <|fim_prefix|>",
	strings.Repeat("internationalization ", 20),
	strings.Repeat("a", 200),
	strings.Repeat("=", 150),
	strings.Repeat(" ", 100) + "x",
	strings.Repeat("\u00a0", 70),
	"\xff\xfe invalid \xc3 utf8 \xed\xa0\x80 surrogate \xe4\xb8 cut",
	"\xff",
	"a\xffb",
	"\x00\x01\x02 control \x7f chars",
	"\ufffd real replacement char",
	"ǅungla ǈ titlecase ʰmodifier ᵃ",
	"İstanbul ſ long s K kelvin Å angstrom",
	"ﬁle ﬂow ligatures",
	"𝐀𝐁𝐂 math letters 𝟏𝟐𝟑 math digits",
	"Ⅰ Ⅱ ⅰ roman numerals",
	"a'b'c O'Neil don't DON'T rock'n'roll",
	"'\n's\r\n'",
	" 's ' s",
}

func TestCL100KTricky(t *testing.T) {
	r := newCL100KRef(t)
	for _, s := range cl100kTricky {
		r.check(t, s, true)
	}
	if got := r.c.count("hello world"); got != 2 {
		t.Errorf("count(hello world) = %d, want 2", got)
	}
}

// factTexts are realistic fact texts: English and Chinese, with names,
// codes, dates and flight numbers.
var factTexts = []string{
	"Maria Lopez works as a nurse at Umbrella Health",
	"James Smith moved to Lisbon last March for a new job",
	"Order B-0421-QX for a standing desk was shipped to Aisha Khan",
	"The user went to the climbing gym with Kenji",
	"Sofia Rossi flew to Osaka on flight NH213 to visit family",
	"Priya's birthday party is planned at the botanical garden",
	"Noah Becker is allergic to peanuts and carries medication",
	"张伟搬到深圳工作了",
	"李娜在杭州开了一家咖啡店",
	"王芳周末喜欢去书店",
}

// cl100kAlphabet is what the random strings are made of: every kind of
// rune the pattern tells apart, and the contractions as whole units.
var cl100kAlphabet = []string{
	"a", "b", "s", "T", "Z", "é", "ß", "Ω", "я", "中", "文", "の", "한",
	"e\u0301", "\u0301", "\u0308", "\u200d",
	"0", "7", "9", "²", "½", "٣", "Ⅻ",
	" ", " ", " ", "  ", "\t", "\n", "\r", "\r\n", "\v", "\f",
	"\u00a0", "\u3000", "\u2028", "\u2029", "\u0085", "\u1680", "\u2003",
	".", ",", "!", "?", "-", "(", ")", "\"", "'", "$", "%", "#", "/", "<|", "|>", "\x00",
	"🎉", "👍🏽", "👨‍👩‍👧", "\ufffd", "\xff", "\xe4\xb8",
	"'s", "'S", "'t", "'T", "'re", "'RE", "'Re", "'ve", "'VE", "'m", "'M", "'ll", "'LL", "'lL", "'d", "'D",
	"the", " the", "ing", " user", "Maria", " 2025", "hello", "tion",
}

func randomCL100KText(rng *rand.Rand) string {
	var b strings.Builder
	for n := rng.IntN(24); n >= 0; n-- {
		b.WriteString(cl100kAlphabet[rng.IntN(len(cl100kAlphabet))])
	}
	return b.String()
}

func TestCL100KDifferential(t *testing.T) {
	r := newCL100KRef(t)
	texts := append(slices.Clone(factTexts), cl100kTricky...)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		texts = append(texts, randomCL100KText(rng))
	}
	fails := 0
	for _, s := range texts {
		if !r.check(t, s, true) {
			if fails++; fails > 20 {
				t.Fatal("too many mismatches")
			}
		}
	}
}

// TestCL100KEveryRune puts every rune in the contexts the pattern cares
// about (alone, in a run, after a space, a letter, a digit and a no-break
// space, before a letter, a digit, an apostrophe and a newline), a chunk of
// runes at a time, so that each class is checked against regexp2's.
func TestCL100KEveryRune(t *testing.T) {
	r := newCL100KRef(t)
	var b strings.Builder
	n, fails := 0, 0
	flush := func() {
		if b.Len() > 0 && !r.check(t, b.String(), true) {
			if fails++; fails > 5 {
				t.Fatal("too many mismatches")
			}
		}
		b.Reset()
	}
	for c := rune(0); c <= unicode.MaxRune; c++ {
		switch {
		case c >= 0xd800 && c < 0xe000:
			continue // not a rune in a Go string; invalid bytes are tested elsewhere
		case c >= 0x10000 && c%5 != 0 || testing.Short() && c%7 != 0:
			continue // a sample of the other planes, mostly unassigned
		case c >= 0x40000 && c < 0xe0000 || c >= 0xe1000 && c < 0xffff0:
			continue // unassigned planes, and all but a bit of private use
		}
		fmt.Fprintf(&b, "%c x%c%c%c %c1%c\u00a0%c'S%c\n", c, c, c, c, c, c, c, c)
		if n++; n%128 == 0 {
			flush()
		}
	}
	flush()
}

func FuzzCL100KCount(f *testing.F) {
	for _, s := range cl100kTricky {
		f.Add(s)
	}
	r := newCL100KRef(f)
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			// The references are quadratic in a piece's length (regexp2
			// backtracks over whitespace runs, tiktoken-go's merge scans
			// every pair): keep each run cheap.
			t.Skip()
		}
		r.check(t, s, true)
	})
}

// benchSentences are realistic fact texts, mostly English, some Chinese.
func benchSentences() []string {
	return append(slices.Clone(factTexts),
		"The user's daughter starts school in September 2025 (grade 3) and is allergic to peanuts.",
		"张伟搬到深圳工作了，他说那边的天气很热。",
		"Maria Lopez recommended the ramen shop near the station in Osaka; she goes there every Friday.",
	)
}

func BenchmarkCL100KCount(b *testing.B) {
	r := newCL100KRef(b)
	texts := benchSentences()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		r.c.count(texts[i%len(texts)])
	}
}

func BenchmarkTiktokenGoCount(b *testing.B) {
	r := newCL100KRef(b)
	texts := benchSentences()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		_ = len(r.enc.EncodeOrdinary(texts[i%len(texts)]))
	}
}
