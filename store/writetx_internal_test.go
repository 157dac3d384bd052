package store

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestWriteTxRunsTheDeadlockLoserAgain makes two transactions lock two
// rows in opposite orders, so the server must abort one of them as a
// deadlock: both writeTx calls still succeed, and the loser ran again.
func TestWriteTxRunsTheDeadlockLoserAgain(t *testing.T) {
	t.Parallel()
	s := migratedInternal(t)
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, `CREATE TABLE deadlock_rows (id int PRIMARY KEY, n int NOT NULL DEFAULT 0); INSERT INTO deadlock_rows (id) VALUES (1), (2)`); err != nil {
		t.Fatal(err)
	}
	// Both hold their first row before either asks for its second.
	var firstLocks sync.WaitGroup
	firstLocks.Add(2)
	var once [2]sync.Once
	var mu sync.Mutex
	runs := [2]int{}
	lockPair := func(k, first, second int) error {
		return s.writeTx(ctx, func(tx pgx.Tx) error {
			mu.Lock()
			runs[k]++
			mu.Unlock()
			if _, err := tx.Exec(ctx, `UPDATE deadlock_rows SET n = n + 1 WHERE id = $1`, first); err != nil {
				return err
			}
			once[k].Do(func() {
				firstLocks.Done()
				firstLocks.Wait()
			})
			_, err := tx.Exec(ctx, `UPDATE deadlock_rows SET n = n + 1 WHERE id = $1`, second)
			return err
		})
	}
	errs := make(chan error, 2)
	go func() { errs <- lockPair(0, 1, 2) }()
	go func() { errs <- lockPair(1, 2, 1) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("writeTx: %v", err)
		}
	}
	// One deadlock at least: the loser's new attempt can take its first row
	// back before the winner, woken by the abort, has taken it (a loaded
	// machine), and lose a second deadlock the same way.
	if runs[0]+runs[1] < 3 {
		t.Errorf("transactions ran %v times; want one of them again (a deadlock)", runs)
	}
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT sum(n) FROM deadlock_rows`).Scan(&total); err != nil {
		t.Fatal(err)
	}
	if total != 4 {
		t.Errorf("rows were updated %d times; want 4 (the aborted attempt left nothing)", total)
	}
}

// TestWriteTxGivesUpOnPersistentContention checks the bound on attempts,
// that the error stays recognisable, and that other errors are not retried.
func TestWriteTxGivesUpOnPersistentContention(t *testing.T) {
	t.Parallel()
	s := migratedInternal(t)
	ctx := context.Background()
	calls := 0
	err := s.writeTx(ctx, func(pgx.Tx) error {
		calls++
		return &pgconn.PgError{Code: "40001", Message: "could not serialize access"}
	})
	if calls != contentionAttempts || !IsContention(err) {
		t.Errorf("calls %d, IsContention %v (%v); want %d, true", calls, IsContention(err), err, contentionAttempts)
	}
	calls = 0
	plain := errors.New("not contention")
	err = s.writeTx(ctx, func(pgx.Tx) error { calls++; return plain })
	if calls != 1 || !errors.Is(err, plain) || IsContention(err) {
		t.Errorf("a plain error: calls %d, err %v; want 1 call and the error as is", calls, err)
	}
}
