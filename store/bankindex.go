package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Bank HNSW indexes: a partial HNSW index of its own for each of the few
// largest banks of a shared table. Under a bank filter the table-wide
// index's iterative scan visits about 1/share index tuples for each one it
// keeps (a bank of 13 % of the table: about eight), and reads their heap
// rows to check the bank; a bank's own index visits only its own. The
// semantic arm runs on custom plans (qSetEf), so the planner sees the
// bank id as a constant and picks the partial index by its predicate; no
// statement names it.
//
// The count is bounded (BankIndexPolicy.MaxIndexes): every statement on
// memory_units locks each of its indexes while it is planned, and one
// index per bank exhausts the lock table at a few thousand banks
// (Hindsight's partial-index trap).

// bankIndexPrefix names the bank indexes; a bank's index is the prefix and
// a hash of its id, so the name alone says whether an index is wanted.
const bankIndexPrefix = "memory_units_bank_hnsw_"

const (
	// The bank sizes, largest first, with the table's total. An index-only
	// scan of memory_units_bank_type_idx when the visibility map is current.
	qBankSizes = `SELECT bank_id, n, sum(n) OVER ()::bigint FROM (
		SELECT bank_id, count(*) AS n FROM memory_units GROUP BY bank_id) c
	ORDER BY n DESC, bank_id`
	qBankIndexes = `SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
	WHERE i.indrelid = 'memory_units'::regclass AND starts_with(c.relname, '` + bankIndexPrefix + `')
	ORDER BY c.relname`
	// One maintainer per schema at a time, however many replicas run one:
	// a second would see the first's build in progress as an invalid index.
	qBankIndexLock   = `SELECT pg_try_advisory_lock(hashtext(current_schema() || '.` + bankIndexPrefix + `'))`
	qBankIndexUnlock = `SELECT pg_advisory_unlock(hashtext(current_schema() || '.` + bankIndexPrefix + `'))`
)

// BankIndexMaxShare is the largest share of the table a bank may hold and
// still get an index of its own: past half, the filter keeps most of what
// the table's index visits.
const BankIndexMaxShare = 0.5

// BankIndexBuildMemory is maintenance_work_mem for a bank index build: a
// bank of 133 592 384-d facts builds in memory with it.
const BankIndexBuildMemory = "256MB"

// BankIndexName is the name of bank's own HNSW index.
func BankIndexName(bank string) string {
	h := sha256.Sum256([]byte(bank))
	return bankIndexPrefix + hex.EncodeToString(h[:8])
}

// bankIndexNameSQL is BankIndexName as an SQL expression over a text
// column named bank_id, for statements that find a bank's index without a
// round trip.
const bankIndexNameSQL = `'` + bankIndexPrefix + `' || left(encode(sha256(convert_to(bank_id, 'UTF8')), 'hex'), 16)`

// BankIndexPolicy says which banks get an HNSW index of their own: the
// MaxIndexes largest banks with at least MinFacts facts, each holding at
// most MaxShare of the table (a bank that is most of the table is served
// as well by the table's index).
type BankIndexPolicy struct {
	MinFacts   int
	MaxIndexes int
	MaxShare   float64
	// BuildMemory is maintenance_work_mem for the builds ("256MB"); an
	// HNSW build slows many times over once its graph outgrows it. Empty
	// keeps the server's setting.
	BuildMemory string
}

// BankSize is a bank's number of facts (all states, with or without an
// embedding: what its part of the table weighs).
type BankSize struct {
	BankID string
	Facts  int64
}

// BankIndexReport is what one BankIndexPass did.
type BankIndexReport struct {
	// Skipped: another maintainer held the schema's lock; nothing was done.
	Skipped bool
	// Indexed are the banks that have their own index after the pass.
	Indexed []BankSize
	// Created and Dropped are index names.
	Created, Dropped []string
}

// planBankIndexes picks the banks to index from sizes (largest first) and
// total, and the indexes to create and drop given the existing valid ones.
// An index whose bank has fallen below the policy is kept while its bank
// holds half of MinFacts and the bound leaves room, so a bank near the
// threshold is not rebuilt on every pass.
func planBankIndexes(p BankIndexPolicy, sizes []BankSize, total int64, existing map[string]bool) (keep []BankSize, create, drop []string) {
	fits := func(b BankSize, minFacts int64) bool {
		return b.Facts >= minFacts && (p.MaxShare <= 0 || float64(b.Facts) <= p.MaxShare*float64(total))
	}
	var wanted, held []BankSize
	for _, b := range sizes {
		switch {
		case len(wanted) < p.MaxIndexes && fits(b, int64(p.MinFacts)):
			wanted = append(wanted, b)
		case existing[BankIndexName(b.BankID)] && fits(b, int64(p.MinFacts)/2):
			held = append(held, b)
		}
	}
	keep = append(wanted, held[:min(len(held), max(0, p.MaxIndexes-len(wanted)))]...)
	names := map[string]bool{}
	for _, b := range keep {
		n := BankIndexName(b.BankID)
		names[n] = true
		if !existing[n] {
			create = append(create, n)
		}
	}
	for n := range existing {
		if !names[n] {
			drop = append(drop, n)
		}
	}
	slices.Sort(drop)
	return keep, create, drop
}

