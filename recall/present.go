package recall

import (
	"cmp"
	"slices"
	"strings"
	"time"
	"unicode"
)

// presentQuery reports a question about the present state of something
// ("Where do I live now?", "Who is my boss these days?", 她现在住在哪里？),
// told by the present-time adverbials of English and Chinese. The latest
// statement answers it: an older one states what used to be true
// (presentOrder).
func presentQuery(query string) bool {
	for _, c := range presentZh {
		if strings.Contains(query, c) {
			return true
		}
	}
	ws := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool { return !unicode.IsLetter(r) })
	for i, w := range ws {
		switch w {
		case "now", "currently", "current", "nowadays", "presently", "anymore":
			return true
		case "these":
			if i+1 < len(ws) && ws[i+1] == "days" {
				return true
			}
		case "the":
			// at the moment, at present
			if i > 0 && ws[i-1] == "at" && i+1 < len(ws) && ws[i+1] == "moment" {
				return true
			}
		case "present":
			if i > 0 && ws[i-1] == "at" {
				return true
			}
		}
	}
	return false
}

// A question about the present state of something is answered by the
// statement that changed it ("…moved into the new place in X", "I switched
// to Y"), which rarely shares words with the question. So the query is
// embedded behind a generic statement of change, made of the common
// English and Chinese verbs and adverbs of changing state.
const (
	changeFrame   = "I moved, switched, changed, started, no longer; now: "
	changeFrameZh = "我搬了、换了、改了、开始了、不再；现在："
)

// changeQuery returns the text to embed for query: framed when it asks
// about the present, else query itself.
func changeQuery(query string) string {
	if !presentQuery(query) {
		return query
	}
	for _, r := range query {
		if unicode.Is(unicode.Han, r) {
			return changeFrameZh + query
		}
	}
	return changeFrame + query
}

var presentZh = []string{"现在", "目前", "如今", "眼下", "当前"}

// presentHead is how many of the best results presentOrder reorders: the
// first page an agent reads. Below it nothing moves, so what a present-state
// question finds is what it found without the rule; only which of those
// comes first changes.
const presentHead = 10

// presentOrder reorders the head of hs (scored and sorted) for a question
// about the present: by score with recency decaying to nothing, instead of
// to recencyFloor, so of two statements of one state that both made the
// head, the newer comes first. Each head result's final score becomes its
// own present-order key mapped onto the span the head had (as rerank
// does): the list stays sorted, the head stays above the rest, and its top
// score stays comparable with other questions'.
func presentOrder(hs []hydrated, q *query, halfLife time.Duration) {
	head := hs[:min(len(hs), presentHead)]
	if len(head) < 2 {
		return
	}
	keys := make([]float64, len(head))
	flo, top := head[0].Scores.Final, head[0].Scores.Final
	for i, h := range head {
		flo, top = min(flo, h.Scores.Final), max(top, h.Scores.Final)
		usual := recency(h.factTime(), q, halfLife)
		keys[i] = h.Scores.Final / usual * recencyWithFloor(h.factTime(), q, halfLife, 0)
	}
	klo, khi := minMax(keys)
	if khi <= klo {
		return
	}
	for i := range head {
		head[i].Scores.Final = flo + unit(keys[i], klo, khi)*(top-flo)
	}
	slices.SortStableFunc(head, func(a, b hydrated) int {
		if c := cmp.Compare(b.Scores.Final, a.Scores.Final); c != 0 {
			return c
		}
		return cmpUUID(a.ID, b.ID)
	})
}
