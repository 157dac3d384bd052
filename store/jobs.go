package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Job is one claimed unit of background work.
type Job struct {
	ID          int64
	Kind        string
	BankID      string
	Payload     json.RawMessage
	Attempts    int
	MaxAttempts int
	LockedBy    string
}

// Consolidation states of a bank (banks.consolidation_state).
const (
	ConsolidationRunning = "running"
	ConsolidationPaused  = "paused"
)

const (
	// The inner SELECT picks the oldest due job whose bank is not paused;
	// SKIP LOCKED lets concurrent workers each take a different row instead
	// of queueing behind one lock. Jobs of a paused bank stay available
	// and are picked up as soon as the bank resumes. A bank whose job is
	// running is skipped too, so one bank is drained by one worker at a
	// time (its new job waits for the running one).
	qJobClaim = `UPDATE jobs SET state = 'running', locked_at = now(), locked_by = $2, attempts = attempts + 1
		WHERE id = (
			SELECT j.id FROM jobs j
			JOIN banks b ON b.id = j.bank_id
			WHERE j.state = 'available' AND j.kind = $1 AND j.run_at <= now()
			  AND b.consolidation_state <> 'paused'
			  AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.bank_id = j.bank_id AND r.kind = j.kind AND r.state = 'running')
			ORDER BY j.run_at, j.id
			LIMIT 1
			FOR UPDATE OF j SKIP LOCKED)
		RETURNING id, kind, bank_id, payload, attempts, max_attempts, locked_by`
	qJobComplete = `UPDATE jobs SET state = 'done', finished_at = now(), locked_at = NULL, last_error = NULL
		WHERE id = $1 AND state = 'running' AND locked_by = $2`
	// A running job's locked_at is its heartbeat: the worker refreshes it
	// while it drains, and only a job without one for the lock timeout is
	// taken back (qJobReclaim). No row means the job is no longer held.
	qJobHeartbeat = `UPDATE jobs SET locked_at = now() WHERE id = $1 AND state = 'running' AND locked_by = $2`
	// Finished rows go after their retention, a bounded number per call
	// so that a large backlog of them is deleted in steps.
	qJobDeleteFinished = `DELETE FROM jobs WHERE id IN (
		SELECT id FROM jobs
		WHERE (state = 'done' AND finished_at < now() - make_interval(secs => $1))
		   OR (state = 'failed' AND finished_at < now() - make_interval(secs => $2))
		LIMIT 10000)`
	// A failed job goes back to available with a later run_at, unless it
	// ran out of attempts, or another available job with the same
	// unique_key was enqueued meanwhile: that one already covers the bank,
	// and two available rows would break the unique index.
	qJobFail = `UPDATE jobs SET
			state = CASE
				WHEN attempts >= max_attempts THEN 'failed'
				WHEN unique_key IS NOT NULL AND EXISTS (SELECT 1 FROM jobs o
					WHERE o.unique_key = jobs.unique_key AND o.state = 'available' AND o.id <> jobs.id) THEN 'done'
				ELSE 'available' END,
			run_at = now() + make_interval(secs => $3),
			finished_at = CASE WHEN attempts >= max_attempts OR (unique_key IS NOT NULL AND EXISTS (SELECT 1 FROM jobs o
					WHERE o.unique_key = jobs.unique_key AND o.state = 'available' AND o.id <> jobs.id)) THEN now() END,
			locked_at = NULL, locked_by = NULL, last_error = $4
		WHERE id = $1 AND state = 'running' AND locked_by = $2
		RETURNING state`
	// A worker that crashed leaves its job running forever; once its
	// heartbeat is older than the lock timeout the job is made available
	// again (or retired as a duplicate, as in qJobFail). attempts was counted at claim time, so a job that
	// crashes its worker every time still reaches max_attempts.
	qJobReclaim = `UPDATE jobs SET
			state = CASE
				WHEN attempts >= max_attempts THEN 'failed'
				WHEN unique_key IS NOT NULL AND EXISTS (SELECT 1 FROM jobs o
					WHERE o.unique_key = jobs.unique_key AND o.state = 'available' AND o.id <> jobs.id) THEN 'done'
				ELSE 'available' END,
			finished_at = CASE WHEN attempts >= max_attempts OR (unique_key IS NOT NULL AND EXISTS (SELECT 1 FROM jobs o
					WHERE o.unique_key = jobs.unique_key AND o.state = 'available' AND o.id <> jobs.id)) THEN now() END,
			run_at = now(), locked_at = NULL, locked_by = NULL,
			last_error = 'lock expired (worker ' || coalesce(locked_by, '?') || ' lost)'
		WHERE state = 'running' AND locked_at < now() - make_interval(secs => $1)`
	qConsolidationState = `UPDATE banks SET consolidation_state = $2, updated_at = now() WHERE id = $1`
	qBankPaused         = `SELECT consolidation_state = 'paused' FROM banks WHERE id = $1`
	// The consolidation queue holds exactly the unconsolidated facts; held
	// ones wait for their bank's next run and are no backlog.
	qBacklog          = `SELECT count(*), min(m.created_at), now() FROM consolidation_queue cq JOIN memory_units m ON m.id = cq.unit_id WHERE NOT cq.held`
	qBacklogBank      = `SELECT count(*) FROM consolidation_queue WHERE bank_id = $1 AND NOT held`
	qBanksWithBacklog = `SELECT DISTINCT bank_id FROM consolidation_queue WHERE NOT held`
	qReleaseHeld      = `UPDATE consolidation_queue SET held = false WHERE bank_id = $1 AND held`
)

