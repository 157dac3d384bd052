package recall

import (
	"strings"
	"unicode"
)

// collapseDuplicates keeps only the best-scored of results whose texts are
// the same after normalisation (see dedupeKey). hs must be sorted best
// first; the order of the kept results is unchanged. It returns the kept
// prefix of hs and how many were collapsed.
//
// Small talk recurs across sessions ("That's rough.", "Anything
// planned?") and each copy is its own fact, and the consolidator writes
// observations that repeat a single fact's text; without this the copies
// take several of the top slots and say nothing new. The copies are not
// lost information: the kept one reads the same, and an observation
// carries its evidence.
func collapseDuplicates(hs []hydrated) ([]hydrated, int) {
	seen := make(map[string]bool, len(hs))
	out := hs[:0]
	for _, h := range hs {
		k := dedupeKey(h.Text)
		if k != "" && seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, h)
	}
	return out, len(hs) - len(out)
}

// dedupeKey normalises a fact's text for duplicate detection: a leading
// speaker label ("Alice: ", "助手: ") is dropped, letters are lower-cased,
// and only letters and digits are kept, so punctuation, spacing and case
// differences do not make two copies of one sentence distinct.
func dedupeKey(text string) string {
	if i := strings.IndexAny(text, ":："); i > 0 && i <= 24 && !strings.ContainsAny(text[:i], " \t") {
		text = text[i:]
	}
	var b strings.Builder
	b.Grow(len(text))
	for _, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}
