package recall

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Weights of the final score. Fusion decides most of the order; similarity
// to the query separates candidates that fusion left close (for example
// two facts only the graph arm found); the multipliers only nudge.
const (
	weightFused    = 0.7
	weightSemantic = 0.3
	// recencyFloor is the recency factor of a very old fact: old facts
	// lose at most 20%, because an agent's long-term memory is asked about
	// the past on purpose.
	recencyFloor = 0.8
)

// scoreResults sets each result's Scores and sorts best first:
//
//	final = (0.7·fused + 0.3·similarity) · recency
//
// fused is the RRF (or interleave) value scaled to 1 for the best
// candidate; similarity is the cosine to the query as Config.Scale's
// relevance (0 for a typical unrelated text, 1 for identity);
// recency = 0.8 + 0.2·0.5^(age/half-life) (see recency).
func scoreResults(hs []hydrated, fs []fused, q *query, cfg Config) {
	byID := make(map[uuid.UUID]*fused, len(fs))
	for i := range fs {
		byID[fs[i].ID] = &fs[i]
	}
	for i := range hs {
		h := &hs[i]
		f := byID[h.ID]
		sim := cfg.Scale.Relevance(h.sim)
		h.Scores = Scores{Semantic: sim}
		rel := 0.0
		if f != nil {
			rel = f.Rel
			h.Scores.Keyword, h.Scores.Graph, h.Scores.Temporal = f.Keyword, f.Graph, f.Temporal
		}
		final := weightFused*rel + weightSemantic*sim
		if !q.off[HeuristicRecency] {
			final *= recency(h.factTime(), q, cfg.RecencyHalfLife)
		}
		h.Scores.Final = final
	}
	slices.SortStableFunc(hs, func(a, b hydrated) int {
		if c := cmp.Compare(b.Scores.Final, a.Scores.Final); c != 0 {
			return c
		}
		return cmpUUID(a.ID, b.ID)
	})
}

// factTime is when the fact happened, or when it was said if that is all
// we know.
func (h *hydrated) factTime() time.Time {
	if h.OccurredStart != nil {
		return *h.OccurredStart
	}
	return h.MentionedAt
}

// recency decays with the distance between the fact and the period the
// query is about. Without a named period that period is the query time
// itself. With one ("in March 2023", "last Saturday"), a fact inside it is
// not decayed at all, and one outside decays with its distance to the
// period rather than to today, so asking about 2019 does not punish facts
// from 2019 for being old.
func recency(t time.Time, q *query, halfLife time.Duration) float64 {
	return recencyWithFloor(t, q, halfLife, recencyFloor)
}

// recencyWithFloor is recency with floor as the factor of a very old fact.
func recencyWithFloor(t time.Time, q *query, halfLife time.Duration, floor float64) float64 {
	if halfLife <= 0 {
		return 1
	}
	var dist time.Duration
	if len(q.windows) == 0 {
		dist = q.QueryTime.Sub(t)
		if dist < 0 {
			dist = 0 // future plans are as fresh as today
		}
	} else {
		dist = time.Duration(math.MaxInt64)
		for _, w := range q.windows {
			var d time.Duration
			switch {
			case t.Before(w.Start):
				d = w.Start.Sub(t)
			case !t.Before(w.End):
				d = t.Sub(w.End)
			}
			dist = min(dist, d)
		}
	}
	decay := math.Exp2(-float64(dist) / float64(halfLife))
	return floor + (1-floor)*decay
}

// fitBudget keeps results in order while they fit maxTokens. It stops at
// the first result that does not fit rather than skipping to smaller ones
// further down, so the answer is always a prefix of the ranking (an agent
// can trust that nothing better was left out for being long). It returns
// the results, the tokens used and how many were dropped.
func (r *Recaller) fitBudget(hs []hydrated, maxTokens int) ([]hydrated, int, int) {
	used := 0
	for i := range hs {
		n := r.tok.Count(hs[i].Text)
		if hs[i].Context != "" {
			n += r.tok.Count(hs[i].Context)
		}
		if used+n > maxTokens {
			return hs[:i], used, len(hs) - i
		}
		hs[i].Tokens = n
		used += n
	}
	return hs, used, 0
}

// entityRefs lists the entities of the returned facts, most mentioned
// first, then by name.
func entityRefs(hs []hydrated) []EntityRef {
	byID := map[uuid.UUID]*EntityRef{}
	var out []*EntityRef
	for _, h := range hs {
		for _, e := range h.ents {
			ref, ok := byID[e.ID]
			if !ok {
				ref = &EntityRef{ID: e.ID, Name: e.Name, Kind: e.Kind}
				byID[e.ID] = ref
				out = append(out, ref)
			}
			ref.Results++
		}
	}
	slices.SortStableFunc(out, func(a, b *EntityRef) int {
		if c := cmp.Compare(b.Results, a.Results); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	res := make([]EntityRef, len(out))
	for i, e := range out {
		res[i] = *e
	}
	return res
}
