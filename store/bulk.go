package store

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"
)

// Statements the benchmarks (internal/bench) run: schemas of their own, a
// bulk load of a synthetic bank, and the plain baselines their speeds are
// compared with. They live here with the rest of the SQL; production code
// does not call them.

// CreateSchema makes a schema named schema on the server at base (dropping
// one of that name first unless reuse is set) and returns base with its
// search_path set to it, then public, where the vector and pg_trgm
// extensions live.
func CreateSchema(ctx context.Context, base, schema string, reuse bool) (string, error) {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	ident := pgx.Identifier{schema}.Sanitize()
	if !reuse {
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+ident+" CASCADE"); err != nil {
			return "", fmt.Errorf("drop schema %s: %w", schema, err)
		}
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+ident); err != nil {
		return "", fmt.Errorf("create schema %s: %w", schema, err)
	}
	return withSearchPath(base, schema+",public")
}

// DropSchema drops a schema CreateSchema made, with everything in it.
func DropSchema(ctx context.Context, base, schema string) error {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	return err
}

// withSearchPath sets search_path in a URL or a keyword=value connection
// string; pgx passes it to the server as a run-time setting.
func withSearchPath(conn, path string) (string, error) {
	if u, err := url.Parse(conn); err == nil && u.Scheme != "" {
		q := u.Query()
		q.Set("search_path", path)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return conn + " search_path=" + path, nil
}

// ServerVersion is the server's version string, for benchmark reports.
func (s *Store) ServerVersion(ctx context.Context) (string, error) {
	var v string
	if err := s.pool.QueryRow(ctx, "SELECT current_setting('server_version')").Scan(&v); err != nil {
		return "", fmt.Errorf("server version: %w", err)
	}
	return v, nil
}

const (
	qUnitCount     = `SELECT count(*) FROM memory_units`
	qBankUnitCount = `SELECT count(*) FROM memory_units WHERE bank_id = $1`
)

// UnitCount counts the bank's memory units, whatever their state; an
// empty bank counts every bank's.
func (s *Store) UnitCount(ctx context.Context, bank string) (int64, error) {
	var n int64
	var err error
	if bank == "" {
		err = s.pool.QueryRow(ctx, qUnitCount).Scan(&n)
	} else {
		err = s.pool.QueryRow(ctx, qBankUnitCount, bank).Scan(&n)
	}
	if err != nil {
		return 0, fmt.Errorf("count memory units of bank %q: %w", bank, err)
	}
	return n, nil
}

const (
	// qInsertableUnitColumns lists memory_units' columns that COPY can
	// write (generated ones are computed by the server, as in a real
	// ingest).
	qInsertableUnitColumns = `SELECT column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'memory_units' AND is_generated = 'NEVER'
		ORDER BY ordinal_position`
	qCreateCopyBaseline = `CREATE TABLE bench_copy_baseline (LIKE memory_units INCLUDING ALL)`
	qDropCopyBaseline   = `DROP TABLE IF EXISTS bench_copy_baseline`
	qUnitStorageOptions = `SELECT COALESCE(array_to_string(reloptions, ', '), '') FROM pg_class WHERE oid = 'memory_units'::regclass`
)

// CopyBaseline is the ingest benchmark's baseline: it dumps memory_units
// and times a binary COPY of those rows, over conns connections at once
// (the pipeline's lanes: it writes over that many), into a fresh table
// with the same columns, defaults, constraints, indexes and storage
// parameters, the fastest way PostgreSQL takes the same rows. Only the
// COPY into the new table is timed.
func (s *Store) CopyBaseline(ctx context.Context, conns int) (rows int64, took time.Duration, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Release()
	cr, err := conn.Query(ctx, qInsertableUnitColumns)
	if err != nil {
		return 0, 0, err
	}
	cols, err := pgx.CollectRows(cr, pgx.RowTo[string])
	if err != nil {
		return 0, 0, err
	}
	ident := make([]string, len(cols))
	for i, c := range cols {
		ident[i] = pgx.Identifier{c}.Sanitize()
	}
	list := strings.Join(ident, ", ")
	// One share of the rows per connection, each COPYed at the same time.
	conns = max(conns, 1)
	dumps := make([]bytes.Buffer, conns)
	for k := range dumps {
		q := fmt.Sprintf("COPY (SELECT %s FROM memory_units WHERE abs(hashtext(id::text)) %% %d = %d) TO STDOUT (FORMAT binary)", list, conns, k)
		if _, err := conn.Conn().PgConn().CopyTo(ctx, &dumps[k], q); err != nil {
			return 0, 0, fmt.Errorf("dump memory_units: %w", err)
		}
	}
	if _, err := conn.Exec(ctx, qDropCopyBaseline); err != nil {
		return 0, 0, err
	}
	if _, err := conn.Exec(ctx, qCreateCopyBaseline); err != nil {
		return 0, 0, fmt.Errorf("create baseline table: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), qDropCopyBaseline) }()
	// LIKE copies columns, constraints and indexes but not storage
	// parameters; the baseline gets memory_units' fillfactor too.
	var opts string
	if err := conn.QueryRow(ctx, qUnitStorageOptions).Scan(&opts); err != nil {
		return 0, 0, err
	}
	if opts != "" {
		if _, err := conn.Exec(ctx, "ALTER TABLE bench_copy_baseline SET ("+opts+")"); err != nil {
			return 0, 0, fmt.Errorf("baseline storage options %s: %w", opts, err)
		}
	}
	held := make([]*pgxpool.Conn, conns)
	for k := range held {
		if held[k], err = s.pool.Acquire(ctx); err != nil {
			return 0, 0, err
		}
		defer held[k].Release()
	}
	var total atomic.Int64
	errs := make(chan error, conns)
	start := time.Now()
	for k := range held {
		go func() {
			tag, err := held[k].Conn().PgConn().CopyFrom(ctx, bytes.NewReader(dumps[k].Bytes()), "COPY bench_copy_baseline ("+list+") FROM STDIN (FORMAT binary)")
			total.Add(tag.RowsAffected())
			errs <- err
		}()
	}
	for range held {
		if err := <-errs; err != nil {
			return 0, 0, fmt.Errorf("copy baseline: %w", err)
		}
	}
	return total.Load(), time.Since(start), nil
}

// qRawNearest is the recall benchmark's baseline (SPEC §7): the one index
// probe a plain vector store would make, with the server's default hnsw
// settings.
const qRawNearest = `SELECT id FROM memory_units WHERE bank_id = $1 ORDER BY embedding <=> $2 LIMIT $3`

// qRawExact is the baseline's fallback when the iterative scan gives up
// (hnsw.max_scan_tuples) before it meets any row of a small bank: the
// distance is an expression the HNSW index cannot serve, so the bank's
// rows are read through its btree and sorted.
const qRawExact = `SELECT id FROM memory_units WHERE bank_id = $1 ORDER BY (embedding <=> $2) + 0 LIMIT $3`

// RawSearcher runs the baseline probe.
type RawSearcher struct {
	pool *pgxpool.Pool
	own  bool
}

// RawSearcher returns a searcher for the baseline probe. With iterative,
// its connections run pgvector's iterative scan: in a table many banks
// share, a plain HNSW probe of a small bank finds none of its rows among
// the first ef_search neighbours and returns nothing, and the iterative
// scan is the least a correct filtered vector query needs. It is a
// connection setting, so the probe stays one round trip. Close it after
// use.
func (s *Store) RawSearcher(ctx context.Context, iterative bool) (*RawSearcher, error) {
	if !iterative {
		return &RawSearcher{pool: s.pool}, nil
	}
	cfg := s.pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["hnsw.iterative_scan"] = "relaxed_order"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("raw HNSW pool: %w", err)
	}
	return &RawSearcher{pool: pool, own: true}, nil
}

// Nearest runs the probe for vec and returns how many rows it read. An
// iterative probe that finds nothing is followed by the exact one, as a
// plain vector store that must answer would do; both count in its time.
func (r *RawSearcher) Nearest(ctx context.Context, bank string, vec []float32, k int) (int, error) {
	n, err := r.count(ctx, qRawNearest, bank, vec, k)
	if err == nil && n == 0 && r.own {
		return r.count(ctx, qRawExact, bank, vec, k)
	}
	return n, err
}

func (r *RawSearcher) count(ctx context.Context, q, bank string, vec []float32, k int) (int, error) {
	rows, err := r.pool.Query(ctx, q, bank, pgvector.NewHalfVector(vec), k)
	if err != nil {
		return 0, err
	}
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	return n, rows.Err()
}

// Close releases the searcher's own connections, if it has any.
func (r *RawSearcher) Close() {
	if r.own {
		r.pool.Close()
	}
}

// DatabaseSize is the size on disk of the database dbURL names, for
// benchmarks that compare systems (whose databases memstream does not
// otherwise open).
func DatabaseSize(ctx context.Context, dbURL string) (int64, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n int64
	if err := conn.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&n); err != nil {
		return 0, fmt.Errorf("database size: %w", err)
	}
	return n, nil
}

// BulkBank is a whole synthetic bank for BulkLoader.Load.
type BulkBank struct {
	BankID   string
	Entities []BulkEntity
	Aliases  []BulkAlias
	Facts    []BulkFact
	Links    []BulkLink
}

// BulkEntity is one entities row.
type BulkEntity struct {
	ID                  UUID
	Name, Kind          string
	FirstSeen, LastSeen time.Time
	Mentions            int
}

// BulkAlias is one entity_aliases row.
type BulkAlias struct {
	Key, Alias string
	EntityID   UUID
}

// BulkFact is one memory_units row and its unit_entities.
type BulkFact struct {
	ID                         UUID
	Type, Text, Context        string
	Embedding                  []float32
	SearchAux                  string
	OccurredStart, OccurredEnd *time.Time
	MentionedAt                time.Time
	Tags                       []string
	Metadata                   map[string]string
	DocumentID, SourceEventID  string
	IdemKey                    string
	EntityIDs                  []UUID
}

// BulkLink is one memory_links row.
type BulkLink struct {
	From, To UUID
	Type     string
	Weight   float32
}

// qSecondaryIndexes lists the indexes of the bulk-loaded tables that back
// no constraint, with their definitions, so they can be rebuilt as they
// were.
const qSecondaryIndexes = `SELECT i.indexname, i.indexdef FROM pg_indexes i
	WHERE i.schemaname = current_schema()
	  AND i.tablename IN ('memory_units', 'entities', 'entity_aliases', 'unit_entities', 'memory_links')
	  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname AND c.connamespace = current_schema()::regnamespace)`

const qBulkBank = `INSERT INTO banks (id, name) VALUES ($1, $1)`

// BulkLoader loads synthetic banks with COPY over one connection. The
// loaded tables' secondary indexes are dropped while it loads and rebuilt
// from their own definitions by Finish (an HNSW index built once is much
// faster than one grown row by row). Use a schema of its own: other
// banks' writes would stall behind the rebuild.
type BulkLoader struct {
	conn *pgxpool.Conn
	defs []string
}

// NewBulkLoader takes a connection and drops the secondary indexes.
func (s *Store) NewBulkLoader(ctx context.Context) (*BulkLoader, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("bulk load: %w", err)
	}
	defs, err := dropSecondaryIndexes(ctx, conn.Conn())
	if err != nil {
		conn.Release()
		return nil, err
	}
	return &BulkLoader{conn: conn, defs: defs}, nil
}

