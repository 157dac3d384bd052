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
	qSetEf       = `SELECT set_config('hnsw.ef_search', $1, true), set_config('hnsw.iterative_scan', 'relaxed_order', true)`
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

// withHNSW runs fn in a read-only transaction with the budget's HNSW
// settings. Read-only because recall must never write, and a transaction
// because SET LOCAL needs one.
func (r *Recaller) withHNSW(ctx context.Context, q *query, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, r.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, qSetEf, strconv.Itoa(q.ef)); err != nil {
			return fmt.Errorf("set hnsw options: %w", err)
		}
		return fn(tx)
	})
}

// semantic returns the nearest facts to the query embedding, and hands
// its best ones to the graph arm.
func (r *Recaller) semantic(ctx context.Context, q *query) (out []Candidate, _ string, err error) {
	defer func() {
		if q.semDone != nil {
			q.semTop = out
			close(q.semDone)
		}
	}()
	vec, err := q.vector(ctx)
	if err != nil {
		return nil, "", err
	}
	out, err = r.semanticSearch(ctx, q, vec, q.pool)
	if err != nil {
		return nil, "", fmt.Errorf("semantic search: %w", err)
	}
	return out, "", nil
}

// semanticSearch returns the limit nearest facts under the request's
// filters, best first.
func (r *Recaller) semanticSearch(ctx context.Context, q *query, vec []float32, limit int) ([]Candidate, error) {
	var out []Candidate
	err := r.withHNSW(ctx, q, func(tx pgx.Tx) error {
		args := append(q.filterArgs(), pgvector.NewHalfVector(vec), limit)
		rows, err := tx.Query(ctx, qSemanticArm, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Candidate, error) {
			var c Candidate
			err := row.Scan(&c.ID, &c.Score)
			return c, err
		})
		return err
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
