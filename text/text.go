package text

import (
	"strings"
	"unicode"
)

// IsCJK reports whether r is a Han, Hiragana, Katakana or Hangul rune.
func IsCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// CJKTerms returns the bigrams of every CJK run in text (a lone CJK rune
// yields itself), in order of appearance, without duplicates.
func CJKTerms(text string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	var run []rune
	flush := func() {
		switch {
		case len(run) == 1:
			add(string(run))
		case len(run) > 1:
			for i := 0; i+1 < len(run); i++ {
				add(string(run[i : i+2]))
			}
		}
		run = run[:0]
	}
	for _, r := range text {
		if IsCJK(r) {
			run = append(run, r)
			continue
		}
		flush()
	}
	flush()
	return out
}

// Aux builds the search_aux column: CJK bigrams of the text, plus the
// given entity names and aliases (their words and their CJK bigrams).
func Aux(text string, names []string) string {
	var b strings.Builder
	for _, t := range CJKTerms(text) {
		b.WriteString(t)
		b.WriteByte(' ')
	}
	for _, n := range names {
		for _, w := range strings.FieldsFunc(n, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) {
			if hasCJK(w) {
				for _, t := range CJKTerms(w) {
					b.WriteString(t)
					b.WriteByte(' ')
				}
				continue
			}
			b.WriteString(strings.ToLower(w))
			b.WriteByte(' ')
		}
	}
	return strings.TrimSpace(b.String())
}

func hasCJK(s string) bool {
	for _, r := range s {
		if IsCJK(r) {
			return true
		}
	}
	return false
}

// stopwords are dropped from keyword queries: they carry no evidence and
// would turn an OR query into "match everything".
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a about above after again all am an and any are as at be because been before
	being below between both but by can could did do does doing down during each few for from further had has have
	having he her here hers herself him himself his how i if in into is it its itself just let me more most my myself
	no nor not now of off on once only or other our ours ourselves out over own same she should so some such than
	that the their theirs them themselves then there these they this those through to too under until up very was
	we were what when where which while who whom why will with would you your yours yourself yourselves
	tell said say says know think remember recall did does anything something thing things get got
	的 了 是 在 我 你 他 她 们 吗 呢 吧 啊 和 与 也 都 就 还 有 没 什么 怎么 哪里 哪儿 哪个 哪些 为什么 多少`) {
		stopwords[w] = true
	}
}

// IsStopword reports whether a lower-cased word carries no evidence.
func IsStopword(w string) bool { return stopwords[w] }

// QueryTerms splits a query into informative terms: lower-cased words that
// are not stopwords, and CJK bigrams. The keyword retriever weighs them by
// inverse document frequency before building its tsquery.
func QueryTerms(q string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, w := range strings.FieldsFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) && r != '_' }) {
		if hasCJK(w) {
			// Mixed runs: keep the non-CJK letters as a word too.
			var ascii strings.Builder
			for _, r := range w {
				if !IsCJK(r) {
					ascii.WriteRune(unicode.ToLower(r))
				}
			}
			if a := ascii.String(); len(a) > 1 && !stopwords[a] {
				add(a)
			}
			for _, t := range CJKTerms(cutCJKStopwords(w)) {
				if !stopwords[t] && !hasParticle(t) {
					add(t)
				}
			}
			continue
		}
		lw := strings.ToLower(w)
		if stopwords[lw] || (len(lw) < 2 && !unicode.IsDigit(rune(lw[0]))) {
			continue
		}
		add(lw)
	}
	return out
}

// cjkStopPhrases are the multi-character stop words, cut out of a CJK run
// before it is split into bigrams: "阿洋新买的是什么车" must not yield 是什
// and 么车, which match every "…是什么…" question in the bank.
var cjkStopPhrases = []string{"为什么", "什么", "怎么", "哪里", "哪儿", "哪个", "哪些", "多少"}

// cutCJKStopwords replaces the multi-character stop words of a CJK run
// with a space, so that no bigram spans them.
func cutCJKStopwords(w string) string {
	for _, p := range cjkStopPhrases {
		w = strings.ReplaceAll(w, p, " ")
	}
	return w
}

// particles are grammatical characters: a bigram holding one (买的, 的是,
// 了一) is a fragment of grammar shared by most sentences, not evidence.
const particles = "的了是吗呢吧啊"

func hasParticle(t string) bool { return strings.ContainsAny(t, particles) }
