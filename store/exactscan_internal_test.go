package store

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/memstream/memstream/internal/pgtest"
)

// crowdedStore returns a store whose connections stop a filtered HNSW
// scan after 50 index tuples, as hnsw.max_scan_tuples (20 000 by default)
// stops it in a table of a million rows many banks share, with two banks:
// "big", exactScanMaxRows + 100 rows of type typ close to the unit vector
// e0, and "small", five rows of that type far from e0, the k-th of them
// at cosine 0.1·k/√(1+0.01·k²) to it. It returns small's rows' ids, k = 1
// to 5. Only the HNSW path misses small's rows: its first ef_search
// candidates are all big's.
func crowdedStore(t *testing.T, typ string) (*Store, []uuid.UUID) {
	t.Helper()
	url, _ := pgtest.Schema(t)
	url = pgtest.WithSetting(t, url, "hnsw.max_scan_tuples", "50")
	ctx := context.Background()
	s, err := Open(ctx, Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, Config{URL: url, Dim: 8, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var small []uuid.UUID
	for k := 1; k <= 5; k++ {
		small = append(small, uuid.New())
	}
	for _, q := range []string{
		`INSERT INTO banks (id) VALUES ('big'), ('small')`,
		`INSERT INTO memory_units (id, bank_id, fact_type, text, embedding, mentioned_at, idempotency_key)
		SELECT gen_random_uuid(), 'big', $1, 'big ' || i,
			ARRAY[1, random() * 0.1, random() * 0.1, random() * 0.1, 0, 0, 0, 0]::real[]::halfvec, now(), 'big' || i
		FROM generate_series(1, ` + exactScanMaxRows + ` + 100) i`,
		`INSERT INTO memory_units (id, bank_id, fact_type, text, embedding, mentioned_at, idempotency_key)
		SELECT id, 'small', $1, 'small ' || k, ARRAY[0.1 * k, 0, 0, 0, 0, 1, 0, 0]::real[]::halfvec, now(), 'small' || k
		FROM unnest($2::uuid[]) WITH ORDINALITY AS x(id, k)`,
		`ANALYZE memory_units`,
	} {
		var args []any
		if strings.Contains(q, "$1") {
			args = append(args, typ)
		}
		if strings.Contains(q, "$2") {
			args = append(args, small)
		}
		if _, err := s.pool.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	return s, small
}

// e0 is the unit vector the crowded banks are built around.
func e0() []float32 { return []float32{1, 0, 0, 0, 0, 0, 0, 0} }

// hnswRan reports whether an EXPLAIN ANALYZE ran the shared HNSW index.
func hnswRan(plan string) bool {
	for _, l := range strings.Split(plan, "\n") {
		if strings.Contains(l, "memory_units_embedding_idx") && !strings.Contains(l, "never executed") {
			return true
		}
	}
	return false
}

// exactRan reports whether an EXPLAIN ANALYZE sorted rows by the exact
// distance ((embedding <=> v) + 0).
func exactRan(plan string) bool {
	lines := strings.Split(plan, "\n")
	for i, l := range lines {
		if i > 0 && strings.Contains(l, "Sort Key: (((") && strings.Contains(l, "+ '0'::double precision") &&
			strings.Contains(lines[i-1], "actual rows=") && !strings.Contains(lines[i-1], "actual rows=0 ") {
			return true
		}
	}
	return false
}

// TestObservationCandidatesFindSmallBankNeighbours checks that a bank with
// few observations gets its nearest ones as semantic candidates in a table
// crowded with another bank's, where an HNSW scan gives up before meeting
// them. The planner sorts the bank's observations exactly: the tag scope's
// estimate is a few rows whatever the bank (docs/BENCHMARKS.md).
func TestObservationCandidatesFindSmallBankNeighbours(t *testing.T) {
	t.Parallel()
	s, small := crowdedStore(t, "observation")
	ctx := context.Background()
	q := CandidateQuery{BankID: "small", Embedding: e0(), Limit: 3}
	lists, err := s.BatchObservationCandidates(ctx, "small", []CandidateQuery{q, q}, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []uuid.UUID{small[4], small[3], small[2]}
	for i, l := range lists {
		var got []uuid.UUID
		for _, c := range l.Semantic {
			got = append(got, c.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("fact %d: semantic candidates %v, want the three nearest %v", i, got, want)
		}
	}
}

// TestSemanticLinksReadSmallBankExactly checks that a new fact of a small
// bank is linked to its nearest facts although the table's HNSW scan,
// crowded with another bank's, gives up before meeting them; and that a
// fact of a big bank is still linked through HNSW.
func TestSemanticLinksReadSmallBankExactly(t *testing.T) {
	t.Parallel()
	s, small := crowdedStore(t, "world")
	ctx := context.Background()
	fact := func(bank, key string) uuid.UUID {
		id := uuid.New()
		if _, err := s.pool.Exec(ctx, `INSERT INTO memory_units (id, bank_id, fact_type, text, embedding, mentioned_at, idempotency_key)
			VALUES ($1, $2, 'world', 'new', $3, now(), $4)`, id, bank, pgvector.NewHalfVector(e0()), key); err != nil {
			t.Fatal(err)
		}
		return id
	}
	newSmall, newBig := fact("small", "new-small"), fact("big", "new-big")
	n, err := s.LinkSemantic(ctx, []uuid.UUID{newSmall, newBig}, -1)
	if err != nil || n != 6 {
		t.Fatalf("links: %d, %v; want 3 for each fact", n, err)
	}
	rows, err := s.pool.Query(ctx, `SELECT to_id FROM memory_links WHERE from_id = $1 AND link_type = 'semantic' ORDER BY weight DESC`, newSmall)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		t.Fatal(err)
	}
	if want := []uuid.UUID{small[4], small[3], small[2]}; !slices.Equal(got, want) {
		t.Errorf("small bank's new fact linked to %v, want its three nearest %v", got, want)
	}
	explain := func(id uuid.UUID) string {
		var lines []string
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, qLinkSearchSettings); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "+qSemanticLinks, []uuid.UUID{id}, -1)
		if err != nil {
			t.Fatal(err)
		}
		if lines, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	if plan := explain(newSmall); hnswRan(plan) || !exactRan(plan) {
		t.Errorf("small bank: not read exactly:\n%s", plan)
	}
	if plan := explain(newBig); exactRan(plan) {
		t.Errorf("big bank: read exactly:\n%s", plan)
	}
}
