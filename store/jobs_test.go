package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/memstream/memstream/store"
)

// persistFacts stores n facts of one bank through PersistBatch, which also
// enqueues the bank's consolidation job.
func persistFacts(t *testing.T, st *store.Store, bank string, n int, at time.Time) {
	t.Helper()
	var evs []store.EventRecord
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("%s-%d-e%d", bank, at.UnixNano(), i)
		evs = append(evs, store.EventRecord{BankID: bank, EventKey: key, DocumentID: "d",
			Facts: []store.FactRow{{ID: store.DeriveID(bank, key), FactType: "world", Text: "fact " + key,
				Embedding: []float32{1, 0, 0, 0}, MentionedAt: at, IdemKey: key}}})
	}
	if _, err := st.PersistBatch(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
}

func TestJobClaimSkipsLockedAndPausedBanks(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	persistFacts(t, st, "a", 2, at)
	persistFacts(t, st, "b", 1, at)
	// A second persist for a bank whose job is still available collapses
	// into the same job.
	persistFacts(t, st, "a", 3, at)
	var n int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM jobs`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("jobs = %d, %v; want 2", n, err)
	}

	if err := st.SetConsolidationState(ctx, "b", store.ConsolidationPaused); err != nil {
		t.Fatal(err)
	}
	j1, err := st.ClaimJob(ctx, store.JobConsolidate, "w1")
	if err != nil || j1.BankID != "a" || j1.Attempts != 1 || j1.LockedBy != "w1" {
		t.Fatalf("claim 1: %+v %v", j1, err)
	}
	// a is running, b is paused: nothing else is claimable.
	if _, err := st.ClaimJob(ctx, store.JobConsolidate, "w2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("claim with paused bank: %v, want ErrNotFound", err)
	}
	if err := st.SetConsolidationState(ctx, "b", store.ConsolidationRunning); err != nil {
		t.Fatal(err)
	}
	j2, err := st.ClaimJob(ctx, store.JobConsolidate, "w2")
	if err != nil || j2.BankID != "b" {
		t.Fatalf("claim after resume: %+v %v", j2, err)
	}
	if err := st.CompleteJob(ctx, j2.ID, "w2"); err != nil {
		t.Fatal(err)
	}
	var state string
	if err := st.Pool().QueryRow(ctx, `SELECT state FROM jobs WHERE id = $1`, j2.ID).Scan(&state); err != nil || state != "done" {
		t.Fatalf("completed job state %q %v", state, err)
	}
	if err := st.SetConsolidationState(ctx, "nope", store.ConsolidationPaused); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("pause of a missing bank: %v", err)
	}
	if err := st.SetConsolidationState(ctx, "a", "stopped"); err == nil {
		t.Fatal("bad state accepted")
	}
}

func TestJobFailBacksOffAndRetires(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	persistFacts(t, st, "a", 1, time.Now())
	if _, err := st.Pool().Exec(ctx, `UPDATE jobs SET max_attempts = 2`); err != nil {
		t.Fatal(err)
	}
	j, err := st.ClaimJob(ctx, store.JobConsolidate, "w1")
	if err != nil {
		t.Fatal(err)
	}
	state, err := st.FailJob(ctx, j.ID, "w1", time.Hour, errors.New("boom"))
	if err != nil || state != "available" {
		t.Fatalf("fail 1: %q %v", state, err)
	}
	// The retry is an hour away: not claimable now.
	if _, err := st.ClaimJob(ctx, store.JobConsolidate, "w1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("claimed before backoff elapsed: %v", err)
	}
	var lastErr string
	if err := st.Pool().QueryRow(ctx, `SELECT last_error FROM jobs WHERE id = $1 AND run_at > now() + interval '59 minutes'`, j.ID).Scan(&lastErr); err != nil || lastErr != "boom" {
		t.Fatalf("backoff not recorded: %q %v", lastErr, err)
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE jobs SET run_at = now()`); err != nil {
		t.Fatal(err)
	}
	j, err = st.ClaimJob(ctx, store.JobConsolidate, "w1")
	if err != nil || j.Attempts != 2 {
		t.Fatalf("second claim: %+v %v", j, err)
	}
	if state, err = st.FailJob(ctx, j.ID, "w1", time.Second, errors.New("boom again")); err != nil || state != "failed" {
		t.Fatalf("fail 2: %q %v, want failed", state, err)
	}
	// A worker that no longer holds the lock cannot touch the job.
	if _, err := st.FailJob(ctx, j.ID, "w1", time.Second, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("fail of a job not held: %v", err)
	}
}

