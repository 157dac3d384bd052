package recall

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"
)

// unitFilter is shared by every arm: the bank, valid facts only, and the
// request's types and tags. Every arm query binds $1 bank, $2 types, $3
// tags and $4 tags mode, so the fragment is a compile-time constant.
// Non-strict modes keep untagged facts (see TagsAny).
const unitFilter = `m.bank_id = $1 AND m.state = 'valid'
	AND (cardinality($2::text[]) = 0 OR m.fact_type = ANY($2::text[]))
	AND (cardinality($3::text[]) = 0 OR CASE $4::text
		WHEN 'any'        THEN m.tags && $3::text[] OR m.tags = '{}'
		WHEN 'all'        THEN m.tags @> $3::text[] OR m.tags = '{}'
		WHEN 'any_strict' THEN m.tags && $3::text[]
		WHEN 'all_strict' THEN m.tags @> $3::text[]
		ELSE m.tags @> $3::text[] AND m.tags <@ $3::text[] END)`

const (
	// set_config(…, true) is SET LOCAL with bound values: it lasts until
	// the transaction ends, so a pooled connection never keeps them.
	// relaxed_order lets the HNSW scan continue past ef_search until
	// enough rows pass the filter; results may come slightly out of
	// order, so the caller re-sorts by distance.
	qSetEf = `SELECT set_config('transaction_read_only', 'on', true),
		set_config('hnsw.ef_search', $1, true), set_config('hnsw.iterative_scan', 'relaxed_order', true)`
	// qSetGeneric runs the statement after it on its cached generic plan.
	// The arms' statements other than the HNSW ones have one good plan
	// whatever the parameters (index look-ups by id, entity and bank), but
	// with the default plan_cache_mode the server plans them again on
	// every execution, because a custom plan looks cheaper than the
	// generic one: that was about 2 ms of a recall's server time at
	// 100 000 facts (the alias look-up alone planned for 0.6 ms to run
	// for 0.2). The HNSW queries keep custom plans: the generic plan of
	// an ORDER BY embedding <=> $n under filters does not use the index.
	qSetGeneric = `SELECT set_config('transaction_read_only', 'on', true),
		set_config('plan_cache_mode', 'force_generic_plan', true)`
	qSemanticArm = `SELECT m.id, 1 - (m.embedding <=> $5::halfvec) AS sim
	FROM memory_units m
	WHERE ` + unitFilter + ` AND m.embedding IS NOT NULL
	ORDER BY m.embedding <=> $5::halfvec
	LIMIT $6`
)

// filterArgs are $1–$4 of every arm query.
func (q *query) filterArgs() []any {
	return []any{q.BankID, q.Types, q.Tags, q.tagsMode}
}

// hnswQuery runs sql with the budget's HNSW settings in one round trip.
func (r *Recaller) hnswQuery(ctx context.Context, ef int, sql string, args []any, each func(pgx.Rows) error) error {
	return r.settingsQuery(ctx, qSetEf, []any{strconv.Itoa(ef)}, sql, args, each)
}

// genericQuery runs sql on its generic plan (see qSetGeneric), read-only,
// in one round trip.
func (r *Recaller) genericQuery(ctx context.Context, sql string, args []any, each func(pgx.Rows) error) error {
	return r.settingsQuery(ctx, qSetGeneric, nil, sql, args, each)
}

// settingsQuery runs the set_config statement set and then sql as one
// batch, which the server runs as one implicit transaction: the
// set_config(…, true) values hold for the query and end with it, so a
// pooled connection never keeps them, and the transaction is read-only
// because recall must never write. A BEGIN/COMMIT pair would cost two
// more round trips, each of which waits for a CPU on a busy machine.
func (r *Recaller) settingsQuery(ctx context.Context, set string, setArgs []any, sql string, args []any, each func(pgx.Rows) error) error {
	var b pgx.Batch
	b.Queue(set, setArgs...)
	b.Queue(sql, args...)
	br := r.pool.SendBatch(ctx, &b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return fmt.Errorf("set query options: %w", err)
	}
	rows, err := br.Query()
	if err == nil {
		for rows.Next() {
			if err = each(rows); err != nil {
				break
			}
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// semantic returns the nearest facts to the query embedding.
func (r *Recaller) semantic(ctx context.Context, q *query) ([]Candidate, string, error) {
	if q.semDone != nil {
		defer close(q.semDone)
	}
	vec, err := q.vector(ctx)
	if err != nil {
		return nil, "", err
	}
	out, err := r.semanticSearch(ctx, q, vec, q.pool)
	if err != nil {
		return nil, "", fmt.Errorf("semantic search: %w", err)
	}
	q.semTop = out
	return out, "", nil
}

// semanticSearch returns the limit nearest facts under the request's
// filters, best first.
func (r *Recaller) semanticSearch(ctx context.Context, q *query, vec []float32, limit int) ([]Candidate, error) {
	var out []Candidate
	args := append(q.filterArgs(), pgvector.NewHalfVector(vec), limit)
	err := r.hnswQuery(ctx, q.ef, qSemanticArm, args, func(rows pgx.Rows) error {
		var c Candidate
		if err := rows.Scan(&c.ID, &c.Score); err != nil {
			return err
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sortCandidates(out)
	return out, nil
}

// sortCandidates orders best first, ties by id so that runs repeat.
func sortCandidates(cs []Candidate) {
	slices.SortStableFunc(cs, func(a, b Candidate) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmpUUID(a.ID, b.ID)
	})
}

func cmpUUID(a, b uuid.UUID) int {
	for i := range a {
		if c := cmp.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}
