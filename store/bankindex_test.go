package store

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/pgvector/pgvector-go"
)

func TestPlanBankIndexes(t *testing.T) {
	t.Parallel()
	sizes := []BankSize{{"a", 500}, {"b", 300}, {"c", 120}, {"d", 60}, {"e", 10}}
	const total = 990
	name := BankIndexName
	ids := func(bs []BankSize) []string {
		var out []string
		for _, b := range bs {
			out = append(out, b.BankID)
		}
		return out
	}
	for _, tc := range []struct {
		desc     string
		p        BankIndexPolicy
		existing []string
		keep     []string
		create   []string
		drop     []string
	}{
		{desc: "the largest above the floor, bounded", p: BankIndexPolicy{MinFacts: 100, MaxIndexes: 2},
			keep: []string{"a", "b"}, create: []string{name("a"), name("b")}},
		{desc: "a bank of more than MaxShare of the table is left to the table's index", p: BankIndexPolicy{MinFacts: 100, MaxIndexes: 2, MaxShare: 0.5},
			keep: []string{"b", "c"}, create: []string{name("b"), name("c")}},
		{desc: "an index above half the floor is held while the bound has room", p: BankIndexPolicy{MinFacts: 100, MaxIndexes: 3},
			existing: []string{name("d")}, keep: []string{"a", "b", "c"}, create: []string{name("a"), name("b"), name("c")}, drop: []string{name("d")}},
		{desc: "held below the floor when there is room", p: BankIndexPolicy{MinFacts: 100, MaxIndexes: 4},
			existing: []string{name("d")}, keep: []string{"a", "b", "c", "d"}, create: []string{name("a"), name("b"), name("c")}},
		{desc: "below half the floor it goes, and so do unknown ones", p: BankIndexPolicy{MinFacts: 100, MaxIndexes: 8},
			existing: []string{name("e"), name("gone"), name("a")}, keep: []string{"a", "b", "c"}, create: []string{name("b"), name("c")},
			drop: slices.Sorted(slices.Values([]string{name("e"), name("gone")}))},
		{desc: "none wanted: all dropped", p: BankIndexPolicy{MinFacts: 100, MaxIndexes: 0},
			existing: []string{name("a")}, drop: []string{name("a")}},
	} {
		ex := map[string]bool{}
		for _, n := range tc.existing {
			ex[n] = true
		}
		keep, create, drop := planBankIndexes(tc.p, sizes, total, ex)
		if !slices.Equal(ids(keep), tc.keep) || !slices.Equal(create, tc.create) || !slices.Equal(drop, tc.drop) {
			t.Errorf("%s: keep %v create %v drop %v; want %v %v %v", tc.desc, ids(keep), create, drop, tc.keep, tc.create, tc.drop)
		}
	}
}

