package recall

import (
	"math"

	"github.com/memstream/memstream/simscale"
)

// diversify reorders hs (sorted by final score, best first) by maximal
// marginal relevance with weight d on diversity. Relevance is the final
// score scaled to the best one; redundancy is the highest cosine to an
// already picked fact, as the scale's redundancy (0 for unrelated texts). A fact without an embedding counts as redundant
// with nothing. Quadratic in len(hs), which hydration caps at a few
// pools (150 at the mid budget: well under a millisecond of arithmetic
// per hundred dimensions).
func diversify(hs []hydrated, d float64, scale simscale.Scale) {
	n := len(hs)
	if n < 3 {
		return
	}
	top := hs[0].Scores.Final
	if top <= 0 {
		top = 1
	}
	norms := make([]float64, n)
	for i := range hs {
		norms[i] = norm(hs[i].vec)
	}
	// maxSim[i] is fact i's highest cosine to the picked facts so far.
	maxSim := make([]float64, n)
	picked := make([]bool, n)
	order := make([]int, 0, n)
	last := 0 // the best fact is always first
	picked[0] = true
	order = append(order, 0)
	for len(order) < n {
		best, bestV := -1, math.Inf(-1)
		for i := range hs {
			if picked[i] {
				continue
			}
			if s := scale.Redundancy(cosine(hs[i].vec, hs[last].vec, norms[i], norms[last])); s > maxSim[i] {
				maxSim[i] = s
			}
			v := (1-d)*hs[i].Scores.Final/top - d*maxSim[i]
			if v > bestV {
				best, bestV = i, v
			}
		}
		picked[best] = true
		order = append(order, best)
		last = best
	}
	out := make([]hydrated, n)
	for k, i := range order {
		out[k] = hs[i]
	}
	copy(hs, out)
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// cosine is 0 when either vector is missing or zero, or their lengths
// differ.
func cosine(a, b []float32, na, nb float64) float64 {
	if len(a) == 0 || len(a) != len(b) || na == 0 || nb == 0 {
		return 0
	}
	var dot float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
	}
	return dot / (na * nb)
}
