package recall

import (
	"cmp"
	"slices"
	"strings"
)

const (
	// slotTermWeight scales the IDF of a term the keyword arm adds for a
	// slot the query asks about (slot.Terms): "moved" is evidence
	// for "where do I live", but weaker than a word the user typed.
	slotTermWeight = 0.5
	// slotBoost multiplies the final score of a result that states the
	// value of a slot the query asks about, so "We finally moved into the
	// new place in Fremont." rises above small talk that merely shares
	// character n-grams with "Where do I live at the moment?".
	slotBoost = 1.15
)

// querySlots are the slots of q that recall acts on.
func querySlots(q *query) []*slot { return slotsOf(q.Query) }

// firstPerson reports a query about the asker ("my", "I", "we").
func firstPerson(q string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !(r >= 'a' && r <= 'z') && r != '\''
	}) {
		switch strings.TrimSuffix(w, "'s") {
		case "i", "i'm", "i've", "i'd", "me", "my", "mine", "we", "our", "us", "we're", "we've":
			return true
		}
	}
	return strings.ContainsAny(q, "我咱")
}

// preferSlotValues applies slots to hs, which is sorted best first.
//
// A result that states a slot's value is boosted (slotBoost). When the
// query asks for the present value ("now", "these days", …) and names no
// period, the results holding a value of the same slot are reordered
// newest first among the ranks they occupy: the user has told us the
// value twice, and the later telling supersedes the earlier ("We live in
// Ballard" then "We moved into the new place in Mission Bay"). A question
// with a period ("where did I live last year") keeps the period-aware
// order of scoreResults instead. For a first-person question only the
// asker's own facts (experience, and observations built from them) take
// part: a cousin's move says nothing about where the asker lives.
//
// It returns whether it changed anything.
func preferSlotValues(hs []hydrated, q *query) bool {
	ss := querySlots(q)
	if len(ss) == 0 {
		return false
	}
	own := firstPerson(q.Query)
	changed := false
	for _, s := range ss {
		var pos []int
		for i := range hs {
			if own && hs[i].Type == "world" {
				continue
			}
			if s.Matches(hs[i].Text) {
				pos = append(pos, i)
			}
		}
		if len(pos) == 0 {
			continue
		}
		changed = true
		for _, i := range pos {
			hs[i].Scores.Final *= slotBoost
		}
		if len(q.windows) > 0 || !asksCurrent(q.Query) || len(pos) < 2 {
			continue
		}
		vals := make([]hydrated, len(pos))
		for k, i := range pos {
			vals[k] = hs[i]
		}
		// An observation's time is that of its latest evidence, not when
		// its text's value was stated (an observation "We live in
		// Ballard" may have absorbed the later move as evidence), so the
		// facts, whose time is their own, go first.
		slices.SortStableFunc(vals, func(a, b hydrated) int {
			if ao, bo := a.Type == "observation", b.Type == "observation"; ao != bo {
				if ao {
					return 1
				}
				return -1
			}
			return b.MentionedAt.Compare(a.MentionedAt)
		})
		// The newest takes the best of the occupied ranks and its score,
		// so the order stays consistent with the scores shown.
		scores := make([]float64, len(pos))
		for k, i := range pos {
			scores[k] = hs[i].Scores.Final
		}
		for k, i := range pos {
			hs[i] = vals[k]
			hs[i].Scores.Final = scores[k]
		}
	}
	if changed {
		slices.SortStableFunc(hs, func(a, b hydrated) int {
			if c := cmp.Compare(b.Scores.Final, a.Scores.Final); c != 0 {
				return c
			}
			return cmpUUID(a.ID, b.ID)
		})
	}
	return changed
}