// TestBankIndexPass builds a bank's own HNSW index on the real server,
// checks that the semantic arm's statement (on its custom plan) reads
// through it for that bank and through the table's index for another,
// that a failed build's invalid index is dropped and rebuilt, and that a
// policy of none drops it.
func TestBankIndexPass(t *testing.T) {
	t.Parallel()
	s := migratedInternal(t)
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO banks (id) VALUES ('big'), ('o''brien'), ('small')`,
		// Vectors that differ per row, so the HNSW graph is a real one.
		`INSERT INTO memory_units (id, bank_id, fact_type, text, embedding, mentioned_at, idempotency_key)
		SELECT gen_random_uuid(), b, 'world', 'fact ' || i,
			(SELECT array_agg(sin(i * 7 + d * 13 + length(b)))::real[] FROM generate_series(1, 384) d)::halfvec(384),
			now(), b || i
		FROM (VALUES ('big', 400), ('o''brien', 150), ('small', 20)) AS v(b, n), generate_series(1, n) i`,
		`ANALYZE memory_units`,
	} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	p := BankIndexPolicy{MinFacts: 100, MaxIndexes: 2, MaxShare: BankIndexMaxShare, BuildMemory: BankIndexBuildMemory}
	rep, err := s.BankIndexPass(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	// big is 70 % of the table: over MaxShare, the table's index serves it.
	if len(rep.Indexed) != 1 || rep.Indexed[0].BankID != "o'brien" || !slices.Equal(rep.Created, []string{BankIndexName("o'brien")}) {
		t.Fatalf("first pass: %+v", rep)
	}
	plan := func(bank string) string {
		t.Helper()
		var lines []string
		vec := make([]float32, 384)
		vec[3] = 1
		err := s.hnswQuery(ctx, 40, "EXPLAIN "+qSemanticArm, []any{bank, []string{}, []string{}, "any", pgvector.NewHalfVector(vec), 10}, planLines(&lines))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	// enable_seqscan cannot be set inside hnswQuery's batch; the bank's
	// 150 rows are few enough that the planner may prefer its btree, so
	// the test removes that choice as TestSemanticPlanUsesHNSW does.
	for _, ix := range []string{"memory_units_bank_type_idx", "memory_units_mentioned_idx", "memory_units_occurred_idx", "memory_units_doc_idx", "memory_units_bank_tsv_idx"} {
		if _, err := s.pool.Exec(ctx, "DROP INDEX "+ix); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.pool.Exec(ctx, "ALTER TABLE memory_units DROP CONSTRAINT memory_units_bank_id_idempotency_key_key"); err != nil {
		t.Fatal(err)
	}
	if got := plan("o'brien"); !strings.Contains(got, BankIndexName("o'brien")) {
		t.Errorf("the indexed bank's probe does not use its index:\n%s", got)
	}
	if got := plan("small"); strings.Contains(got, bankIndexPrefix) {
		t.Errorf("another bank's probe uses a bank index:\n%s", got)
	}

	// A second pass with nothing to do builds nothing.
	if rep, err = s.BankIndexPass(ctx, p); err != nil || len(rep.Created)+len(rep.Dropped) != 0 || len(rep.Indexed) != 1 {
		t.Fatalf("second pass: %+v %v", rep, err)
	}
	// A build that failed half-way leaves an invalid index: the next pass
	// drops it and builds it again.
	if _, err := s.pool.Exec(ctx, `UPDATE pg_index SET indisvalid = false WHERE indexrelid = $1::regclass`, BankIndexName("o'brien")); err != nil {
		t.Fatal(err)
	}
	if rep, err = s.BankIndexPass(ctx, p); err != nil || len(rep.Created) != 1 || len(rep.Dropped) != 1 {
		t.Fatalf("pass after an invalid index: %+v %v", rep, err)
	}
	// While another maintainer holds the lock, a pass does nothing.
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, qBankIndexLock); err != nil {
		t.Fatal(err)
	}
	if rep, err = s.BankIndexPass(ctx, p); err != nil || !rep.Skipped {
		t.Errorf("pass under another's lock: %+v %v", rep, err)
	}
	if _, err := conn.Exec(ctx, qBankIndexUnlock); err != nil {
		t.Fatal(err)
	}
	conn.Release()

	p.MaxIndexes = 0
	if rep, err = s.BankIndexPass(ctx, p); err != nil || len(rep.Dropped) != 1 || len(rep.Indexed) != 0 {
		t.Fatalf("pass with none wanted: %+v %v", rep, err)
	}
	var left int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE starts_with(relname, $1) AND relnamespace = current_schema()::regnamespace`, bankIndexPrefix).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d bank indexes left (%v)", left, err)
	}
}

// The links statement finds a bank's own index by computing its name in
// SQL; that name must be BankIndexName's for every bank id.
func TestBankIndexNameSQLMatchesGo(t *testing.T) {
	t.Parallel()
	s := migratedInternal(t)
	for _, bank := range []string{"big", "o'brien", "张伟", "a b\tc", ""} {
		var got string
		if err := s.pool.QueryRow(context.Background(), `SELECT `+bankIndexNameSQL+` FROM (SELECT $1::text AS bank_id) b`, bank).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := BankIndexName(bank); got != want {
			t.Errorf("bank %q: SQL names %q, Go %q", bank, got, want)
		}
	}
}
