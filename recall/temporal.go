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

// qTemporalArm finds facts near the query's periods with index range
// scans only: for each period w ($5 starts, $6 ends, $8 row limits), the
// facts whose occurrence starts in it, those whose occurrence began up to
// $9 seconds earlier and reaches into it (the third column of the
// (bank, occurred_start, occurred_end) index checks that without the
// heap), and those mentioned in it. Each scan takes the newest $8 rows, so
// a period of months costs what a day does. The exact placement is scored
// in Go (temporalScore). An occurrence that began more than $9 before the
// period (a fact about "2024" asked about as "last March") is not found
// here; the other arms still can.
const qTemporalArm = `WITH w AS (
	SELECT * FROM unnest($5::timestamptz[], $6::timestamptz[], $8::int[]) AS w(s, e, lim))
SELECT x.* FROM w CROSS JOIN LATERAL (
	SELECT m.id, m.occurred_start, m.occurred_end, m.mentioned_at, ` + temporalSimExpr + `
	FROM memory_units m
	WHERE ` + unitFilter + ` AND m.occurred_start >= w.s AND m.occurred_start < w.e
	ORDER BY m.occurred_start DESC LIMIT w.lim) x
UNION
SELECT x.* FROM w CROSS JOIN LATERAL (
	SELECT m.id, m.occurred_start, m.occurred_end, m.mentioned_at, ` + temporalSimExpr + `
	FROM memory_units m
	WHERE ` + unitFilter + ` AND m.occurred_start >= w.s - make_interval(secs => $9) AND m.occurred_start < w.s
		AND m.occurred_end > w.s
	ORDER BY m.occurred_start DESC LIMIT w.lim) x
UNION
SELECT x.* FROM w CROSS JOIN LATERAL (
	SELECT m.id, m.occurred_start, m.occurred_end, m.mentioned_at, ` + temporalSimExpr + `
	FROM memory_units m
	WHERE ` + unitFilter + ` AND m.mentioned_at >= w.s AND m.mentioned_at < w.e
	ORDER BY m.mentioned_at DESC LIMIT w.lim) x`

// temporalSimExpr is the similarity to the query, 0 without an embedding.
const temporalSimExpr = `CASE WHEN $7::halfvec IS NULL OR m.embedding IS NULL THEN 0 ELSE 1 - (m.embedding <=> $7::halfvec) END AS sim`

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
	var vec any
	if v, ok := q.optionalVector(ctx, r.cfg.ArmTimeout/2); ok {
		vec = pgvector.NewHalfVector(v)
	}
	args := append(q.filterArgs(), starts, ends, vec, lims, temporalLookback.Seconds())
	var out []Candidate
	err := r.genericQuery(ctx, qTemporalArm, args, func(row pgx.Rows) error {
		var id uuid.UUID
		var os, oe *time.Time
		var mentioned time.Time
		var sim float64
		if err := row.Scan(&id, &os, &oe, &mentioned, &sim); err != nil {
			return err
		}
		out = append(out, Candidate{ID: id, Score: temporalScore(q.windows, os, oe, mentioned, r.cfg.Scale.Relevance(sim))})
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
