package recall

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/memstream/memstream/timeparse"
)

// qTemporalArm finds facts near the query's periods. $5/$6 are the
// periods widened by half their length on each side, so that a fact just
// outside "last week" can still rank (below those inside); the exact
// membership is decided in Go. A fact matches by its occurrence range
// (half-open, or a point when occurred_end is missing) or, failing that,
// by when it was mentioned. The prefilter on the widest range lets the
// planner use the (bank, occurred_start) and (bank, mentioned_at) indexes.
const qTemporalArm = `SELECT m.id, m.occurred_start, m.occurred_end, m.mentioned_at,
	CASE WHEN $7::halfvec IS NULL OR m.embedding IS NULL THEN 0 ELSE 1 - (m.embedding <=> $7::halfvec) END AS sim
FROM memory_units m
WHERE ` + unitFilter + `
	AND ((m.occurred_start < $9 AND (coalesce(m.occurred_end, m.occurred_start) > $8 OR m.occurred_start >= $8))
	     OR (m.mentioned_at >= $8 AND m.mentioned_at < $9))
	AND EXISTS (SELECT 1 FROM unnest($5::timestamptz[], $6::timestamptz[]) AS w(s, e)
		WHERE (m.occurred_start < w.e AND (coalesce(m.occurred_end, m.occurred_start) > w.s OR m.occurred_start >= w.s))
		   OR (m.mentioned_at >= w.s AND m.mentioned_at < w.e))
ORDER BY sim DESC, m.mentioned_at DESC
LIMIT $10`

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
	starts := make([]time.Time, len(q.windows))
	ends := make([]time.Time, len(q.windows))
	lo, hi := time.Time{}, time.Time{}
	for i, w := range q.windows {
		half := w.End.Sub(w.Start) / 2
		starts[i], ends[i] = w.Start.Add(-half), w.End.Add(half)
		if lo.IsZero() || starts[i].Before(lo) {
			lo = starts[i]
		}
		if ends[i].After(hi) {
			hi = ends[i]
		}
	}
	var vec any
	if v, ok := q.optionalVector(ctx, r.cfg.ArmTimeout/2); ok {
		vec = pgvector.NewHalfVector(v)
	}
	// Fetch generously: the SQL orders by similarity only, the final order
	// also weighs being inside the period.
	args := append(q.filterArgs(), starts, ends, vec, lo, hi, 4*q.pool)
	rows, err := r.pool.Query(ctx, qTemporalArm, args...)
	if err != nil {
		return nil, "", fmt.Errorf("temporal search: %w", err)
	}
	var out []Candidate
	var id uuid.UUID
	var os, oe *time.Time
	var mentioned time.Time
	var sim float64
	_, err = pgx.ForEachRow(rows, []any{&id, &os, &oe, &mentioned, &sim}, func() error {
		out = append(out, Candidate{ID: id, Score: temporalScore(q.windows, os, oe, mentioned, sim)})
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("temporal search: %w", err)
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