func TestJobReclaimAfterCrash(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	persistFacts(t, st, "a", 1, time.Now())
	j, err := st.ClaimJob(ctx, store.JobConsolidate, "crashed")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := st.ReclaimStaleJobs(ctx, time.Minute); err != nil || n != 0 {
		t.Fatalf("reclaimed a fresh lock: %d %v", n, err)
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE jobs SET locked_at = now() - interval '2 minutes'`); err != nil {
		t.Fatal(err)
	}
	// Meanwhile new facts enqueued a fresh job for the bank: the stale one
	// is retired instead of colliding with it on the unique key.
	persistFacts(t, st, "a", 2, time.Now())
	if n, err := st.ReclaimStaleJobs(ctx, time.Minute); err != nil || n != 1 {
		t.Fatalf("reclaim: %d %v", n, err)
	}
	var states []string
	if err := st.Pool().QueryRow(ctx, `SELECT array_agg(state ORDER BY id) FROM jobs`).Scan(&states); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(states) != "[done available]" {
		t.Fatalf("states after reclaim = %v", states)
	}
	// Without a competing job the stale one becomes available again.
	j2, err := st.ClaimJob(ctx, store.JobConsolidate, "w2")
	if err != nil || j2.ID == j.ID {
		t.Fatalf("claim: %+v %v", j2, err)
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE jobs SET locked_at = now() - interval '2 minutes' WHERE id = $1`, j2.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := st.ReclaimStaleJobs(ctx, time.Minute); err != nil || n != 1 {
		t.Fatalf("reclaim 2: %d %v", n, err)
	}
	j3, err := st.ClaimJob(ctx, store.JobConsolidate, "w3")
	if err != nil || j3.ID != j2.ID || j3.Attempts != 2 {
		t.Fatalf("reclaimed job claim: %+v %v", j3, err)
	}
}

func TestConsolidationBacklog(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	b, err := st.ConsolidationBacklog(ctx)
	if err != nil || b.Facts != 0 || b.OldestAge != 0 {
		t.Fatalf("empty backlog: %+v %v", b, err)
	}
	persistFacts(t, st, "a", 3, time.Now())
	persistFacts(t, st, "b", 2, time.Now())
	if _, err := st.Pool().Exec(ctx, `UPDATE memory_units SET created_at = now() - interval '90 seconds' WHERE id = (SELECT id FROM memory_units WHERE bank_id = 'a' LIMIT 1)`); err != nil {
		t.Fatal(err)
	}
	b, err = st.ConsolidationBacklog(ctx)
	if err != nil || b.Facts != 5 || b.OldestAge < 89*time.Second || b.OldestAge > 10*time.Minute {
		t.Fatalf("backlog: %+v %v", b, err)
	}
	if n, err := st.BankBacklog(ctx, "b"); err != nil || n != 2 {
		t.Fatalf("bank backlog: %d %v", n, err)
	}
	banks, err := st.BanksWithBacklog(ctx)
	if err != nil || len(banks) != 2 {
		t.Fatalf("banks with backlog: %v %v", banks, err)
	}
}

// TestJobClaimWorkBounded: finished rows pile up in jobs (one per drain).
// The claim's "no running job of this bank" check must not read them:
// with 20 000 finished rows a claim reads a bounded number of rows.
func TestJobClaimWorkBounded(t *testing.T) {
	t.Parallel()
	st := oneConnStore(t)
	ctx := context.Background()
	persistFacts(t, st, "a", 1, time.Now())
	if _, err := st.Pool().Exec(ctx, `INSERT INTO banks (id) SELECT 'old' || i FROM generate_series(1, 200) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `INSERT INTO jobs (kind, bank_id, state, attempts, finished_at, created_at)
		SELECT 'consolidate', 'old' || (i % 200 + 1), 'done', 1, now() - interval '2 days', now() - interval '2 days'
		FROM generate_series(1, 20000) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `ANALYZE jobs`); err != nil {
		t.Fatal(err)
	}
	read := func() int64 {
		if _, err := st.Pool().Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := st.Pool().QueryRow(ctx, `SELECT coalesce(t.seq_tup_read, 0) + coalesce(t.idx_tup_fetch, 0) +
			coalesce((SELECT sum(i.idx_tup_read) FROM pg_stat_user_indexes i WHERE i.schemaname = current_schema() AND i.relname = 'jobs'), 0)
			FROM pg_stat_user_tables t WHERE t.schemaname = current_schema() AND t.relname = 'jobs'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := read()
	j, err := st.ClaimJob(ctx, store.JobConsolidate, "w")
	if err != nil || j.BankID != "a" {
		t.Fatalf("claim: %+v %v", j, err)
	}
	if n := read() - before; n > 100 {
		t.Errorf("a claim read %d job rows beside 20 000 finished ones; want a bounded number (at most 100)", n)
	}
}

// TestJobFailRacingEnqueue: an enqueue of the same bank that commits while
// FailJob runs must not leave the failed job running (its bank would wait
// for the lock timeout); FailJob retires it in favour of the new row.
func TestJobFailRacingEnqueue(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	persistFacts(t, st, "race", 1, time.Now())
	j, err := st.ClaimJob(ctx, store.JobConsolidate, "w1")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO jobs (kind, bank_id, unique_key) VALUES ($1, 'race', $1 || ':race')`, store.JobConsolidate); err != nil {
		t.Fatal(err)
	}
	type result struct {
		state string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		state, err := st.FailJob(ctx, j.ID, "w1", 0, errors.New("worker shut down"))
		done <- result{state, err}
	}()
	// FailJob now waits on the uncommitted row's unique-index entry.
	waitForBlocked(t, st, tx, `UPDATE jobs SET%`)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.state != "done" {
		t.Fatalf("FailJob racing an enqueue: %q %v, want done", r.state, r.err)
	}
	var running, available int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'running'), count(*) FILTER (WHERE state = 'available') FROM jobs WHERE bank_id = 'race'`).Scan(&running, &available); err != nil {
		t.Fatal(err)
	}
	if running != 0 || available != 1 {
		t.Fatalf("after the race: %d running, %d available jobs; want 0 and 1", running, available)
	}
	if _, err := st.ClaimJob(ctx, store.JobConsolidate, "w2"); err != nil {
		t.Fatalf("the bank's job is not claimable: %v", err)
	}
}

// TestEnqueueOrderCannotDeadlock: two transactions that enqueue
// consolidation for the same banks, neither of which has an available job,
// wait for each other's new rows of the unique index; in opposite orders
// they deadlocked (a second's stall, then the pipeline's retry). Here one
// enqueues a then b and holds its rows uncommitted while a batch of b's
// and a's events (in that order) is stored.
func TestEnqueueOrderCannotDeadlock(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	hold, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx)
	enqueue := func(bank string) error {
		_, err := hold.Exec(ctx, `INSERT INTO jobs (kind, bank_id, unique_key) VALUES ($1, $2, $1 || ':' || $2)
			ON CONFLICT (unique_key) WHERE state = 'available' AND unique_key IS NOT NULL DO NOTHING`, store.JobConsolidate, bank)
		return err
	}
	if err := enqueue("a"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := st.PersistBatch(ctx, []store.EventRecord{{BankID: "b", EventKey: "eb", DocumentID: "d"}, {BankID: "a", EventKey: "ea", DocumentID: "d"}})
		done <- err
	}()
	waitForBlocked(t, st, hold, `INSERT INTO jobs%`)
	if err := enqueue("b"); err != nil {
		t.Fatalf("the held enqueue of b: %v", err)
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the batch enqueueing b then a: %v", err)
	}
	var available int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM jobs WHERE state = 'available'`).Scan(&available); err != nil || available != 2 {
		t.Fatalf("%d available jobs (%v), want one per bank", available, err)
	}
}

// TestEnsureBankOrderCannotDeadlock is TestEnqueueOrderCannotDeadlock for
// the banks a batch creates: one transaction creates x, then y, while a
// batch of y's and x's events ensures its banks.
func TestEnsureBankOrderCannotDeadlock(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	hold, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx)
	if _, err := hold.Exec(ctx, `INSERT INTO banks (id, name) VALUES ('x', 'x')`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := st.PersistBatch(ctx, []store.EventRecord{{BankID: "y", EventKey: "ey", DocumentID: "d"}, {BankID: "x", EventKey: "ex", DocumentID: "d"}})
		done <- err
	}()
	waitForBlocked(t, st, hold, `INSERT INTO banks%`)
	if _, err := hold.Exec(ctx, `INSERT INTO banks (id, name) VALUES ('y', 'y') ON CONFLICT (id) DO NOTHING`); err != nil {
		t.Fatalf("the held insert of bank y: %v", err)
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the batch ensuring y then x: %v", err)
	}
}
