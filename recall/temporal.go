package recall

import (
	"context"
	"time"

	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/timeparse"
)

// temporalLookback is how long before a period an occurrence may have
// begun and still be found overlapping it: long enough for the day, week
// and month spans the extractor writes.
const temporalLookback = 31 * 24 * time.Hour

// Temporal score parts: being inside the named period dominates; by
// occurrence counts more than by mention (a fact mentioned on Saturday may
// be about any day); similarity orders facts within the period.
const (
	temporalInside    = 1.0
	temporalNear      = 0.5 // times closeness, for the widened margin
	temporalMentioned = 0.7 // factor when only mentioned_at matched
	temporalSim       = 0.5 // times cosine similarity
)

// temporal ranks facts in the periods the query names.
func (r *Recaller) temporal(ctx context.Context, q *query) ([]Candidate, string, error) {
	if len(q.windows) == 0 {
		return nil, "no time expression in the query", nil
	}
	// Each period is scanned itself with the full limit, and its margins
	// (half its length on each side, where a fact can still rank below
	// those inside) with a quarter of it.
	var starts, ends []time.Time
	var lims []int32
	for _, w := range q.windows {
		half := w.End.Sub(w.Start) / 2
		starts = append(starts, w.Start, w.Start.Add(-half), w.End)
		ends = append(ends, w.End, w.Start, w.End.Add(half))
		lims = append(lims, int32(2*q.pool), int32(q.pool/2), int32(q.pool/2))
	}
	var vec []float32
	if v, ok := q.optionalVector(ctx, r.cfg.ArmTimeout/2); ok {
		vec = v
	}
	rows, err := r.st.RecallTemporal(ctx, q.filter(), store.TemporalSearch{Starts: starts, Ends: ends, Limits: lims, Vec: vec,
		Lookback: temporalLookback})
	if err != nil {
		return nil, "", err
	}
	out := make([]Candidate, len(rows))
	for i, f := range rows {
		out[i] = Candidate{ID: f.ID, Score: temporalScore(q.windows, f.OccurredStart, f.OccurredEnd, f.MentionedAt, r.cfg.Scale.Relevance(f.Sim))}
	}
	sortCandidates(out)
	if len(out) > q.pool {
		out = out[:q.pool]
	}
	return out, "", nil
}

// temporalScore is the best, over the query's periods, of how well a fact
// sits in the period, plus its similarity to the query.
func temporalScore(windows []timeparse.Span, os, oe *time.Time, mentioned time.Time, sim float64) float64 {
	best := 0.0
	for _, w := range windows {
		s, e := w.Start, w.End
		var place float64
		if os != nil {
			a, b := *os, *os
			if oe != nil && oe.After(*os) {
				b = *oe
			}
			place = closeness(a, b, s, e)
		}
		if m := temporalMentioned * closeness(mentioned, mentioned, s, e); m > place {
			place = m
		}
		best = max(best, place)
	}
	return best + temporalSim*max(sim, 0)
}

// closeness is 1 when [a, b] overlaps [s, e) (a point a == b inside
// counts), and falls linearly to 0 over half the period's length outside
// it, scaled by temporalNear.
func closeness(a, b, s, e time.Time) float64 {
	if (a.Before(e) && b.After(s)) || (!a.Before(s) && a.Before(e)) {
		return temporalInside
	}
	half := e.Sub(s) / 2
	if half <= 0 {
		return 0
	}
	var d time.Duration
	if !a.Before(e) {
		d = a.Sub(e)
	} else {
		d = s.Sub(b)
	}
	if d >= half {
		return 0
	}
	return temporalNear * (1 - float64(d)/float64(half))
}
