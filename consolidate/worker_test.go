package consolidate_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/memstream/memstream/consolidate"
	"github.com/memstream/memstream/priority"
	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/store"

	"github.com/memstream/memstream/internal/lifetimetest"
)

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRunHonoursPauseAndReportsBacklog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.persist("p", fact{text: "Pat collects stamps", at: now}, fact{text: "Pat likes hiking", at: now},
		fact{text: "Pat speaks Italian", at: now})
	e.persist("q", fact{text: "Quinn plays the cello", at: now})
	if err := e.st.SetConsolidationState(ctx, "p", store.ConsolidationPaused); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	w := e.worker(consolidate.Deps{Registerer: reg}, consolidate.Config{PollInterval: 20 * time.Millisecond,
		HousekeepingInterval: 20 * time.Millisecond, RatePerSecond: 1000})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	backlog := func(bank string) int64 {
		n, err := e.st.BankBacklog(ctx, bank)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	eventually(t, "bank q to drain", func() bool { return backlog("q") == 0 })
	// p is paused: its facts wait, and the metric shows them.
	eventually(t, "backlog metric = 3", func() bool {
		return gauge(t, reg, "memstream_consolidation_backlog_facts") == 3
	})
	if backlog("p") != 3 {
		t.Fatalf("paused bank was consolidated")
	}
	if age := gauge(t, reg, "memstream_consolidation_oldest_unconsolidated_seconds"); age < 0 || age > 600 {
		t.Errorf("oldest age = %v", age)
	}
	if err := e.st.SetConsolidationState(ctx, "p", store.ConsolidationRunning); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bank p to drain after resume", func() bool { return backlog("p") == 0 })
	eventually(t, "backlog metric = 0", func() bool {
		return gauge(t, reg, "memstream_consolidation_backlog_facts") == 0
	})
	if got := len(valid(e.observations("p"))); got != 3 {
		t.Errorf("observations of p = %d", got)
	}
	eventually(t, "jobs to finish", func() bool {
		return e.count(`SELECT count(*) FROM jobs WHERE state <> 'done'`) == 0
	})
}

// gauge reads a registered gauge through the registry, as a scrape of
// /metrics would.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.Metric) == 1 {
			return mf.Metric[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}

func TestDrainStopsWhenPaused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.persist("p", fact{text: "Pat collects stamps", at: now})
	if err := e.st.SetConsolidationState(context.Background(), "p", store.ConsolidationPaused); err != nil {
		t.Fatal(err)
	}
	w := e.worker(consolidate.Deps{}, consolidate.Config{})
	if res := e.drain(w, "p"); !res.Paused || res.Facts != 0 {
		t.Fatalf("drain of a paused bank = %+v", res)
	}
}

func TestMentalModelRefreshAndPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	var facts []fact
	for i, p := range paraphrases(5) {
		facts = append(facts, fact{text: p, at: now.AddDate(0, 0, -i)})
	}
	facts = append(facts, fact{text: "Alice lives in Beijing", at: now.AddDate(0, -1, 0)})
	e.persist("alice", facts...)
	mmID := uuid.New()
	if _, err := e.db.Exec(ctx, `INSERT INTO mental_models (id, bank_id, name, source_query) VALUES ($1, 'alice', 'Preferences', $2)`,
		mmID, "Which sentences does Alice prefer: active or passive voice?"); err != nil {
		t.Fatal(err)
	}
	w := e.worker(consolidate.Deps{}, consolidate.Config{})
	res := e.drain(w, "alice")
	if res.MentalModels != 1 {
		t.Fatalf("drain = %+v", res)
	}
	obs := e.observations("alice")
	var content string
	var basedOn []byte
	if err := e.db.QueryRow(ctx, `SELECT content, based_on::text FROM mental_models WHERE id = $1 AND last_refreshed_at = $2`, mmID, now).Scan(&content, &basedOn); err != nil {
		t.Fatal(err)
	}
	pref := obs[0]
	if !strings.Contains(content, "[obs:"+pref.ID.String()+"]") || !strings.Contains(content, pref.Text) ||
		!strings.HasPrefix(content, "Which sentences does Alice prefer") || !strings.Contains(content, "5 pieces of evidence") {
		t.Fatalf("content = %q", content)
	}
	if !strings.Contains(string(basedOn), pref.ID.String()) {
		t.Errorf("based_on = %s", basedOn)
	}
	if n := e.count(`SELECT count(*) FROM mental_model_history WHERE mental_model_id = $1 AND content = $2`, mmID, content); n != 1 {
		t.Errorf("history rows = %d", n)
	}
	// New facts within the minimum interval do not refresh again…
	e.persist("alice", fact{text: "Alice prefers active sentences over passive voice, always", at: now})
	if res := e.drain(w, "alice"); res.Facts != 1 || res.MentalModels != 0 {
		t.Fatalf("second drain = %+v", res)
	}
	// …but an explicit refresh does.
	if err := w.Refresh(ctx, "alice", mmID.String()); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM mental_model_history WHERE mental_model_id = $1`, mmID); n != 2 {
		t.Errorf("history rows after refresh = %d", n)
	}
	if err := w.Refresh(ctx, "alice", uuid.NewString()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("refresh of a missing model: %v", err)
	}
	if err := w.Refresh(ctx, "other-bank", mmID.String()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("refresh across banks: %v", err)
	}

	dir := t.TempDir()
	paths, err := consolidate.WritePages(ctx, e.st, "alice", dir)
	if err != nil || len(paths) != 1 {
		t.Fatalf("pages %v %v", paths, err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "alice", "preferences.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"---\ntitle: \"Preferences\"\n", "question: \"Which sentences does Alice prefer: active or passive voice?\"\n",
		"refreshed_at: 2026-11-30T12:00:00Z\n", "sources:\n  - obs:" + pref.ID.String() + "\n", "---\n\nWhich sentences", "[obs:" + pref.ID.String() + "]"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
}

func TestMentalModelRefreshThroughRecall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	var facts []fact
	for i, p := range paraphrases(4) {
		facts = append(facts, fact{text: p, at: now.AddDate(0, 0, -i)})
	}
	facts = append(facts, fact{text: "Alice plays the violin in an orchestra", at: now})
	e.persist("alice", facts...)
	mmID := uuid.New()
	if _, err := e.db.Exec(ctx, `INSERT INTO mental_models (id, bank_id, name, source_query) VALUES ($1, 'alice', 'Writing style', $2)`,
		mmID, "Does Alice prefer active or passive voice in sentences?"); err != nil {
		t.Fatal(err)
	}
	rec, err := recall.New(recall.Deps{Store: e.st, Embedder: e.emb}, recall.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w := e.worker(consolidate.Deps{Recaller: rec}, consolidate.Config{})
	if res := e.drain(w, "alice"); res.MentalModels != 1 {
		t.Fatalf("drain = %+v", res)
	}
	pref := e.observations("alice")[0]
	var content string
	if err := e.db.QueryRow(ctx, `SELECT content FROM mental_models WHERE id = $1`, mmID).Scan(&content); err != nil {
		t.Fatal(err)
	}
	first := strings.SplitN(content, "\n", 4)
	if len(first) < 3 || !strings.Contains(first[2], "[obs:"+pref.ID.String()+"]") || !strings.Contains(first[2], "4 pieces of evidence") {
		t.Fatalf("content = %q (want the preference observation first)", content)
	}
}

// A worker stopped mid-job releases its job; the next worker takes it up
// and finishes without doubling anything.
func TestRunStoppedMidJobResumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var facts []fact
	for i, p := range paraphrases(6) {
		facts = append(facts, fact{text: p, at: now.AddDate(0, 0, -i)})
	}
	facts = append(facts, fact{text: "Alice lives in Beijing", at: now.AddDate(-1, 0, 0)}, fact{text: "Alice moved to Shanghai", at: now})
	e.persist("alice", facts...)
	off, err := consolidate.NewOffline(consolidate.OfflineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	adj := &cancelling{inner: off, n: 4, after: true, cancel: cancel}
	w1 := e.worker(consolidate.Deps{Adjudicator: adj}, consolidate.Config{Workers: 1, PollInterval: 10 * time.Millisecond,
		HousekeepingInterval: time.Hour, BatchSize: 3})
	if err := w1.Run(ctx); err != nil {
		t.Fatal(err)
	}
	// The stopped job is released: available again, or retired when
	// housekeeping already enqueued a fresh job for the bank. Either way
	// exactly one job is waiting and none is held.
	if n := e.count(`SELECT count(*) FROM jobs WHERE state = 'available' AND locked_by IS NULL`) +
		100*e.count(`SELECT count(*) FROM jobs WHERE state = 'running'`); n != 1 {
		var dump string
		_ = e.db.QueryRow(context.Background(), `SELECT string_agg(format('%s %s %s %s', state, locked_by, last_error, attempts), '; ') FROM jobs`).Scan(&dump)
		t.Fatalf("released jobs = %d: %s", n, dump)
	}
	pending := e.count(`SELECT count(*) FROM consolidation_queue WHERE bank_id = 'alice'`)
	if pending == 0 || pending == len(facts) {
		t.Fatalf("pending after the stop = %d, want some done and some left", pending)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	w2 := e.worker(consolidate.Deps{}, consolidate.Config{Workers: 2, PollInterval: 10 * time.Millisecond, HousekeepingInterval: time.Hour})
	done := make(chan error, 1)
	go func() { done <- w2.Run(ctx2) }()
	eventually(t, "the job to finish", func() bool { return e.count(`SELECT count(*) FROM jobs WHERE state <> 'done'`) == 0 })
	cancel2()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	obs := valid(e.observations("alice"))
	if len(obs) != 2 || obs[0].Evidence != 6 || obs[0].Proofs != 6 || obs[1].Text != "Alice moved to Shanghai" || obs[1].Evidence != 2 {
		t.Fatalf("observations = %+v", obs)
	}
	if n := e.count(`SELECT count(*) FROM memory_units WHERE fact_type = 'observation'`); n != 2 {
		t.Fatalf("observation rows = %d", n)
	}
}

// blockingAdjudicator wraps the offline rules; its calls block until
// release is closed, and it records how many run at once.
type blockingAdjudicator struct {
	consolidate.Adjudicator
	release         chan struct{}
	entered         chan struct{}
	mu              sync.Mutex
	running, maxRun int
	cancelled       atomic.Bool
}

func (b *blockingAdjudicator) Adjudicate(ctx context.Context, facts []consolidate.FactCandidates) (consolidate.Decision, error) {
	b.mu.Lock()
	b.running++
	b.maxRun = max(b.maxRun, b.running)
	b.mu.Unlock()
	defer func() { b.mu.Lock(); b.running--; b.mu.Unlock() }()
	select {
	case b.entered <- struct{}{}:
	default:
	}
	select {
	case <-b.release:
	case <-ctx.Done():
		b.cancelled.Store(true)
		return consolidate.Decision{}, ctx.Err()
	}
	return b.Adjudicator.Adjudicate(ctx, facts)
}

func (b *blockingAdjudicator) concurrent() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.maxRun
}

// TestLiveDrainKeepsItsJob: a drain that takes longer than the lock
// timeout (a slow LLM) must keep its job. Before heartbeats, housekeeping
// took the job back after LockTimeout and a second worker drained the same
// bank at the same time, paying the LLM twice.
func TestLiveDrainKeepsItsJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.persist("slow", fact{text: "Sam repairs clocks", at: now}, fact{text: "Sam lives by the sea", at: now})
	off, err := consolidate.NewOffline(consolidate.OfflineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	adj := &blockingAdjudicator{Adjudicator: off, release: make(chan struct{}), entered: make(chan struct{}, 1)}
	const lock = 2 * time.Second
	w := e.worker(consolidate.Deps{Adjudicator: adj}, consolidate.Config{Workers: 2, PollInterval: 20 * time.Millisecond,
		HousekeepingInterval: 50 * time.Millisecond, LockTimeout: lock})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	<-adj.entered
	// Three lock timeouts with the drain stuck in its first decision: the
	// other worker goroutine polls all along.
	time.Sleep(3 * lock)
	if n := adj.concurrent(); n != 1 {
		t.Fatalf("%d drains of one bank ran at once after the lock timeout; want 1", n)
	}
	close(adj.release)
	eventually(t, "the bank to drain", func() bool {
		n, err := e.st.BankBacklog(context.Background(), "slow")
		return err == nil && n == 0
	})
}

// TestHousekeepingDeletesFinishedJobs: every drain leaves a finished row
// in jobs; housekeeping deletes those past their retention (done after an
// hour, failed after a week by default) and keeps the rest.
func TestHousekeepingDeletesFinishedJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.persist("r", fact{text: "Rae bakes bread", at: now})
	if _, err := e.db.Exec(ctx, `INSERT INTO jobs (kind, bank_id, state, attempts, finished_at) VALUES
		('consolidate', 'r', 'done', 1, now() - interval '2 hours'),
		('consolidate', 'r', 'failed', 10, now() - interval '2 hours'),
		('consolidate', 'r', 'failed', 10, now() - interval '8 days')`); err != nil {
		t.Fatal(err)
	}
	w := e.worker(consolidate.Deps{}, consolidate.Config{PollInterval: 20 * time.Millisecond, HousekeepingInterval: 20 * time.Millisecond})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	defer func() {
		cancel()
		<-done
	}()
	eventually(t, "old finished jobs to be deleted", func() bool {
		return e.count(`SELECT count(*) FROM jobs WHERE state = 'done' AND finished_at < now() - interval '1 hour'`) == 0 &&
			e.count(`SELECT count(*) FROM jobs WHERE state = 'failed' AND finished_at < now() - interval '7 days'`) == 0
	})
	if n := e.count(`SELECT count(*) FROM jobs WHERE state = 'failed'`); n != 1 {
		t.Errorf("%d failed jobs left, want the one within its week", n)
	}
}

// jobOutcomes reads memstream_consolidation_jobs_total for one outcome.
func jobOutcomes(t *testing.T, reg *prometheus.Registry, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "memstream_consolidation_jobs_total" {
			continue
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestDrainYieldsAtTimeBound: a job's drain stops after the batch that
// ends past consolidation.max_drain and the bank is enqueued again, so one
// bank's backlog cannot hold a worker indefinitely. With a bound of 1 ns
// every job does exactly one batch.
func TestDrainYieldsAtTimeBound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.persist("long", fact{text: "Lee sails", at: now}, fact{text: "Lee paints", at: now}, fact{text: "Lee cooks", at: now},
		fact{text: "Lee runs", at: now}, fact{text: "Lee sings", at: now})
	reg := prometheus.NewPedanticRegistry()
	w := e.worker(consolidate.Deps{Registerer: reg}, consolidate.Config{Workers: 1, BatchSize: 2, MaxDrain: time.Nanosecond,
		PollInterval: 20 * time.Millisecond, HousekeepingInterval: time.Hour})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	defer func() {
		cancel()
		<-done
	}()
	eventually(t, "the bank to drain", func() bool {
		n, err := e.st.BankBacklog(ctx, "long")
		return err == nil && n == 0
	})
	if got := jobOutcomes(t, reg, "yielded"); got < 2 {
		t.Errorf("%v drains yielded at the time bound; want at least 2 (5 facts, 2 per batch)", got)
	}
	if n := e.count(`SELECT count(*) FROM jobs WHERE bank_id = 'long'`); n < 3 {
		t.Errorf("%d jobs for the bank; want one per batch", n)
	}
}

// TestLostJobStopsDrain: when a drain's job is taken back (its heartbeat
// did not reach the database in time and housekeeping released it), the
// drain stops instead of working on beside the worker that claims it next.
func TestLostJobStopsDrain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.persist("lost", fact{text: "Lou knits", at: now})
	off, err := consolidate.NewOffline(consolidate.OfflineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	adj := &blockingAdjudicator{Adjudicator: off, release: make(chan struct{}), entered: make(chan struct{}, 1)}
	reg := prometheus.NewPedanticRegistry()
	w := e.worker(consolidate.Deps{Adjudicator: adj, Registerer: reg}, consolidate.Config{Workers: 1,
		PollInterval: 20 * time.Millisecond, HousekeepingInterval: time.Hour, LockTimeout: 400 * time.Millisecond})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	defer func() {
		cancel()
		<-done
	}()
	<-adj.entered
	// What a reclaim followed by another worker's claim leaves behind.
	if _, err := e.db.Exec(ctx, `UPDATE jobs SET locked_by = 'other-worker', locked_at = now() WHERE state = 'running'`); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the drain to stop", adj.cancelled.Load)
	eventually(t, "the lost job to be counted", func() bool { return jobOutcomes(t, reg, "lost") == 1 })
	close(adj.release)
}

// heldAdjudicator creates one observation per fact, holding each call
// until the test has seen as many calls in flight as it expects.
type heldAdjudicator struct {
	per, conc      int
	inflight, peak atomic.Int32
	calls          atomic.Int32
	proceed        chan struct{}
	wrongClass     atomic.Int32
}

func (b *heldAdjudicator) BatchSize() int   { return b.per }
func (b *heldAdjudicator) Concurrency() int { return b.conc }

func (b *heldAdjudicator) Adjudicate(ctx context.Context, facts []consolidate.FactCandidates) (consolidate.Decision, error) {
	if priority.Of(ctx) != priority.Background {
		b.wrongClass.Add(1)
	}
	b.calls.Add(1)
	n := b.inflight.Add(1)
	defer b.inflight.Add(-1)
	for {
		p := b.peak.Load()
		if n <= p || b.peak.CompareAndSwap(p, n) {
			break
		}
	}
	select {
	case <-b.proceed:
	case <-ctx.Done():
		return consolidate.Decision{}, ctx.Err()
	}
	var d consolidate.Decision
	for _, f := range facts {
		d.Creates = append(d.Creates, consolidate.Create{Text: "noted: " + f.Fact.Text, SourceFactIDs: []uuid.UUID{f.Fact.ID}, Reason: "new"})
	}
	return d, nil
}

// An LLM adjudicator's calls run concurrently, up to its bound, in the
// background class, and the outcome equals a one-call-at-a-time drain.
func TestAdjudicationCallsRunConcurrently(t *testing.T) {
	t.Parallel()
	topics := []string{"violin lessons Tuesdays", "broken bicycle chain", "quarterly tax forms", "sourdough starter bubbling",
		"flight to Lisbon", "dentist appointment Friday", "chess club rankings", "leaking kitchen tap",
		"parking permit renewal", "vegetable garden weeds", "laptop charger fried", "saxophone reeds cracked"}
	run := func(conc int) ([]string, *heldAdjudicator) {
		e := newEnv(t)
		var facts []fact
		for i, tp := range topics {
			facts = append(facts, fact{text: tp, at: now.Add(time.Duration(i) * time.Minute)})
		}
		e.persist("dana", facts...)
		adj := &heldAdjudicator{per: 2, conc: conc, proceed: make(chan struct{})}
		w := e.worker(consolidate.Deps{Adjudicator: adj}, consolidate.Config{})
		done := make(chan consolidate.Result)
		go func() { done <- e.drain(w, "dana") }()
		// A guard against a hang if the calls were serialised: the
		// assertion on the peak below then fails.
		guard := time.After(time.Minute)
	wait:
		for adj.inflight.Load() < int32(conc) {
			select {
			case <-guard:
				break wait
			default:
				runtime.Gosched()
			}
		}
		close(adj.proceed)
		<-done
		var texts []string
		for _, o := range valid(e.observations("dana")) {
			texts = append(texts, o.ID.String()+" "+o.Text)
		}
		slices.Sort(texts)
		return texts, adj
	}
	serial, one := run(1)
	parallel, three := run(3)
	if one.peak.Load() != 1 || three.peak.Load() != 3 {
		t.Fatalf("peak calls in flight: %d with a bound of 1, %d with a bound of 3", one.peak.Load(), three.peak.Load())
	}
	if one.calls.Load() != 6 || three.calls.Load() != 6 {
		t.Fatalf("calls: %d and %d, want 6 of two facts each", one.calls.Load(), three.calls.Load())
	}
	if one.wrongClass.Load()+three.wrongClass.Load() != 0 {
		t.Fatal("an adjudication call ran outside the background class")
	}
	if len(serial) != len(topics) || !slices.Equal(serial, parallel) {
		t.Fatalf("observations differ:\nserial   %v\nparallel %v", serial, parallel)
	}
}

// TestStopReleasesJob: Stop ends Run with a drain in hand; the job is
// released, so another worker drains the bank at once.
func TestStopReleasesJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.persist("halt", fact{text: "Ida grows tomatoes", at: now})
	off, err := consolidate.NewOffline(consolidate.OfflineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	adj := &blockingAdjudicator{Adjudicator: off, release: make(chan struct{}), entered: make(chan struct{}, 1)}
	cfg := consolidate.Config{Workers: 1, PollInterval: 20 * time.Millisecond, HousekeepingInterval: 50 * time.Millisecond, LockTimeout: time.Hour}
	logs := captureLogs(t, e)
	w := e.worker(consolidate.Deps{Adjudicator: adj, Logger: logs}, cfg)
	lifetimetest.CheckStop(t, w, 30*time.Second, func() { <-adj.entered })
	if !adj.cancelled.Load() {
		t.Fatal("the drain in hand was not cancelled")
	}
	// The lock timeout is an hour: only a released job drains now.
	w2 := e.worker(consolidate.Deps{Adjudicator: off, Logger: logs.With("worker", "second")}, cfg)
	ran := make(chan error, 1)
	go func() { ran <- w2.Run(context.Background()) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = w2.Stop(ctx)
		<-ran
	}()
	eventually(t, "the bank to drain", func() bool {
		n, err := e.st.BankBacklog(context.Background(), "halt")
		return err == nil && n == 0
	})
}

// captureLogs returns a debug logger whose lines, with the bank's job rows,
// are printed only when the test fails: a flaky shutdown test is then
// diagnosable from the CI log alone.
func captureLogs(t *testing.T, e *env) *slog.Logger {
	var mu sync.Mutex
	var buf bytes.Buffer
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		rows, err := e.db.Query(context.Background(), `SELECT id, bank_id, state, attempts, max_attempts, run_at, coalesce(locked_by, ''), coalesce(last_error, '') FROM jobs ORDER BY id`)
		if err == nil {
			for rows.Next() {
				var id int64
				var bank, state, by, last string
				var att, maxAtt int
				var runAt time.Time
				if rows.Scan(&id, &bank, &state, &att, &maxAtt, &runAt, &by, &last) == nil {
					t.Logf("job %d bank %s state %s attempts %d/%d run_at %s locked_by %q last_error %q", id, bank, state, att, maxAtt, runAt.Format(time.RFC3339Nano), by, last)
				}
			}
			rows.Close()
		}
		mu.Lock()
		defer mu.Unlock()
		t.Logf("worker logs:\n%s", buf.String())
	})
	return slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
