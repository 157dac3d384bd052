package store

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The store's own error values keep what the classifiers need: a unique
// violation translated to ErrConflict is still a data error (not taken
// for a lost connection and retried for ever), and not-found is no failure
// worth retrying.
func TestTranslatedErrorsClassify(t *testing.T) {
	pg := &pgconn.PgError{Code: "23505", ConstraintName: "jobs_unique_pending_idx"}
	conflict := fmt.Errorf("fail job 1: %w", translate(pg))
	if !errors.Is(conflict, ErrConflict) || conflict.Error() != "fail job 1: conflict: jobs_unique_pending_idx" {
		t.Fatalf("translated conflict: %v (is ErrConflict: %v)", conflict, errors.Is(conflict, ErrConflict))
	}
	if IsTransient(conflict) || !IsRejected(conflict) || IsUnavailable(conflict) {
		t.Errorf("translated conflict: transient %v, rejected %v, unavailable %v; want a rejected data error",
			IsTransient(conflict), IsRejected(conflict), IsUnavailable(conflict))
	}
	notFound := fmt.Errorf("get bank b: %w", translate(pgx.ErrNoRows))
	if !errors.Is(notFound, ErrNotFound) || IsTransient(notFound) {
		t.Errorf("translated not-found: is ErrNotFound %v, transient %v", errors.Is(notFound, ErrNotFound), IsTransient(notFound))
	}
	if !IsTransient(&pgconn.PgError{Code: "40P01"}) || !IsTransient(errors.New("connection reset")) {
		t.Error("a deadlock and a network error must stay transient")
	}
}
