package recall

import (
	"cmp"
	"math"
	"slices"

	"github.com/google/uuid"
)

// fused is one candidate after fusion. Rel is the fused value scaled so
// that the best candidate has 1; arm scores ride along for Scores.
type fused struct {
	ID                uuid.UUID
	Rel               float64
	Semantic, Keyword float64
	Graph, Temporal   float64
}

// fuse merges the arms' ranked lists.
//
// RRF (Cormack et al. 2009) sums 1/(k + rank) over the arms that returned
// a fact: it needs no score calibration between arms whose scores live on
// different scales (cosine, IDF sums, link weights), and a fact that
// several arms agree on rises above one that a single arm ranks first.
//
// Candidates an arm scored equally share the mean rank of their group
// (fractional ranking): the graph arm gives every fact that mentions the
// user's own entity the same weight, and ranking such ties 1…n would turn
// the arm's id tie-break into relevance. Shared ranks leave the order
// among them to the similarity term of the final score, and a large tie
// group, which says little about any one member, contributes little.
//
// Weighted RRF multiplies an arm's reciprocal ranks by its weight
// (weights nil: every arm 1), as in the weighted variants of RRF used by
// hybrid search engines: ranks keep the arms' scales out of fusion, and the
// weight says how much a rank of that arm is worth.
//
// Interleave takes the arms' lists in turn (semantic, keyword, graph,
// temporal), skipping facts already taken, so every arm is guaranteed its
// share of the top; its value is 1/(k + position).
func fuse(method string, arms []ArmTrace, k float64, weights map[string]float64) []fused {
	byID := map[uuid.UUID]*fused{}
	var order []*fused
	get := func(id uuid.UUID) *fused {
		f, ok := byID[id]
		if !ok {
			f = &fused{ID: id}
			byID[id] = f
			order = append(order, f)
		}
		return f
	}
	for _, a := range arms {
		for _, c := range a.Candidates {
			f := get(c.ID)
			switch a.Arm {
			case ArmSemantic:
				f.Semantic = c.Score
			case ArmKeyword:
				f.Keyword = c.Score
			case ArmGraph:
				f.Graph = c.Score
			case ArmTemporal:
				f.Temporal = c.Score
			}
		}
	}
	switch method {
	case FusionInterleave:
		pos := 0
		taken := map[uuid.UUID]bool{}
		for i := 0; ; i++ {
			more := false
			for _, a := range arms {
				if i >= len(a.Candidates) {
					continue
				}
				more = true
				id := a.Candidates[i].ID
				if taken[id] {
					continue
				}
				taken[id] = true
				pos++
				byID[id].Rel = 1 / (k + float64(pos))
			}
			if !more {
				break
			}
		}
	default:
		for _, a := range arms {
			w := 1.0
			if x, ok := weights[a.Arm]; ok {
				w = x
			}
			cs := a.Candidates
			for i := 0; i < len(cs); {
				j := i + 1
				for j < len(cs) && tied(cs[j].Score, cs[i].Score) {
					j++
				}
				// ranks i+1 … j share their mean
				rank := float64(i+1+j) / 2
				for _, c := range cs[i:j] {
					byID[c.ID].Rel += w / (k + rank)
				}
				i = j
			}
		}
	}
	out := make([]fused, len(order))
	best := 0.0
	for i, f := range order {
		out[i] = *f
		best = max(best, f.Rel)
	}
	if best > 0 {
		for i := range out {
			out[i].Rel /= best
		}
	}
	slices.SortStableFunc(out, func(a, b fused) int {
		if c := cmp.Compare(b.Rel, a.Rel); c != 0 {
			return c
		}
		return cmpUUID(a.ID, b.ID)
	})
	return out
}

// tied reports arm scores equal up to float noise: the same SQL sum over
// the same weights may differ in the last bits.
func tied(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*max(math.Abs(a), math.Abs(b), 1)
}
