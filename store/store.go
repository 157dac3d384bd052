package store

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	pgxvec "github.com/pgvector/pgvector-go/pgx"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// ErrNotFound is returned when a requested row does not exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when a write violates a uniqueness rule, or when
// a row changed under a write that depended on it.
var ErrConflict = errors.New("conflict")

// Config configures Open.
type Config struct {
	URL      string
	MaxConns int
	// Dim is the embedding dimension; it is fixed at the first migration.
	Dim int
	// Embedder names the model whose vectors the database holds, for
	// example "local/use-multilingual-v3/512"; empty skips the check. The first
	// Migrate that names one records it, and a later one naming another is
	// refused: vectors of two models are not comparable, even at one
	// dimension, and mixing them would rank by noise without any error.
	Embedder string
}

// Store is the PostgreSQL-backed memory store.
type Store struct {
	pool     *pgxpool.Pool
	dim      int
	embedder string
	log      *slog.Logger

	// Background work (noteFacts) runs under bgCtx; Close cancels it and
	// waits for it.
	bgCtx        context.Context
	bgCancel     context.CancelFunc
	bg           sync.WaitGroup
	persisted    atomic.Int64
	statsChecked atomic.Bool
}

// Deps are a Store's collaborators. Logger may be nil (logs are
// discarded).
type Deps struct {
	Logger *slog.Logger
}

// Open connects to PostgreSQL. It does not migrate; call Migrate.
func Open(ctx context.Context, deps Deps, cfg Config) (*Store, error) {
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Dim <= 0 {
		return nil, fmt.Errorf("store: embedding dimension must be positive")
	}
	pcfg, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("store: parse database url: %w", err)
	}
	if cfg.MaxConns > 0 {
		pcfg.MaxConns = int32(cfg.MaxConns)
	}
	pcfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		registerUUID(conn.TypeMap())
		// The vector types exist only after the first migration created the
		// extension; a connection made before that registers them lazily.
		if err := pgxvec.RegisterTypes(ctx, conn); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) || strings.Contains(err.Error(), "vector") {
				return nil
			}
			return err
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	bgCtx, bgCancel := context.WithCancel(context.Background())
	return &Store{pool: pool, dim: cfg.Dim, embedder: cfg.Embedder, log: log, bgCtx: bgCtx, bgCancel: bgCancel}, nil
}

// Dim is the embedding dimension of this store.
func (s *Store) Dim() int { return s.dim }

// Close stops the store's background work and closes the pool.
func (s *Store) Close() {
	s.bgCancel()
	s.bg.Wait()
	s.pool.Close()
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations(dim int) ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number", e.Name())
		}
		raw, err := migrationFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		sql := strings.ReplaceAll(string(raw), "{{EMBED_DIM}}", strconv.Itoa(dim))
		out = append(out, migration{version: v, name: e.Name(), sql: sql})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// lockKey is the advisory-lock key that serialises migrators.
func lockKey() int64 {
	h := fnv.New64a()
	h.Write([]byte("memstream.migrate"))
	return int64(h.Sum64() >> 1)
}

