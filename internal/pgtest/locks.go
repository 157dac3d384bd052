package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// WaitForBlocked waits until a statement matching the LIKE pattern query
// waits on a lock that the transaction tx holds (so that parallel tests'
// waits do not count). Tests use it to force an interleaving: tx holds a
// row, the call under test reaches the statement and waits on it.
func WaitForBlocked(t testing.TB, pool *pgxpool.Pool, tx pgx.Tx, query string) {
	t.Helper()
	pid := tx.Conn().PgConn().PID()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE $1::int = ANY (pg_blocking_pids(pid)) AND query LIKE $2`, int32(pid), query).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no statement like %q waited on a lock", query)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// HeldDelete runs call while a delete of one parent row is in progress,
// and returns call's error. The row is locked first (lock, a FOR UPDATE:
// a delete's first step locks the row the same way), so call passes its
// own checks and then waits with its statement matching insert (the
// child's insert, whose foreign key needs the row); then the row is
// deleted (del) and the delete committed. key is $1 of lock and del.
func HeldDelete(t testing.TB, pool *pgxpool.Pool, lock, del, key, insert string, call func() error) error {
	t.Helper()
	ctx := context.Background()
	hold, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx)
	if _, err := hold.Exec(ctx, lock, key); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- call() }()
	WaitForBlocked(t, pool, hold, insert)
	if _, err := hold.Exec(ctx, del, key); err != nil {
		t.Fatal(err)
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return <-done
}
