package store

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/memstream/memstream/internal/pgtest"
)

// migratedInternal opens a store on a fresh migrated schema, for tests of
// unexported statements and helpers.
func migratedInternal(t *testing.T) *Store {
	t.Helper()
	url, _ := pgtest.Schema(t)
	s, err := Open(context.Background(), Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, Config{URL: url, Dim: 384, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestHNSWSettingsStayInTheBatch checks that hnswQuery's settings reach
// the query, make it read-only, and do not outlive it on the pooled
// connection.
func TestHNSWSettingsStayInTheBatch(t *testing.T) {
	t.Parallel()
	s := migratedInternal(t)
	ctx := context.Background()
	var ef, ro, plans string
	err := s.hnswQuery(ctx, 123, `SELECT current_setting('hnsw.ef_search'), current_setting('transaction_read_only'), current_setting('plan_cache_mode')`, nil,
		func(rows pgx.Rows) error { return rows.Scan(&ef, &ro, &plans) })
	if err != nil {
		t.Fatal(err)
	}
	// Custom plans: a generic plan of the semantic arm cannot use HNSW.
	if ef != "123" || ro != "on" || plans != "force_custom_plan" {
		t.Errorf("inside the batch: ef_search %q, read only %q, plan_cache_mode %q; want 123, on, force_custom_plan", ef, ro, plans)
	}
	err = s.hnswQuery(ctx, 50, `CREATE TABLE recall_must_not_write (x int)`, nil, func(pgx.Rows) error { return nil })
	if err == nil {
		t.Error("a write ran inside the read-only batch")
	}
	var mode string
	err = s.genericQuery(ctx, `SELECT current_setting('plan_cache_mode'), current_setting('transaction_read_only')`, nil,
		func(rows pgx.Rows) error { return rows.Scan(&mode, &ro) })
	if err != nil {
		t.Fatal(err)
	}
	if mode != "force_generic_plan" || ro != "on" {
		t.Errorf("inside the generic batch: plan_cache_mode %q, read only %q; want force_generic_plan, on", mode, ro)
	}
	err = s.genericQuery(ctx, `CREATE TABLE recall_must_not_write (x int)`, nil, func(pgx.Rows) error { return nil })
	if err == nil {
		t.Error("a write ran inside the read-only generic batch")
	}
	// Every pooled connection: none may keep the settings.
	for range 8 {
		var after, afterMode string
		if err := s.pool.QueryRow(ctx, `SELECT coalesce(current_setting('hnsw.ef_search', true), ''), current_setting('plan_cache_mode')`).Scan(&after, &afterMode); err != nil {
			t.Fatal(err)
		}
		if after == "123" || afterMode != "auto" {
			t.Fatalf("settings leaked to the pool: ef_search %q, plan_cache_mode %q", after, afterMode)
		}
	}
}

// TestSemanticPlanUsesHNSW checks that the semantic arm's statement, under
// its bank filter, is planned as an HNSW index scan once the planner has no
// bank index and no sequential scan to fall back on: the filter must not
// turn the index off (recall's TestSemanticCorrectUnderFilter then checks
// that the iterative scan still fills the pool).
func TestSemanticPlanUsesHNSW(t *testing.T) {
	t.Parallel()
	s := migratedInternal(t)
	ctx := context.Background()
	for _, ix := range []string{"memory_units_bank_type_idx", "memory_units_mentioned_idx", "memory_units_occurred_idx", "memory_units_doc_idx", "memory_units_bank_tsv_idx"} {
		if _, err := s.pool.Exec(ctx, "DROP INDEX "+ix); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.pool.Exec(ctx, "ALTER TABLE memory_units DROP CONSTRAINT memory_units_bank_id_idempotency_key_key"); err != nil {
		t.Fatal(err)
	}
	var plan string
	vec := make([]float32, 384)
	vec[0] = 1
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "EXPLAIN "+qSemanticArm, "small", []string{}, []string{}, "any", pgvector.NewHalfVector(vec), 20)
		if err != nil {
			return err
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		plan = strings.Join(lines, "\n")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "memory_units_embedding_idx") {
		t.Fatalf("plan does not use the HNSW index:\n%s", plan)
	}
}

// TestGraphNameSeedsReadTheBankTrigramIndex checks migration 016: on its
// generic plan, the graph arm's trigram seed statement finds a big bank's
// names through the bank-leading trigram index, not by comparing every
// entity of the bank with every phrase.
func TestGraphNameSeedsReadTheBankTrigramIndex(t *testing.T) {
	t.Parallel()
	s := migratedInternal(t)
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO banks (id) VALUES ('big'), ('small')`,
		`INSERT INTO entities (id, bank_id, canonical_name, first_seen, last_seen, created_at)
		SELECT gen_random_uuid(), b, 'person ' || md5(b || i), now(), now(), now()
		FROM (VALUES ('big', 3000), ('small', 10)) AS v(b, n), generate_series(1, n) i`,
		`ANALYZE entities`,
	} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var lines []string
	if err := s.genericQuery(ctx, "EXPLAIN "+qGraphNameSeeds, []any{"big", []string{"person 0a1b2c", "person ffee"}}, planLines(&lines)); err != nil {
		t.Fatal(err)
	}
	if plan := strings.Join(lines, "\n"); !strings.Contains(plan, "entities_bank_name_trgm_idx") {
		t.Errorf("the name seeds do not read the bank trigram index:\n%s", plan)
	}
}

// planLines scans an EXPLAIN's rows into lines, for the batch helpers
// (hnswQuery, genericQuery) that hand their rows to a scan function.
func planLines(lines *[]string) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		var l string
		err := rows.Scan(&l)
		*lines = append(*lines, l)
		return err
	}
}