const (
	qMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`
	qMigrationApplied = `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`
	qMigrationRecord  = `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`
	qEmbedDim         = `SELECT value FROM memstream_meta WHERE key = 'embed_dim'`
	qEmbedModel       = `SELECT value FROM memstream_meta WHERE key = 'embed_model'`
	qEmbedModelRecord = `INSERT INTO memstream_meta (key, value) VALUES ('embed_model', $1) ON CONFLICT (key) DO NOTHING`
)

// Migrate applies pending migrations, one transaction each, under an
// advisory lock so that replicas starting together do not race. It returns
// the names of the migrations it applied.
func (s *Store) Migrate(ctx context.Context) ([]string, error) {
	migs, err := loadMigrations(s.dim)
	if err != nil {
		return nil, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockKey()); err != nil {
		return nil, fmt.Errorf("migrate: lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, lockKey())

	for _, ext := range []string{"vector", "pg_trgm", "btree_gin"} {
		if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS "+ext); err != nil {
			return nil, fmt.Errorf("migrate: extension %s is not available (run scripts/install-deps.sh): %w", ext, err)
		}
	}
	if _, err := conn.Exec(ctx, qMigrationsTable); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	var applied []string
	for _, m := range migs {
		var done bool
		if err := conn.QueryRow(ctx, qMigrationApplied, m.version).Scan(&done); err != nil {
			return applied, fmt.Errorf("migrate %s: %w", m.name, err)
		}
		if done {
			continue
		}
		start := time.Now()
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, qMigrationRecord, m.version, m.name)
			return err
		})
		if err != nil {
			return applied, fmt.Errorf("migrate %s: %w", m.name, err)
		}
		s.log.Info("migration applied", slog.String("name", m.name), slog.Duration("took", time.Since(start)))
		applied = append(applied, m.name)
	}
	var dim string
	if err := conn.QueryRow(ctx, qEmbedDim).Scan(&dim); err != nil {
		return applied, fmt.Errorf("migrate: read embed_dim: %w", err)
	}
	if dim != strconv.Itoa(s.dim) {
		made := "another embedder"
		var have string
		if err := conn.QueryRow(ctx, qEmbedModel).Scan(&have); err == nil {
			made = have + " (provider/model/dimension)"
		}
		return applied, fmt.Errorf("config embed.dim: the database was created with dimension %s, configuration says %d "+
			"(its vectors come from %s: to keep them set embed.provider, embed.model and embed.dim to what made them, "+
			"e.g. local, use-multilingual-v3 and 512 for a database made by the USE alone, the default before 2026-12-05; "+
			"or give this embedder a new database or data_dir)", dim, s.dim, made)
	}
	if s.embedder != "" {
		var have string
		err := conn.QueryRow(ctx, qEmbedModel).Scan(&have)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			// A new database, or one from before models were recorded:
			// its vectors are taken to be this embedder's.
			if _, err := conn.Exec(ctx, qEmbedModelRecord, s.embedder); err != nil {
				return applied, fmt.Errorf("migrate: record embed_model: %w", err)
			}
		case err != nil:
			return applied, fmt.Errorf("migrate: read embed_model: %w", err)
		case have != s.embedder:
			return applied, fmt.Errorf("config embed.provider: the database's vectors were made by %s, configuration says %s; "+
				"vectors of two models are not comparable: set embed.provider (and embed.model) back, or give this embedder a new database or data_dir", have, s.embedder)
		}
	}
	// Connections opened before the extension existed missed the vector
	// types; reset the pool's idle connections so new ones register them.
	s.pool.Reset()
	return applied, nil
}

// translate maps driver errors to the store's sentinel errors.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return conflictError{pgErr}
	}
	return err
}

// conflictError is a unique violation as ErrConflict, naming the
// constraint. It keeps the PostgreSQL error beneath, so the classifiers
// (IsTransient, IsRejected) still see a data error rather than a lost
// connection.
type conflictError struct{ pg *pgconn.PgError }

func (e conflictError) Error() string   { return ErrConflict.Error() + ": " + e.pg.ConstraintName }
func (e conflictError) Unwrap() []error { return []error{ErrConflict, e.pg} }

// BankNotFoundError is ErrNotFound for a bank: a write into a bank that
// does not exist, typically one deleted while the write ran (its foreign
// key to banks failed). It names the bank, so an API answer can, and
// keeps the PostgreSQL error beneath for the classifiers.
type BankNotFoundError struct {
	BankID string
	pg     *pgconn.PgError
}

func (e BankNotFoundError) Error() string { return "bank " + e.BankID + " does not exist" }

// Unwrap is ErrNotFound, and the PostgreSQL error when there is one.
func (e BankNotFoundError) Unwrap() []error {
	if e.pg == nil {
		return []error{ErrNotFound}
	}
	return []error{ErrNotFound, e.pg}
}

// parentGoneError is ErrNotFound for a write whose parent row other than
// the bank (a document, entity, mental model, folder, webhook) was deleted
// while it ran, naming the foreign key.
type parentGoneError struct{ pg *pgconn.PgError }

func (e parentGoneError) Error() string   { return ErrNotFound.Error() + ": " + e.pg.ConstraintName }
func (e parentGoneError) Unwrap() []error { return []error{ErrNotFound, e.pg} }

// translateIn is translate for a write into bank. A foreign-key violation
// there (23503) means a parent was deleted between the write's checks and
// its insert, so the client is told the parent is gone: a BankNotFoundError
// for the bank's own key (constraint <table>_bank_id_fkey), ErrNotFound for
// another parent. Untranslated it was an internal error, a 500.
func translateIn(bank string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" {
		if strings.HasSuffix(pgErr.ConstraintName, "_bank_id_fkey") {
			return BankNotFoundError{BankID: bank, pg: pgErr}
		}
		return parentGoneError{pgErr}
	}
	return translate(err)
}

// IsTransient reports whether an error of a store call is worth retrying
// as is: connection loss, server shutdown, serialization failures and
// deadlocks. Data errors (constraint or type violations) are not. It is
// the store's to say, so callers never inspect PostgreSQL error codes.
func IsTransient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	if errors.Is(err, ErrNotFound) {
		return false // an answer, not a failure: the same call finds nothing again
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return true // network-level: the server is restarting or unreachable
	}
	switch {
	case strings.HasPrefix(pgErr.Code, "08"), // connection exception
		strings.HasPrefix(pgErr.Code, "57"), // operator intervention (shutdown)
		strings.HasPrefix(pgErr.Code, "53"), // insufficient resources
		strings.HasPrefix(pgErr.Code, "58"), // system error (I/O)
		strings.HasPrefix(pgErr.Code, "XX"), // internal error
		pgErr.Code == "40001", pgErr.Code == "40P01", pgErr.Code == "55P03":
		return true
	}
	return false
}

// IsUnavailable reports a PostgreSQL error that no retry of the same call
// fixes until an operator acts: an undefined table or column (a schema
// behind the binary), refused credentials, a missing database. Ingest
// stalls on it and readiness fails, rather than dead-lettering every
// record.
func IsUnavailable(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	return strings.HasPrefix(pgErr.Code, "42") || strings.HasPrefix(pgErr.Code, "28") || strings.HasPrefix(pgErr.Code, "3D")
}

// IsRejected reports a PostgreSQL error that belongs to the data written (a
// data exception, an integrity violation, anything neither transient nor
// unavailable): the record that caused it is at fault, not the database.
func IsRejected(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	return !IsTransient(err) && !IsUnavailable(err)
}

const (
	qSaltInsert = `INSERT INTO memstream_meta (key, value) VALUES ('audit_salt', $1) ON CONFLICT (key) DO NOTHING`
	qSaltGet    = `SELECT value FROM memstream_meta WHERE key = 'audit_salt'`
)

// AuditSalt returns the database's defense fingerprint salt, creating a
// random one on first use: one salt for every replica, stable across
// restarts, so fingerprints stay comparable.
func (s *Store) AuditSalt(ctx context.Context) (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("audit salt: %w", err)
	}
	if _, err := s.pool.Exec(ctx, qSaltInsert, hex.EncodeToString(raw[:])); err != nil {
		return "", fmt.Errorf("audit salt: %w", err)
	}
	var v string
	if err := s.pool.QueryRow(ctx, qSaltGet).Scan(&v); err != nil {
		return "", fmt.Errorf("audit salt: %w", err)
	}
	return v, nil
}

// contentionAttempts bounds how often a write transaction that lost a
// deadlock or a serialization check is run again.
const contentionAttempts = 4

// IsContention reports an error of a store call that lost to a concurrent
// writer (a deadlock, a serialization failure, a lock not available): the
// transaction was rolled back, so the call did nothing and may simply be
// made again.
func IsContention(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001" || pgErr.Code == "55P03")
}

// writeTx runs fn in one transaction, and runs it again when the server
// aborted it for a deadlock or a serialization failure. Consolidation and
// ingest lock a bank's rows in their own order, so an API write that
// touches many of them (a clear, a document delete) can lose a deadlock
// to them; the server rolled the loser back, so a new attempt is safe.
func (s *Store) writeTx(ctx context.Context, fn func(pgx.Tx) error) error {
	var err error
	for attempt := 0; attempt < contentionAttempts; attempt++ {
		if attempt > 0 {
			// A short, growing pause lets the winner commit first.
			t := time.NewTimer(time.Duration(attempt*attempt) * 10 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return err
			case <-t.C:
			}
		}
		err = pgx.BeginFunc(ctx, s.pool, fn)
		if !IsContention(err) {
			return err
		}
		s.log.Debug("write transaction lost to a concurrent writer; running it again", "attempt", attempt+1, "error", err)
	}
	return err
}
