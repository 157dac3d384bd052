package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/memstream/memstream/store"
)

// TestTwoPrimaryAliasesAtOnce adds two primary aliases of one bank at
// once: one bank has one primary alias, whichever came last. Each add
// clears the others' flag after inserting its own; both are held on a row
// lock of an older alias until both have inserted, then released.
func TestTwoPrimaryAliasesAtOnce(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	if err := st.EnsureBank(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := st.AddBankAlias(ctx, "b", "old", true); err != nil {
		t.Fatal(err)
	}
	hold, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx)
	if _, err := hold.Exec(ctx, `SELECT 1 FROM bank_aliases WHERE alias = 'old' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { done <- st.AddBankAlias(ctx, "b", "first", true) }()
	waitForBlocked(t, st, hold, `UPDATE bank_aliases%`)
	go func() { done <- st.AddBankAlias(ctx, "b", "second", true) }()
	// The second add waits for hold, or for the first.
	pid := int32(hold.Conn().PgConn().PID())
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var waiting int
		if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity w
			WHERE $1::int = ANY (pg_blocking_pids(w.pid)) OR EXISTS (SELECT 1 FROM pg_stat_activity m
				WHERE m.pid = ANY (pg_blocking_pids(w.pid)) AND $1::int = ANY (pg_blocking_pids(m.pid)))`, pid).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second add neither waited for hold nor for the first")
		}
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	aliases, err := st.ListBankAliases(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	var primary []string
	for _, a := range aliases {
		if a.Primary {
			primary = append(primary, a.Alias)
		}
	}
	if len(primary) != 1 {
		t.Fatalf("primary aliases %v of %+v; want one", primary, aliases)
	}
}

// A primary alias for a bank that does not exist is a 404 that names the
// bank, as a plain alias is.
func TestPrimaryAliasOfMissingBankNamesIt(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	for _, primary := range []bool{true, false} {
		err := st.AddBankAlias(context.Background(), "gone", "x", primary)
		var nf store.BankNotFoundError
		if !errors.As(err, &nf) || nf.BankID != "gone" || !errors.Is(err, store.ErrNotFound) {
			t.Errorf("primary=%v: err %v, want a BankNotFoundError for gone", primary, err)
		}
	}
}