// Load creates the bank and COPYs its rows.
func (l *BulkLoader) Load(ctx context.Context, b BulkBank) error {
	conn := l.conn.Conn()
	if _, err := conn.Exec(ctx, qBulkBank, b.BankID); err != nil {
		return fmt.Errorf("bulk load: create bank %s: %w", b.BankID, err)
	}
	var units, ues, links, ents, aliases [][]any
	for _, f := range b.Facts {
		var os, oe any
		if f.OccurredStart != nil {
			os = *f.OccurredStart
		}
		if f.OccurredEnd != nil {
			oe = *f.OccurredEnd
		}
		units = append(units, []any{f.ID, b.BankID, f.Type, f.Text, f.Context, pgvector.NewHalfVector(f.Embedding),
			f.SearchAux, os, oe, f.MentionedAt, f.Tags, f.Metadata, f.DocumentID, f.SourceEventID, f.IdemKey})
		for _, e := range f.EntityIDs {
			ues = append(ues, []any{f.ID, e})
		}
	}
	for _, k := range b.Links {
		links = append(links, []any{b.BankID, k.From, k.To, k.Type, k.Weight})
	}
	for _, e := range b.Entities {
		ents = append(ents, []any{e.ID, b.BankID, e.Name, e.Kind, e.FirstSeen, e.LastSeen, e.Mentions})
	}
	for _, a := range b.Aliases {
		aliases = append(aliases, []any{b.BankID, a.Key, a.Alias, a.EntityID})
	}
	copies := []struct {
		table string
		cols  []string
		rows  [][]any
	}{
		{"entities", []string{"id", "bank_id", "canonical_name", "kind", "first_seen", "last_seen", "mention_count"}, ents},
		{"entity_aliases", []string{"bank_id", "alias_key", "alias", "entity_id"}, aliases},
		{"memory_units", []string{"id", "bank_id", "fact_type", "text", "context", "embedding", "search_aux",
			"occurred_start", "occurred_end", "mentioned_at", "tags", "metadata", "document_id", "source_event_id", "idempotency_key"}, units},
		{"unit_entities", []string{"unit_id", "entity_id"}, ues},
		{"memory_links", []string{"bank_id", "from_id", "to_id", "link_type", "weight"}, links},
	}
	for _, c := range copies {
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{c.table}, c.cols, pgx.CopyFromRows(c.rows)); err != nil {
			return fmt.Errorf("bulk load: copy %s: %w", c.table, err)
		}
	}
	return nil
}

