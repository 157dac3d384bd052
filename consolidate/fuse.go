package consolidate

import (
	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

// interleave fuses ranked candidate lists by taking them in turn (slot,
// semantic, keyword), skipping observations already taken. Unlike score
// fusion it guarantees every ranking its share of the top: the semantic
// near-twin of a fact stays in the first positions even when many
// observations share its words, and the slot holder of a knowledge update
// is there even when its words differ entirely.
func interleave(limit int, lists map[string][]store.ObservationCandidate, order ...string) []Candidate {
	var out []Candidate
	at := map[uuid.UUID]int{}
	for i := 0; ; i++ {
		progressed := false
		for _, name := range order {
			l := lists[name]
			if i >= len(l) {
				continue
			}
			progressed = true
			c := l[i]
			if j, ok := at[c.ID]; ok {
				out[j].Via = append(out[j].Via, name)
				continue
			}
			at[c.ID] = len(out)
			out = append(out, Candidate{ObservationCandidate: c, Via: []string{name}})
		}
		if !progressed {
			break
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}
