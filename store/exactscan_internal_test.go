package store

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strconv"
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
// "big", crowdBigRows rows of type typ close to the unit vector
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
		FROM generate_series(1, ` + strconv.Itoa(crowdBigRows) + `) i`,
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

// crowdBigRows is the crowded table's big bank's size.
const crowdBigRows = 2100

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

// linkFact adds a world fact at v to bank and returns its id.
func linkFact(t *testing.T, s *Store, bank, key string, v []float32) uuid.UUID {
	t.Helper()
	id := uuid.New()
	if _, err := s.pool.Exec(context.Background(), `INSERT INTO memory_units (id, bank_id, fact_type, text, embedding, mentioned_at, idempotency_key)
		VALUES ($1, $2, 'world', 'new', $3, now(), $4)`, id, bank, pgvector.NewHalfVector(v), key); err != nil {
		t.Fatal(err)
	}
	return id
}

// linksOf returns the facts from is linked to semantically, nearest first.
func linksOf(t *testing.T, s *Store, from uuid.UUID) []uuid.UUID {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT to_id FROM memory_links WHERE from_id = $1 AND link_type = 'semantic' ORDER BY weight DESC`, from)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// explainLinks is EXPLAIN ANALYZE of a links statement under the links'
// settings.
func explainLinks(t *testing.T, s *Store, stmt string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, qLinkSearchSettings); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "+stmt, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// linkOneEach stores one new fact in each bank of a crowdedStore, links
// both, and checks that the small bank's fact found its three nearest.
func linkOneEach(t *testing.T, s *Store, small []uuid.UUID) (newSmall, newBig uuid.UUID) {
	t.Helper()
	newSmall, newBig = linkFact(t, s, "small", "new-small", e0()), linkFact(t, s, "big", "new-big", e0())
	n, err := s.LinkSemantic(context.Background(), []uuid.UUID{newSmall, newBig}, -1)
	if err != nil || n != 6 {
		t.Fatalf("links: %d, %v; want 3 for each fact", n, err)
	}
	if got, want := linksOf(t, s, newSmall), []uuid.UUID{small[4], small[3], small[2]}; !slices.Equal(got, want) {
		t.Errorf("small bank's new fact linked to %v, want its three nearest %v", got, want)
	}
	return newSmall, newBig
}

// TestSemanticLinksReadSmallBankExactly checks that a new fact of a small
// bank is linked to its nearest facts although the table's HNSW scan,
// crowded with another bank's, gives up before meeting them, and that a
// bigger bank without an index of its own is read exactly too.
func TestSemanticLinksReadSmallBankExactly(t *testing.T) {
	t.Parallel()
	s, small := crowdedStore(t, "world")
	ctx := context.Background()
	newSmall, newBig := linkOneEach(t, s, small)
	if plan := explainLinks(t, s, qSemanticLinksExact, []uuid.UUID{newSmall}, -1, []string{}); hnswRan(plan) || !exactRan(plan) {
		t.Errorf("small bank: not read exactly:\n%s", plan)
	}
	var large []string
	rows, err := s.pool.Query(ctx, qLinkLargeBanks, []uuid.UUID{newSmall, newBig}, linkExactMaxRows)
	if err == nil {
		large, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil || len(large) != 0 {
		t.Errorf("banks to read through HNSW: %v, %v; want none (big has %d rows, no index of its own)", large, err, crowdBigRows+1)
	}
}

// TestSemanticLinksReadLargeBankThroughItsOwnIndex checks that the facts
// of a bank with an HNSW index of its own are linked through it, whatever
// the bank's size. With the bank a join column, as it was, the planner
// could never match the index's predicate and used the table's, whose
// filtered scan gives up early in a shared table.
func TestSemanticLinksReadLargeBankThroughItsOwnIndex(t *testing.T) {
	t.Parallel()
	s, small := crowdedStore(t, "world")
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, bankIndexDDL(BankIndexName("big"), "big")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE memory_units`); err != nil {
		t.Fatal(err)
	}
	newSmall, newBig := linkOneEach(t, s, small)
	var large []string
	rows, err := s.pool.Query(ctx, qLinkLargeBanks, []uuid.UUID{newSmall, newBig}, linkExactMaxRows)
	if err == nil {
		large, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil || !slices.Equal(large, []string{"big"}) {
		t.Errorf("banks to read through HNSW: %v, %v; want big, which has its own index", large, err)
	}
	plan := explainLinks(t, s, qSemanticLinksBank, []uuid.UUID{newBig, newSmall}, -1, "big")
	if !strings.Contains(plan, BankIndexName("big")) || hnswRan(plan) || exactRan(plan) {
		t.Errorf("big bank: not read through its own index %s:\n%s", BankIndexName("big"), plan)
	}
}
