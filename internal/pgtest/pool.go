package pgtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	pgxvec "github.com/pgvector/pgvector-go/pgx"
)

// Pool opens a pool on dbURL (a Schema URL) for a test's own statements:
// arranging rows the product has no API for, and asserting what it wrote.
// The store keeps its pool to itself, so that no product code runs SQL
// outside it; tests check its work through a connection of their own. The
// pool closes when the test ends.
func Pool(t testing.TB, dbURL string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", dbURL, err)
	}
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		// The vector types exist once a migration created the extension.
		if err := pgxvec.RegisterTypes(ctx, conn); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) || strings.Contains(err.Error(), "vector") {
				return nil
			}
			return err
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// WithSetting returns dbURL with a run-time setting for every connection
// made through it, such as enable_seqscan=off for a test that must see
// the plan an index gives.
func WithSetting(t testing.TB, dbURL, key, value string) string {
	t.Helper()
	u, err := withParam(dbURL, key, value)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

// dbs maps what a test opened on a schema (its *store.Store, as a rule) to
// the test's own pool on that schema.
var dbs sync.Map

// Attach opens Pool(t, dbURL) for the store (or any other handle) st that
// a test opened on dbURL, so that helpers handed only st can reach its rows
// with DB(st). It is forgotten when the test ends.
func Attach(t testing.TB, st any, dbURL string) *pgxpool.Pool {
	t.Helper()
	db := Pool(t, dbURL)
	dbs.Store(st, db)
	t.Cleanup(func() { dbs.Delete(st) })
	return db
}

// DB is the pool Attach opened for st. It panics if there is none: a test
// reaching for rows of a store it never attached is a bug in the test.
func DB(st any) *pgxpool.Pool {
	db, ok := dbs.Load(st)
	if !ok {
		panic(fmt.Sprintf("pgtest: DB(%T): no pool attached", st))
	}
	return db.(*pgxpool.Pool)
}