// BankIndexPass brings the bank HNSW indexes in line with p: it drops the
// ones no longer wanted and those a failed build left invalid, then builds
// the missing ones, largest bank first, each with CREATE INDEX
// CONCURRENTLY (ingest and recall go on meanwhile; each build reads the
// whole table twice). If another
// maintainer holds the schema's lock, it returns at once, Skipped.
func (s *Store) BankIndexPass(ctx context.Context, p BankIndexPolicy) (BankIndexReport, error) {
	var rep BankIndexReport
	if p.MaxIndexes < 0 || p.MinFacts < 1 {
		return rep, fmt.Errorf("bank indexes: policy needs min facts >= 1 and max indexes >= 0, got %d and %d", p.MinFacts, p.MaxIndexes)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return rep, fmt.Errorf("bank indexes: %w", err)
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, qBankIndexLock).Scan(&locked); err != nil {
		return rep, fmt.Errorf("bank indexes: lock: %w", err)
	}
	if !locked {
		rep.Skipped = true
		return rep, nil
	}
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), qBankIndexUnlock); err != nil {
			// The lock is the session's; a connection that cannot unlock
			// must not go back to the pool holding it.
			_ = conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()

	rows, err := conn.Query(ctx, qBankIndexes)
	if err != nil {
		return rep, fmt.Errorf("bank indexes: list: %w", err)
	}
	existing := map[string]bool{}
	var invalid []string
	var name string
	var valid bool
	if _, err := pgx.ForEachRow(rows, []any{&name, &valid}, func() error {
		if valid {
			existing[name] = true
		} else {
			invalid = append(invalid, name)
		}
		return nil
	}); err != nil {
		return rep, fmt.Errorf("bank indexes: list: %w", err)
	}
	var sizes []BankSize
	var total int64
	rows, err = conn.Query(ctx, qBankSizes)
	if err != nil {
		return rep, fmt.Errorf("bank indexes: bank sizes: %w", err)
	}
	var b BankSize
	if _, err := pgx.ForEachRow(rows, []any{&b.BankID, &b.Facts, &total}, func() error {
		sizes = append(sizes, b)
		return nil
	}); err != nil {
		return rep, fmt.Errorf("bank indexes: bank sizes: %w", err)
	}
	keep, create, drop := planBankIndexes(p, sizes, total, existing)

	for _, n := range append(invalid, drop...) {
		if _, err := conn.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+pgx.Identifier{n}.Sanitize()); err != nil {
			return rep, fmt.Errorf("bank indexes: drop %s: %w", n, err)
		}
		rep.Dropped = append(rep.Dropped, n)
	}
	if len(create) > 0 && p.BuildMemory != "" {
		if _, err := conn.Exec(ctx, "SELECT set_config('maintenance_work_mem', $1, false)", p.BuildMemory); err != nil {
			return rep, fmt.Errorf("bank indexes: maintenance_work_mem %q: %w", p.BuildMemory, err)
		}
		defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "RESET maintenance_work_mem") }()
	}
	want := map[string]bool{}
	for _, n := range create {
		want[n] = true
	}
	for _, b := range keep {
		n := BankIndexName(b.BankID)
		if want[n] {
			if _, err := conn.Exec(ctx, bankIndexDDL(n, b.BankID)); err != nil {
				// A cancelled build leaves an invalid index; the next
				// pass drops it first.
				return rep, fmt.Errorf("bank indexes: build %s for bank %s (%d facts): %w", n, b.BankID, b.Facts, err)
			}
			rep.Created = append(rep.Created, n)
		}
		rep.Indexed = append(rep.Indexed, b)
	}
	return rep, nil
}

// bankIndexDDL is bank's index: memory_units_embedding_idx's method,
// operator class and build parameters (migration 001), under the bank's
// predicate. DDL takes no parameters, so the bank id is quoted here.
func bankIndexDDL(name, bank string) string {
	return "CREATE INDEX CONCURRENTLY IF NOT EXISTS " + pgx.Identifier{name}.Sanitize() +
		" ON memory_units USING hnsw (embedding halfvec_cosine_ops) WITH (m = 16, ef_construction = 64) WHERE bank_id = " +
		quoteLiteral(bank)
}

// quoteLiteral is a standard-conforming SQL string literal.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
