package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// OperationsChannel and WebhooksChannel are the NOTIFY channels on which
// new work is announced (by triggers of migration 010): an operation
// becoming pending, a webhook delivery queued. The payload is empty; a
// listener only learns that it should look.
const (
	OperationsChannel = "memstream_operations"
	WebhooksChannel   = "memstream_webhooks"
)

const (
	// One pending operation of a kind the caller runs, oldest first; the
	// claim is a lease the runner renews (HeartbeatOperation).
	qOpClaim = `UPDATE operations SET status = 'processing', claimed_by = $2, claimed_until = now() + $3::interval,
			runs = runs + 1, updated_at = now()
		WHERE id = (SELECT id FROM operations
			WHERE status = 'pending' AND kind = ANY($1) AND next_check_at <= now()
			ORDER BY created_at FOR UPDATE SKIP LOCKED LIMIT 1)
		RETURNING ` + opCols
	// Open operations whose progress is read from the store (a retain's
	// events, a consolidation's facts) and that are due for a look. Each
	// is pushed back by a quarter of its age, between 250 ms and 30 s, so
	// a young retain is settled promptly and an old one costs little; the
	// push is the claim, so replicas share the looking.
	qOpDue = `UPDATE operations SET next_check_at = now() +
			LEAST(GREATEST((now() - created_at) / 4, interval '250 milliseconds'), interval '30 seconds')
		WHERE id IN (SELECT id FROM operations
			WHERE status = 'pending' AND kind = ANY($1) AND next_check_at <= now()
			ORDER BY next_check_at FOR UPDATE SKIP LOCKED LIMIT $2)
		RETURNING ` + opCols
	qOpHeartbeat = `UPDATE operations SET claimed_until = now() + $3::interval, updated_at = now()
		WHERE id = $1 AND claimed_by = $2 AND status = 'processing'`
	qOpFinishClaimed = `UPDATE operations SET status = $3, error_message = NULLIF($4, ''), result = COALESCE($5, result),
			completed_at = now(), updated_at = now(), claimed_by = NULL, claimed_until = NULL
		WHERE id = $1 AND claimed_by = $2 AND status = 'processing'`
	// A run stopped by its own process's shutdown goes back to pending
	// without counting as a run.
	qOpReleaseClaimed = `UPDATE operations SET status = 'pending', claimed_by = NULL, claimed_until = NULL,
			runs = GREATEST(runs - 1, 0), next_check_at = now(), updated_at = now()
		WHERE id = $1 AND claimed_by = $2 AND status = 'processing'`
	// A processing operation whose lease ran out was held by a process
	// that died: it is run again, or failed once it has been claimed
	// $1 times (a run that kills its process must not loop forever).
	qOpReclaimLost = `UPDATE operations SET
			status = CASE WHEN runs >= $1 THEN 'failed' ELSE 'pending' END,
			error_message = CASE WHEN runs >= $1 THEN $2 END,
			completed_at = CASE WHEN runs >= $1 THEN now() END,
			claimed_by = NULL, claimed_until = NULL, next_check_at = now(), updated_at = now()
		WHERE status = 'processing' AND claimed_until < now()
		RETURNING ` + opCols
	// When the earliest open operation needs a look: its lease's end when
	// processing, its next check otherwise.
	qOpNextDue = `SELECT min(CASE WHEN status = 'processing' THEN claimed_until ELSE next_check_at END)
		FROM operations WHERE status IN ('pending', 'processing')`
)

// ClaimOperation leases the oldest pending operation of one of kinds to
// owner for lease, marking it processing. It returns false when there is
// none. Several replicas may call it at once: each operation goes to one.
func (s *Store) ClaimOperation(ctx context.Context, kinds []string, owner string, lease time.Duration) (Operation, bool, error) {
	o, err := scanOp(s.pool.QueryRow(ctx, qOpClaim, kinds, owner, lease.String()))
	if errors.Is(err, pgx.ErrNoRows) {
		return o, false, nil
	}
	if err != nil {
		return o, false, fmt.Errorf("claim operation (%s) for %s: %w", strings.Join(kinds, ","), owner, err)
	}
	return o, true, nil
}

// DueOperations returns up to limit pending operations of kinds that are
// due for a look, and pushes their next look back (a quarter of their age,
// 250 ms to 30 s), so no other replica looks at them before then.
func (s *Store) DueOperations(ctx context.Context, kinds []string, limit int) ([]Operation, error) {
	rows, err := s.pool.Query(ctx, qOpDue, kinds, limit)
	if err != nil {
		return nil, fmt.Errorf("due operations (%s): %w", strings.Join(kinds, ","), err)
	}
	defer rows.Close()
	var out []Operation
	for rows.Next() {
		o, err := scanOp(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// HeartbeatOperation renews owner's lease on a processing operation. It
// returns false when owner no longer holds it (it was cancelled, or its
// lease ran out and it was reclaimed): the run must stop.
func (s *Store) HeartbeatOperation(ctx context.Context, id uuid.UUID, owner string, lease time.Duration) (bool, error) {
	tag, err := s.pool.Exec(ctx, qOpHeartbeat, id, owner, lease.String())
	if err != nil {
		return false, fmt.Errorf("heartbeat operation %s: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// FinishClaimedOperation ends a processing operation that owner holds
// (status completed or failed). It returns false, changing nothing, when
// owner lost it meanwhile.
func (s *Store) FinishClaimedOperation(ctx context.Context, id uuid.UUID, owner, status, errMsg string, result []byte) (bool, error) {
	var res any
	if len(result) > 0 {
		res = result
	}
	tag, err := s.pool.Exec(ctx, qOpFinishClaimed, id, owner, status, errMsg, res)
	if err != nil {
		return false, fmt.Errorf("finish operation %s: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReleaseClaimedOperation puts a processing operation that owner holds
// back to pending, for a run cut short by its own process stopping.
func (s *Store) ReleaseClaimedOperation(ctx context.Context, id uuid.UUID, owner string) error {
	if _, err := s.pool.Exec(ctx, qOpReleaseClaimed, id, owner); err != nil {
		return fmt.Errorf("release operation %s: %w", id, err)
	}
	return nil
}

// ReclaimOperations takes back every processing operation whose lease ran
// out: pending again, or failed (with a message saying why) once it has
// been claimed maxRuns times. It returns the operations it changed.
func (s *Store) ReclaimOperations(ctx context.Context, maxRuns int) ([]Operation, error) {
	msg := fmt.Sprintf("the process running this operation stopped %d times before finishing it; retry it to run it again", maxRuns)
	rows, err := s.pool.Query(ctx, qOpReclaimLost, maxRuns, msg)
	if err != nil {
		return nil, fmt.Errorf("reclaim operations: %w", err)
	}
	defer rows.Close()
	var out []Operation
	for rows.Next() {
		o, err := scanOp(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// NextOperationDue tells when the earliest open operation needs a runner:
// the end of its lease when processing, its next look otherwise. ok is
// false when no operation is open.
func (s *Store) NextOperationDue(ctx context.Context) (at time.Time, ok bool, err error) {
	var t *time.Time
	if err := s.pool.QueryRow(ctx, qOpNextDue).Scan(&t); err != nil {
		return time.Time{}, false, fmt.Errorf("next operation due: %w", err)
	}
	if t == nil {
		return time.Time{}, false, nil
	}
	return *t, true, nil
}
