package store

import (
	"context"
	"fmt"
	"time"
)

const (
	// pruneBatch bounds one delete of pruneBefore, so that no statement
	// holds a long transaction or a large lock set.
	pruneBatch = 10000
	// qAuditPruneAge and qDefenseAuditPruneAge delete at most $2 rows
	// older than $1, oldest first off their time index (migration 018).
	qAuditPruneAge = `DELETE FROM audit_log WHERE id IN (
		SELECT id FROM audit_log WHERE started_at < $1 ORDER BY started_at LIMIT $2 FOR UPDATE SKIP LOCKED)`
	// defense_audit has no single-column key; ctid names the rows the
	// subquery claimed, within the one statement.
	qDefenseAuditPruneAge = `DELETE FROM defense_audit WHERE ctid = ANY(ARRAY(
		SELECT ctid FROM defense_audit WHERE created_at < $1 ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED))`
)

// pruneBefore runs q (a delete of at most $2 rows older than $1) until a
// round deletes fewer than pruneBatch, each round its own transaction.
// Rows are claimed with SKIP LOCKED: two processes pruning at once take
// different rows, and a row another transaction holds waits for the next
// prune instead of holding this one up.
func (s *Store) pruneBefore(ctx context.Context, q, what string, before time.Time) (int64, error) {
	var n int64
	for {
		tag, err := s.pool.Exec(ctx, q, before, pruneBatch)
		if err != nil {
			return n, fmt.Errorf("prune %s before %s: %w", what, before.Format(time.RFC3339), err)
		}
		n += tag.RowsAffected()
		if tag.RowsAffected() < pruneBatch {
			return n, nil
		}
	}
}

// PruneAudit deletes the API audit log's entries that started before
// before (http.audit_retention), of every bank; it returns how many went.
func (s *Store) PruneAudit(ctx context.Context, before time.Time) (int64, error) {
	return s.pruneBefore(ctx, qAuditPruneAge, "audit log", before)
}

// PruneDefenseAudit deletes the defense audit's findings recorded before
// before (defense.audit_retention), of every bank. A rescan that changes a
// finding's action records it anew, so the row says the current action
// for as long as it is kept.
func (s *Store) PruneDefenseAudit(ctx context.Context, before time.Time) (int64, error) {
	return s.pruneBefore(ctx, qDefenseAuditPruneAge, "defense audit", before)
}