// ClaimJob takes the oldest due job of kind whose bank is not paused and
// marks it running for worker. It returns ErrNotFound when nothing is due.
func (s *Store) ClaimJob(ctx context.Context, kind, worker string) (Job, error) {
	var j Job
	err := s.pool.QueryRow(ctx, qJobClaim, kind, worker).Scan(&j.ID, &j.Kind, &j.BankID, &j.Payload, &j.Attempts, &j.MaxAttempts, &j.LockedBy)
	if err != nil {
		return Job{}, fmt.Errorf("claim %s job: %w", kind, translate(err))
	}
	return j, nil
}

// CompleteJob marks a job done. It is a no-op when the job is no longer
// held by worker (its lock expired and another worker took it).
func (s *Store) CompleteJob(ctx context.Context, id int64, worker string) error {
	if _, err := s.pool.Exec(ctx, qJobComplete, id, worker); err != nil {
		return fmt.Errorf("complete job %d: %w", id, err)
	}
	return nil
}

// HeartbeatJob refreshes the lock of a running job held by worker, so
// that ReclaimStaleJobs leaves it alone however long the drain takes. It
// returns false when the job is no longer held by worker (its lock
// expired and it was taken back): the caller should stop working on it.
func (s *Store) HeartbeatJob(ctx context.Context, id int64, worker string) (bool, error) {
	tag, err := s.pool.Exec(ctx, qJobHeartbeat, id, worker)
	if err != nil {
		return false, fmt.Errorf("heartbeat job %d: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// DeleteFinishedJobs deletes done jobs finished longer than done ago and
// failed ones finished longer than failed ago, at most 10 000 per call.
// It returns how many it deleted.
func (s *Store) DeleteFinishedJobs(ctx context.Context, done, failed time.Duration) (int64, error) {
	tag, err := s.pool.Exec(ctx, qJobDeleteFinished, done.Seconds(), failed.Seconds())
	if err != nil {
		return 0, fmt.Errorf("delete finished jobs: %w", err)
	}
	return tag.RowsAffected(), nil
}

// FailJob records a failed attempt and schedules the retry after backoff.
// It returns the job's new state: available (retry pending), failed (out
// of attempts) or done (a newer job for the same key supersedes it).
func (s *Store) FailJob(ctx context.Context, id int64, worker string, backoff time.Duration, cause error) (string, error) {
	msg := ""
	if cause != nil {
		msg = cause.Error()
	}
	var state string
	err := retryPendingRace(func() error {
		return translate(s.pool.QueryRow(ctx, qJobFail, id, worker, backoff.Seconds(), msg).Scan(&state))
	})
	if err != nil {
		return "", fmt.Errorf("fail job %d: %w", id, err)
	}
	return state, nil
}

// retryPendingRace runs fn, a statement that makes running jobs available
// again, once more when it collided with an enqueue of the same key. The
// statement retires a job as done when another available job covers its
// key, but under READ COMMITTED it cannot see an insert that commits
// while it runs; the insert wins the unique index and the statement
// fails. Run again, it sees the committed row. Without the retry the job
// stayed running, and its bank was not consolidated until the lock
// timeout took it back.
func retryPendingRace(fn func() error) error {
	var err error
	for range 3 {
		if err = fn(); !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return err
}

// ReclaimStaleJobs releases running jobs whose lock is older than timeout,
// the jobs of workers that crashed. It returns how many it released.
func (s *Store) ReclaimStaleJobs(ctx context.Context, timeout time.Duration) (int, error) {
	var n int64
	err := retryPendingRace(func() error {
		tag, err := s.pool.Exec(ctx, qJobReclaim, timeout.Seconds())
		n = tag.RowsAffected()
		return translate(err)
	})
	if err != nil {
		return 0, fmt.Errorf("reclaim stale jobs: %w", err)
	}
	return int(n), nil
}

// EnqueueConsolidation enqueues a consolidation job for each bank, unless
// one is already available (the same unique key PersistBatch uses).
func (s *Store) EnqueueConsolidation(ctx context.Context, bankIDs ...string) error {
	if _, err := s.pool.Exec(ctx, qEnqueueJob, JobConsolidate, bankIDs); err != nil {
		return fmt.Errorf("enqueue consolidation %v: %w", bankIDs, err)
	}
	return nil
}

// ReleaseHeldConsolidation lets the worker consolidate again the facts a
// clear of the bank's observations held (a consolidation asked for).
func (s *Store) ReleaseHeldConsolidation(ctx context.Context, bankID string) error {
	if _, err := s.pool.Exec(ctx, qReleaseHeld, bankID); err != nil {
		return fmt.Errorf("release held consolidation bank %s: %w", bankID, err)
	}
	return nil
}

// SetConsolidationState pauses or resumes consolidation of a bank.
func (s *Store) SetConsolidationState(ctx context.Context, bankID, state string) error {
	if state != ConsolidationRunning && state != ConsolidationPaused {
		return fmt.Errorf("set consolidation state of bank %s: state %q is not running or paused", bankID, state)
	}
	tag, err := s.pool.Exec(ctx, qConsolidationState, bankID, state)
	if err != nil {
		return fmt.Errorf("set consolidation state of bank %s: %w", bankID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("set consolidation state of bank %s: %w", bankID, ErrNotFound)
	}
	return nil
}

// ConsolidationPaused reports whether consolidation of a bank is paused.
// A bank that does not exist is not paused.
func (s *Store) ConsolidationPaused(ctx context.Context, bankID string) (bool, error) {
	var paused bool
	err := s.pool.QueryRow(ctx, qBankPaused, bankID).Scan(&paused)
	if err != nil {
		if translate(err) == ErrNotFound {
			return false, nil
		}
		return false, fmt.Errorf("consolidation state of bank %s: %w", bankID, err)
	}
	return paused, nil
}

// Backlog is the amount of unconsolidated work across all banks.
type Backlog struct {
	// Facts is the number of facts not yet consolidated.
	Facts int64
	// OldestAge is how long the oldest of them has waited (0 when none).
	OldestAge time.Duration
}

// ConsolidationBacklog measures the unconsolidated facts of every bank.
// The age is computed against the database clock, the one that stamped
// created_at.
func (s *Store) ConsolidationBacklog(ctx context.Context) (Backlog, error) {
	var b Backlog
	var oldest *time.Time
	var now time.Time
	if err := s.pool.QueryRow(ctx, qBacklog).Scan(&b.Facts, &oldest, &now); err != nil {
		return b, fmt.Errorf("consolidation backlog: %w", err)
	}
	if oldest != nil && now.After(*oldest) {
		b.OldestAge = now.Sub(*oldest)
	}
	return b, nil
}

// BankBacklog counts the unconsolidated facts of one bank.
func (s *Store) BankBacklog(ctx context.Context, bankID string) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, qBacklogBank, bankID).Scan(&n); err != nil {
		return 0, fmt.Errorf("consolidation backlog bank %s: %w", bankID, err)
	}
	return n, nil
}

// BanksWithBacklog lists the banks that have unconsolidated facts, so a
// scheduler can re-enqueue work that lost its job (for example a job that
// ran out of attempts).
func (s *Store) BanksWithBacklog(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, qBanksWithBacklog)
	if err != nil {
		return nil, fmt.Errorf("banks with backlog: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}
