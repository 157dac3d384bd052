package store

import (
	"context"
	"fmt"
	"time"
)

// ActivityBucket is one time bucket of a bank's activity. T is the
// bucket's end; Backlog is the number of facts waiting for consolidation
// at that moment.
type ActivityBucket struct {
	T            time.Time `json:"t"`
	Events       int64     `json:"events"`
	Facts        int64     `json:"facts"`
	Consolidated int64     `json:"consolidated"`
	DeadLetters  int64     `json:"dead_letters"`
	Backlog      int64     `json:"backlog"`
	// BacklogPeak is the largest backlog seen within the bucket (at a
	// tenth of its width), so a burst consolidated before the bucket ends
	// still shows.
	BacklogPeak int64 `json:"backlog_peak"`
}

// Activity is a bank's ingest and consolidation over a time window.
type Activity struct {
	BankID      string           `json:"bank_id"`
	Since       time.Time        `json:"since"`
	Until       time.Time        `json:"until"`
	StepSeconds float64          `json:"step_seconds"`
	Buckets     []ActivityBucket `json:"buckets"`
}

// The backlog over time needs no sampler: a fact waits from its created_at
// to its consolidation (unit_consolidations), so the backlog at t is the facts created by t
// minus those consolidated by t. It is derived from the rows stored now,
// so facts deleted since (with their document) no longer count.
const qActivity = `
SELECT 'e', width_bucket(extract(epoch FROM ingested_at)::float8, $2::float8, $3::float8, $4::int), count(*)
	FROM events WHERE bank_id = $1 AND ingested_at >= to_timestamp($2::float8) AND ingested_at < to_timestamp($3::float8) GROUP BY 2
UNION ALL
SELECT 'f', width_bucket(extract(epoch FROM created_at)::float8, $2::float8, $3::float8, $4::int), count(*)
	FROM memory_units WHERE bank_id = $1 AND fact_type <> 'observation'
	AND created_at >= to_timestamp($2::float8) AND created_at < to_timestamp($3::float8) GROUP BY 2
UNION ALL
SELECT 'c', width_bucket(extract(epoch FROM consolidated_at)::float8, $2::float8, $3::float8, $4::int), count(*)
	FROM unit_consolidations WHERE bank_id = $1
	AND consolidated_at >= to_timestamp($2::float8) AND consolidated_at < to_timestamp($3::float8) GROUP BY 2
UNION ALL
SELECT 'd', width_bucket(extract(epoch FROM created_at)::float8, $2::float8, $3::float8, $4::int), count(*)
	FROM dead_letters WHERE bank_id = $1 AND created_at >= to_timestamp($2::float8) AND created_at < to_timestamp($3::float8) GROUP BY 2
UNION ALL
SELECT 'p', 0, count(*) FROM memory_units m LEFT JOIN unit_consolidations uc ON uc.unit_id = m.id
	WHERE m.bank_id = $1 AND m.fact_type <> 'observation'
	AND m.created_at < to_timestamp($2::float8) AND (uc.consolidated_at IS NULL OR uc.consolidated_at >= to_timestamp($2::float8))`

const (
	activitySub       = 10
	maxActivityGroups = 5000
)

// BankActivity counts, per bucket of [since, until), the events ingested,
// facts stored, facts consolidated and records dead-lettered, and the
// consolidation backlog at the end of each bucket.
func (s *Store) BankActivity(ctx context.Context, bankID string, since, until time.Time, buckets int) (Activity, error) {
	a := Activity{BankID: bankID, Since: since.UTC(), Until: until.UTC()}
	if buckets <= 0 || !until.After(since) {
		return a, fmt.Errorf("activity bank %s: need a positive bucket count and since before until", bankID)
	}
	step := until.Sub(since) / time.Duration(buckets)
	a.StepSeconds = step.Seconds()
	a.Buckets = make([]ActivityBucket, buckets)
	for i := range a.Buckets {
		a.Buckets[i].T = since.Add(step * time.Duration(i+1)).UTC()
	}
	lo := float64(since.UnixMicro()) / 1e6
	hi := float64(until.UnixMicro()) / 1e6
	// The counts are grouped in sub-buckets, so the backlog's peak within
	// a bucket is known; it costs more groups, not more rows read.
	sub := max(1, min(activitySub, maxActivityGroups/buckets))
	rows, err := s.pool.Query(ctx, qActivity, bankID, lo, hi, buckets*sub)
	if err != nil {
		return a, fmt.Errorf("activity bank %s: %w", bankID, err)
	}
	defer rows.Close()
	var start int64
	type delta struct{ facts, consolidated int64 }
	fine := make([]delta, buckets*sub)
	for rows.Next() {
		var kind string
		var b int
		var n int64
		if err := rows.Scan(&kind, &b, &n); err != nil {
			return a, fmt.Errorf("activity bank %s: %w", bankID, err)
		}
		if kind == "p" {
			start = n
			continue
		}
		if b < 1 || b > buckets*sub {
			continue // float rounding at the edges
		}
		bk := &a.Buckets[(b-1)/sub]
		switch kind {
		case "e":
			bk.Events += n
		case "f":
			bk.Facts += n
			fine[b-1].facts += n
		case "c":
			bk.Consolidated += n
			fine[b-1].consolidated += n
		case "d":
			bk.DeadLetters += n
		}
	}
	if err := rows.Err(); err != nil {
		return a, fmt.Errorf("activity bank %s: %w", bankID, err)
	}
	backlog := start
	for i := range a.Buckets {
		peak := backlog
		for _, d := range fine[i*sub : (i+1)*sub] {
			backlog += d.facts - d.consolidated
			peak = max(peak, backlog)
		}
		a.Buckets[i].Backlog = max(backlog, 0)
		a.Buckets[i].BacklogPeak = max(peak, 0)
	}
	return a, nil
}