// Finish rebuilds the dropped indexes and vacuums the loaded tables, so
// that the planner sees their real sizes and index-only scans the
// visibility map autovacuum would long have set for a bank this size; then
// it releases the connection. progress, if not nil, hears of the rebuild.
func (l *BulkLoader) Finish(ctx context.Context, progress func(string)) error {
	defer l.Close()
	if progress != nil {
		progress(fmt.Sprintf("rebuilding %d indexes (HNSW included)", len(l.defs)))
	}
	conn := l.conn.Conn()
	// An HNSW build is fast while the graph fits in maintenance_work_mem
	// and slows many times over once it does not (a million 384-d facts
	// need about 1.5 GB); the setting is this load session's only.
	if _, err := conn.Exec(ctx, "SET maintenance_work_mem = '2GB'"); err != nil {
		return fmt.Errorf("bulk load: %w", err)
	}
	for _, def := range l.defs {
		if _, err := conn.Exec(ctx, def); err != nil {
			return fmt.Errorf("bulk load: rebuild index: %s: %w", def, err)
		}
	}
	for _, t := range []string{"memory_units", "entities", "entity_aliases", "unit_entities", "memory_links"} {
		if _, err := conn.Exec(ctx, "VACUUM (ANALYZE) "+t); err != nil {
			return fmt.Errorf("bulk load: vacuum %s: %w", t, err)
		}
	}
	return nil
}

