package recall

import (
	"cmp"
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
// Interleave takes the arms' lists in turn (semantic, keyword, graph,
// temporal), skipping facts already taken, so every arm is guaranteed its
// share of the top; its value is 1/(k + position).
func fuse(method string, arms []ArmTrace, k float64) []fused {
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
			for rank, c := range a.Candidates {
				byID[c.ID].Rel += 1 / (k + float64(rank+1))
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
