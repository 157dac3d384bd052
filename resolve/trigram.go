package resolve

import (
	"strings"
	"unicode"
)

// Trigram returns the similarity of a and b exactly as PostgreSQL's pg_trgm
// similarity() computes it, so a database prefilter (`name % $1`, or
// similarity(name, $1) > t) and the Go decision agree on which names are
// close. Each string is lower-cased and split into words at every character
// that is not a letter or digit; each word is padded with two spaces in front
// and one behind; the result is |common| / (|A| + |B| - |common|) over the
// sets of three-character substrings. It is 0 when either side has no
// trigrams.
//
// pg_trgm decides what a letter is by the database locale: with a plain "C"
// locale it ignores non-ASCII letters, so Chinese names only get trigrams
// under a UTF-8 locale (C.UTF-8 or en_US.UTF-8). The resolver compares
// Normalize'd names, so store normalized aliases for the prefilter too.
func Trigram(a, b string) float64 {
	ta, tb := trigrams(a), trigrams(b)
	if len(ta) == 0 || len(tb) == 0 {
		return 0
	}
	common := 0
	for t := range ta {
		if tb[t] {
			common++
		}
	}
	return float64(common) / float64(len(ta)+len(tb)-common)
}

type trigram [3]rune

func trigrams(s string) map[trigram]bool {
	set := map[trigram]bool{}
	for _, w := range strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		rs := make([]rune, 0, len(w)+3)
		rs = append(rs, ' ', ' ')
		for _, r := range w {
			rs = append(rs, unicode.ToLower(r))
		}
		rs = append(rs, ' ')
		for i := 0; i+3 <= len(rs); i++ {
			set[trigram{rs[i], rs[i+1], rs[i+2]}] = true
		}
	}
	return set
}