// Close releases the connection; after Finish it does nothing.
func (l *BulkLoader) Close() {
	if l.conn != nil {
		l.conn.Release()
		l.conn = nil
	}
}

func dropSecondaryIndexes(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	rows, err := conn.Query(ctx, qSecondaryIndexes)
	if err != nil {
		return nil, fmt.Errorf("bulk load: list indexes: %w", err)
	}
	type idx struct{ name, def string }
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (idx, error) {
		var x idx
		err := r.Scan(&x.name, &x.def)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("bulk load: list indexes: %w", err)
	}
	defs := make([]string, 0, len(list))
	for _, x := range list {
		if _, err := conn.Exec(ctx, "DROP INDEX "+pgx.Identifier{x.name}.Sanitize()); err != nil {
			return nil, fmt.Errorf("bulk load: drop index %s: %w", x.name, err)
		}
		defs = append(defs, x.def)
	}
	return defs, nil
}

// A bench bank's consolidated layer, in realistic numbers. Observations
// copy a share of the facts (with their embeddings, so every recall arm
// can find them) and cycle through the five trends; mental models take
// standing questions from the query set and a few facts as content. Ids
// are derived, so a rerun is identical.
const (
	qBulkObservations = `INSERT INTO memory_units (id, bank_id, fact_type, text, context, embedding, search_aux,
		mentioned_at, idempotency_key, proof_count, trend)
	SELECT md5('bench-obs:' || f.id::text)::uuid, f.bank_id, 'observation', f.text, f.context, f.embedding, f.search_aux,
		f.mentioned_at, 'bench-obs:' || f.id::text, 2 + f.n % 5,
		(ARRAY['NEW', 'STRENGTHENING', 'STABLE', 'WEAKENING', 'STALE'])[1 + f.n % 5]
	FROM (SELECT m.*, row_number() OVER (ORDER BY m.id) AS n FROM memory_units m
		WHERE m.bank_id = $1 AND m.fact_type <> 'observation' ORDER BY m.id LIMIT $2) f`
	qBulkMentalModels = `INSERT INTO mental_models (id, bank_id, name, source_query, content, last_refreshed_at)
	SELECT md5($1 || ':mm:' || q.n)::uuid, $1, 'bench-' || q.n, q.query,
		coalesce((SELECT string_agg(t.text, ' ') FROM (SELECT text FROM memory_units
			WHERE bank_id = $1 AND fact_type <> 'observation' ORDER BY id OFFSET q.n * 7 LIMIT 3) t), ''), $3
	FROM unnest($2::text[]) WITH ORDINALITY AS q(query, n)`
)

// BulkObservations adds n observations to a bulk-loaded bank, copied from
// its first facts (see qBulkObservations), and returns how many it added.
func (s *Store) BulkObservations(ctx context.Context, bank string, n int) (int64, error) {
	tag, err := s.pool.Exec(ctx, qBulkObservations, bank, n)
	if err != nil {
		return 0, fmt.Errorf("bulk observations of bank %s: %w", bank, err)
	}
	return tag.RowsAffected(), nil
}

// BulkMentalModels adds a mental model per question to a bulk-loaded bank,
// refreshed at refreshed, and returns how many it added.
func (s *Store) BulkMentalModels(ctx context.Context, bank string, questions []string, refreshed time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, qBulkMentalModels, bank, questions, refreshed)
	if err != nil {
		return 0, fmt.Errorf("bulk mental models of bank %s: %w", bank, err)
	}
	return tag.RowsAffected(), nil
}

// Analyze refreshes the planner's statistics of every table, after a bulk
// load.
func (s *Store) Analyze(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, "ANALYZE"); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	return nil
}
