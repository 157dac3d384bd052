package consolidate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memstream/memstream/internal/wait"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/memstream/memstream/extract"
	"github.com/memstream/memstream/internal/lifetime"
	"github.com/memstream/memstream/llmtrace"
	"github.com/memstream/memstream/priority"
	"github.com/memstream/memstream/simscale"
	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/text"
)

// Embedder turns texts into vectors of the store's dimension. Facts and
// observation texts are documents: they are stored and compared with each
// other. A mental model's source question is a query.
type Embedder interface {
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
	EmbedQueries(ctx context.Context, texts []string) ([][]float32, error)
}

// Deps are the Worker's collaborators.
type Deps struct {
	Store    *store.Store
	Embedder Embedder
	// Adjudicator decides; nil means the offline rules with defaults.
	Adjudicator Adjudicator
	// Recaller ranks observations for mental models; nil means a plain
	// similarity query over the bank's observations.
	Recaller ObservationRecaller
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Registerer receives the worker's metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Clock is the time source for consolidated_at, history, trends and
	// the mental-model interval; nil means time.Now.
	Clock func() time.Time
	// Progress, when set, is called after each batch of DrainBank with
	// the running totals (the consolidate command prints it).
	Progress func(bankID string, r Result)
	// Scale is the embedder's similarity scale (simscale.Load). The zero
	// value means "measure it": the worker embeds the probe set once,
	// before its first drain.
	Scale simscale.Scale
}

// Config configures the Worker (config section consolidation).
type Config struct {
	// Workers is how many jobs run at once (consolidation.workers).
	Workers int
	// BatchSize is how many facts are read, decided and applied per round,
	// in one candidate statement and one transaction
	// (consolidation.batch_size).
	BatchSize int
	// PollInterval is the wait when no job is due (consolidation.poll_interval).
	PollInterval time.Duration
	// RatePerSecond caps facts adjudicated per second across the worker's
	// goroutines; 0 is unlimited (consolidation.rate_per_second).
	RatePerSecond float64
	// MentalModelMinInterval is the least time between two refreshes of
	// one mental model after consolidation (consolidation.mental_model_min_interval).
	MentalModelMinInterval time.Duration
	// MentalModelSchedule refreshes every mental model this often even
	// without new facts (trends and recency change with time).
	MentalModelSchedule time.Duration
	// HousekeepingInterval is how often stale jobs are reclaimed, the
	// backlog gauges updated and banks with a backlog but no job
	// re-enqueued.
	HousekeepingInterval time.Duration
	// LockTimeout is how long a running job may go without a heartbeat
	// before it is presumed crashed and made available again. A drain
	// heartbeats every quarter of it.
	LockTimeout time.Duration
	// MaxDrain bounds one job's drain (consolidation.max_drain): past it
	// the drain stops after its current batch and the bank is enqueued
	// again, behind the other banks' jobs.
	MaxDrain time.Duration
	// JobRetention and FailedJobRetention are how long finished jobs are
	// kept (consolidation.job_retention, consolidation.failed_job_retention).
	JobRetention, FailedJobRetention time.Duration
	// RetryBase and RetryMax bound the exponential retry backoff.
	RetryBase, RetryMax time.Duration
	// Candidates is how many fused candidate observations a fact gets.
	Candidates int
	// MergeThreshold is how close two observations of one scope must be
	// to be merged, as the fraction of the way from a typical restatement
	// to identity on the embedder's scale (simscale.Scale.NearDuplicate).
	MergeThreshold float64
	// LinkLevel is the similarity level (simscale) from which a fact gets
	// a semantic link to a neighbour: twice a typical restatement's.
	LinkLevel float64
	// WorkerID names this worker in jobs.locked_by.
	WorkerID string
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Workers == 0 {
		c.Workers = 2
	}
	if c.BatchSize == 0 {
		c.BatchSize = 256
	}
	if c.PollInterval == 0 {
		c.PollInterval = 500 * time.Millisecond
	}
	if c.MentalModelMinInterval == 0 {
		c.MentalModelMinInterval = 30 * time.Second
	}
	if c.MentalModelSchedule == 0 {
		c.MentalModelSchedule = 10 * time.Minute
	}
	if c.HousekeepingInterval == 0 {
		c.HousekeepingInterval = 5 * time.Second
	}
	if c.LockTimeout == 0 {
		c.LockTimeout = 5 * time.Minute
	}
	if c.MaxDrain == 0 {
		c.MaxDrain = 2 * time.Minute
	}
	if c.JobRetention == 0 {
		c.JobRetention = time.Hour
	}
	if c.FailedJobRetention == 0 {
		c.FailedJobRetention = 7 * 24 * time.Hour
	}
	if c.RetryBase == 0 {
		c.RetryBase = time.Second
	}
	if c.RetryMax == 0 {
		c.RetryMax = 10 * time.Minute
	}
	if c.Candidates == 0 {
		c.Candidates = 10
	}
	if c.MergeThreshold == 0 {
		c.MergeThreshold = 0.95
	}
	if c.LinkLevel == 0 {
		c.LinkLevel = 2
	}
	if c.WorkerID == "" {
		host, _ := os.Hostname()
		c.WorkerID = host + "-" + strconv.Itoa(os.Getpid())
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Workers < 1:
		return fmt.Errorf("consolidation.workers: %d, must be at least 1", c.Workers)
	case c.BatchSize < 1:
		return fmt.Errorf("consolidation.batch_size: %d, must be at least 1", c.BatchSize)
	case c.PollInterval <= 0:
		return fmt.Errorf("consolidation.poll_interval: %s, must be positive", c.PollInterval)
	case c.RatePerSecond < 0:
		return fmt.Errorf("consolidation.rate_per_second: %v, must not be negative (0 means unlimited)", c.RatePerSecond)
	case c.MentalModelMinInterval < 0:
		return fmt.Errorf("consolidation.mental_model_min_interval: %s, must not be negative", c.MentalModelMinInterval)
	case c.MentalModelSchedule <= 0:
		return fmt.Errorf("consolidate config MentalModelSchedule: %s, must be positive", c.MentalModelSchedule)
	case c.HousekeepingInterval <= 0:
		return fmt.Errorf("consolidate config HousekeepingInterval: %s, must be positive", c.HousekeepingInterval)
	case c.LockTimeout <= 0:
		return fmt.Errorf("consolidate config LockTimeout: %s, must be positive", c.LockTimeout)
	case c.MaxDrain <= 0:
		return fmt.Errorf("consolidation.max_drain: %s, must be positive", c.MaxDrain)
	case c.JobRetention <= 0:
		return fmt.Errorf("consolidation.job_retention: %s, must be positive", c.JobRetention)
	case c.FailedJobRetention <= 0:
		return fmt.Errorf("consolidation.failed_job_retention: %s, must be positive", c.FailedJobRetention)
	case c.RetryBase <= 0 || c.RetryMax < c.RetryBase:
		return fmt.Errorf("consolidate config RetryBase/RetryMax: %s/%s, need 0 < base <= max", c.RetryBase, c.RetryMax)
	case c.Candidates < 1:
		return fmt.Errorf("consolidate config Candidates: %d, must be at least 1", c.Candidates)
	case c.MergeThreshold <= 0 || c.MergeThreshold > 1:
		return fmt.Errorf("consolidate config MergeThreshold: %v not in (0, 1]", c.MergeThreshold)
	case c.LinkLevel <= 0:
		return fmt.Errorf("consolidate config LinkLevel: %v, must be positive", c.LinkLevel)
	}
	return nil
}

// Result counts what a drain did.
type Result struct {
	// Facts is how many facts were consolidated.
	Facts       int `json:"facts"`
	Created     int `json:"created"`
	Updated     int `json:"updated"`
	Invalidated int `json:"invalidated"`
	Merged      int `json:"merged"`
	// Evidence is how many evidence rows were added.
	Evidence int `json:"evidence"`
	// MentalModels is how many mental models were refreshed afterwards.
	MentalModels int `json:"mental_models"`
	// Paused is set when the drain stopped because the bank is paused.
	Paused bool `json:"paused"`
	// More is set when the drain stopped at its time bound with facts
	// left; the bank was enqueued again.
	More bool `json:"more,omitempty"`
}

func (r *Result) add(o store.ApplyOutcome, facts int) {
	if !o.Applied {
		return
	}
	r.Facts += facts
	r.Created += o.Created
	r.Updated += o.Updated
	r.Invalidated += o.Invalidated
	r.Merged += o.Merged
	r.Evidence += o.Evidence
}

// Worker consolidates facts into observations.
type Worker struct {
	st      *store.Store
	emb     Embedder
	adj     Adjudicator
	rec     ObservationRecaller
	log     *slog.Logger
	now     func() time.Time
	onBatch func(string, Result)
	cfg     Config
	limiter *rate.Limiter
	m       metrics

	scaleMu sync.Mutex
	scale   simscale.Scale

	life lifetime.Stopper
}

type metrics struct {
	backlog, oldest prometheus.Gauge
	facts           *prometheus.CounterVec
	changes         *prometheus.CounterVec
	jobs            *prometheus.CounterVec
	batchSeconds    prometheus.Histogram
	phaseSeconds    *prometheus.HistogramVec
	refreshes       *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (metrics, error) {
	m := metrics{
		backlog: prometheus.NewGauge(prometheus.GaugeOpts{Name: "memstream_consolidation_backlog_facts",
			Help: "Facts not yet consolidated, across banks."}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{Name: "memstream_consolidation_oldest_unconsolidated_seconds",
			Help: "Age of the oldest unconsolidated fact (0 when there is none)."}),
		facts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "memstream_consolidation_facts_total",
			Help: "Facts consolidated, by outcome (applied, skipped: another worker had applied them)."}, []string{"outcome"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "memstream_consolidation_observation_changes_total",
			Help: "Observation changes written, by action."}, []string{"action"}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "memstream_consolidation_jobs_total",
			Help: "Consolidation jobs finished, by outcome (done, yielded: stopped at consolidation.max_drain and enqueued again, retry, failed, released, lost: its lock was taken back)."}, []string{"outcome"}),
		batchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "memstream_consolidation_batch_seconds",
			Help: "Time to adjudicate and apply one batch of facts.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}),
		phaseSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "memstream_consolidation_phase_seconds",
			Help:    "Time per phase of a batch: pending (pause check, queue read), link (semantic links), prep (embeddings, queries), candidates, adjudicate, apply, and trends per drain.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, []string{"phase"}),
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "memstream_consolidation_mental_model_refreshes_total",
			Help: "Mental model refreshes, by outcome."}, []string{"outcome"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.backlog, m.oldest, m.facts, m.changes, m.jobs, m.batchSeconds, m.phaseSeconds, m.refreshes} {
		if err := reg.Register(c); err != nil {
			return m, fmt.Errorf("consolidate metrics: %w", err)
		}
	}
	return m, nil
}

// New returns a Worker.
func New(deps Deps, cfg Config) (*Worker, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if deps.Store == nil {
		return nil, errors.New("consolidate: Deps.Store is nil")
	}
	if deps.Embedder == nil {
		return nil, errors.New("consolidate: Deps.Embedder is nil")
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Clock == nil {
		deps.Clock = time.Now
	}
	if deps.Adjudicator == nil {
		off, err := NewOffline(OfflineConfig{})
		if err != nil {
			return nil, err
		}
		deps.Adjudicator = off
	}
	if deps.Adjudicator.BatchSize() < 1 {
		return nil, fmt.Errorf("consolidate: adjudicator batch size %d", deps.Adjudicator.BatchSize())
	}
	m, err := newMetrics(deps.Registerer)
	if err != nil {
		return nil, err
	}
	lim := rate.NewLimiter(rate.Inf, 1)
	if cfg.RatePerSecond > 0 {
		// The burst is one second's worth (at least one batch of the
		// adjudicator), so WaitN never asks for more than the bucket holds.
		burst := max(int(math.Ceil(cfg.RatePerSecond)), deps.Adjudicator.BatchSize())
		lim = rate.NewLimiter(rate.Limit(cfg.RatePerSecond), burst)
	}
	return &Worker{st: deps.Store, emb: deps.Embedder, adj: deps.Adjudicator, rec: deps.Recaller, log: deps.Logger, now: deps.Clock,
		onBatch: deps.Progress, cfg: cfg, limiter: lim, m: m, scale: deps.Scale}, nil
}

// Run claims and drains consolidation jobs until ctx ends or Stop is
// called, with cfg.Workers goroutines, plus housekeeping (stale-lock
// reclaim, backlog metrics, lost-job recovery) and the scheduled
// mental-model refresh. It returns nil when stopped.
func (w *Worker) Run(ctx context.Context) error {
	ctx, end, ok := w.life.Begin(ctx)
	defer end()
	if !ok {
		return nil
	}
	// Everything the worker does waits behind live work for the LLM and
	// the local model (package priority).
	ctx = priority.WithClass(ctx, priority.Background)
	var wg sync.WaitGroup
	for i := range w.cfg.Workers {
		id := fmt.Sprintf("%s/%d", w.cfg.WorkerID, i)
		wg.Go(func() { w.loop(ctx, id) })
	}
	wg.Go(func() { w.housekeeping(ctx) })
	wg.Go(func() { w.schedule(ctx) })
	wg.Wait()
	return nil
}

// Stop ends Run: the jobs in hand are settled (released for the next
// worker) and Stop returns once Run has, or when ctx ends.
func (w *Worker) Stop(ctx context.Context) error { return w.life.Stop(ctx) }

func (w *Worker) loop(ctx context.Context, id string) {
	for ctx.Err() == nil {
		job, err := w.st.ClaimJob(ctx, store.JobConsolidate, id)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) && ctx.Err() == nil {
				w.log.Warn("claim consolidation job", slog.Any("error", err))
			}
			if !wait.Sleep(ctx, w.cfg.PollInterval) {
				return
			}
			continue
		}
		w.runJob(ctx, id, job)
	}
}

func (w *Worker) runJob(ctx context.Context, id string, job store.Job) {
	log := w.log.With(slog.Int64("job_id", job.ID), slog.String("bank_id", job.BankID), slog.Int("attempt", job.Attempts))
	drainCtx, lost := w.heartbeat(ctx, log, job, id)
	res, err := w.drain(drainCtx, job.BankID, time.Now().Add(w.cfg.MaxDrain))
	// The job row must be settled even when ctx is cancelled (shutdown):
	// a released job is picked up at once by the next worker instead of
	// waiting for the lock timeout.
	settle := context.WithoutCancel(ctx)
	switch {
	case lost():
		// Taken back (no heartbeat reached the database for LockTimeout):
		// another worker may be draining the bank now; the row is not ours.
		w.m.jobs.WithLabelValues("lost").Inc()
		log.Warn("consolidation job lost its lock; drain stopped")
	case ctx.Err() != nil:
		if _, ferr := w.st.FailJob(settle, job.ID, id, 0, errors.New("worker shut down")); ferr != nil {
			log.Warn("release job on shutdown", slog.Any("error", ferr))
		}
		w.m.jobs.WithLabelValues("released").Inc()
	case err != nil:
		backoff := w.backoff(job.Attempts)
		state, ferr := w.st.FailJob(settle, job.ID, id, backoff, err)
		if ferr != nil {
			log.Warn("record job failure", slog.Any("error", ferr))
		}
		outcome := "retry"
		if state == "failed" {
			outcome = "failed"
		}
		w.m.jobs.WithLabelValues(outcome).Inc()
		log.Warn("consolidation job failed", slog.Any("error", err), slog.Duration("retry_in", backoff), slog.String("state", state))
	default:
		if cerr := w.st.CompleteJob(settle, job.ID, id); cerr != nil {
			log.Warn("complete job", slog.Any("error", cerr))
		}
		if res.More {
			// Behind the other banks' jobs (claims go by run_at).
			if eerr := w.st.EnqueueConsolidation(settle, job.BankID); eerr != nil {
				log.Warn("re-enqueue after the drain's time bound", slog.Any("error", eerr))
			}
			w.m.jobs.WithLabelValues("yielded").Inc()
			log.Info("consolidation drain reached its time bound; bank enqueued again", slog.Int("facts", res.Facts),
				slog.Duration("max_drain", w.cfg.MaxDrain))
			return
		}
		w.m.jobs.WithLabelValues("done").Inc()
		log.Debug("consolidation job done", slog.Int("facts", res.Facts), slog.Int("created", res.Created),
			slog.Int("updated", res.Updated), slog.Bool("paused", res.Paused))
	}
}

// heartbeat keeps job's lock fresh while it is drained, every quarter of
// LockTimeout, so that housekeeping on any worker never takes back a live
// drain. The returned context ends when ctx does or when the job turns out
// to be held no longer (lost reports that): draining on would double the
// work of the worker that took the job over. The heartbeat stops when the
// returned context's job is settled: runJob calls lost after the drain.
func (w *Worker) heartbeat(ctx context.Context, log *slog.Logger, job store.Job, id string) (context.Context, func() bool) {
	hctx, cancel := context.WithCancel(ctx)
	var gone atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(w.cfg.LockTimeout / 4)
		defer t.Stop()
		for {
			select {
			case <-hctx.Done():
				return
			case <-t.C:
			}
			held, err := w.st.HeartbeatJob(hctx, job.ID, id)
			if err != nil {
				if hctx.Err() == nil {
					log.Warn("consolidation job heartbeat", slog.Any("error", err))
				}
				continue
			}
			if !held {
				gone.Store(true)
				cancel()
				return
			}
		}
	}()
	return hctx, func() bool {
		cancel()
		<-done
		return gone.Load()
	}
}

// backoff doubles from RetryBase per attempt, capped at RetryMax.
func (w *Worker) backoff(attempts int) time.Duration {
	d := w.cfg.RetryBase
	for i := 1; i < attempts && d < w.cfg.RetryMax; i++ {
		d *= 2
	}
	return min(d, w.cfg.RetryMax)
}

func (w *Worker) housekeeping(ctx context.Context) {
	for {
		if _, err := w.st.DeleteFinishedJobs(ctx, w.cfg.JobRetention, w.cfg.FailedJobRetention); err != nil && ctx.Err() == nil {
			w.log.Warn("delete finished consolidation jobs", slog.Any("error", err))
		}
		if n, err := w.st.ReclaimStaleJobs(ctx, w.cfg.LockTimeout); err != nil && ctx.Err() == nil {
			w.log.Warn("reclaim stale consolidation jobs", slog.Any("error", err))
		} else if n > 0 {
			w.log.Info("reclaimed consolidation jobs of lost workers", slog.Int("jobs", n))
		}
		// A bank whose job ran out of attempts still has facts waiting;
		// a new job (collapsed by its unique key) gives it another round.
		if banks, err := w.st.BanksWithBacklog(ctx); err == nil && len(banks) > 0 {
			if err := w.st.EnqueueConsolidation(ctx, banks...); err != nil && ctx.Err() == nil {
				w.log.Warn("re-enqueue consolidation", slog.Any("error", err))
			}
		}
		if err := w.UpdateMetrics(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("consolidation backlog metrics", slog.Any("error", err))
		}
		// Ingest records mention counts as deltas (no lock on hot entity
		// rows); fold them in here.
		if _, err := w.st.FoldEntityMentions(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("fold entity mention counts", slog.Any("error", err))
		}
		// Entities ensured for a batch that was then dead-lettered are
		// mentioned by no fact; they go once no batch can be in flight.
		if n, err := w.st.DeleteOrphanEntities(ctx, orphanEntityAge); err != nil && ctx.Err() == nil {
			w.log.Warn("delete orphan entities", slog.Any("error", err))
		} else if n > 0 {
			w.log.Info("deleted orphan entities", slog.Int64("entities", n))
		}
		if !wait.Sleep(ctx, w.cfg.HousekeepingInterval) {
			return
		}
	}
}

// phase records the time since t0 under a phase of the batch and returns
// now, the start of the next phase.
func (w *Worker) phase(name string, t0 time.Time) time.Time {
	now := time.Now()
	w.m.phaseSeconds.WithLabelValues(name).Observe(now.Sub(t0).Seconds())
	return now
}

// orphanEntityAge is how old an entity no fact mentions must be before
// housekeeping deletes it: far longer than any ingest batch takes.
const orphanEntityAge = 10 * time.Minute

// UpdateMetrics refreshes the backlog gauges from the database.
func (w *Worker) UpdateMetrics(ctx context.Context) error {
	b, err := w.st.ConsolidationBacklog(ctx)
	if err != nil {
		return err
	}
	w.m.backlog.Set(float64(b.Facts))
	w.m.oldest.Set(b.OldestAge.Seconds())
	return nil
}

func (w *Worker) schedule(ctx context.Context) {
	for wait.Sleep(ctx, w.cfg.MentalModelSchedule) {
		banks, err := w.st.BanksWithMentalModels(ctx)
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("scheduled mental model refresh", slog.Any("error", err))
			}
			continue
		}
		for _, b := range banks {
			trend, err := w.bankTrend(ctx, b)
			if err == nil {
				_, err = w.st.RefreshTrends(ctx, b, trend)
			}
			if err != nil && ctx.Err() == nil {
				w.log.Warn("scheduled trend refresh", slog.String("bank_id", b), slog.Any("error", err))
			}
			if _, err := w.refreshBankModels(ctx, b, true); err != nil && ctx.Err() == nil {
				w.log.Warn("scheduled mental model refresh", slog.String("bank_id", b), slog.Any("error", err))
			}
		}
	}
}

// similarityScale returns the embedder's scale, measuring it on the probe
// set the first time when Deps gave none.
func (w *Worker) similarityScale(ctx context.Context) (simscale.Scale, error) {
	w.scaleMu.Lock()
	defer w.scaleMu.Unlock()
	if !w.scale.IsZero() {
		return w.scale, nil
	}
	s, err := simscale.Measure(ctx, w.emb, "consolidation worker")
	if err != nil {
		return simscale.Scale{}, err
	}
	w.scale = s
	return s, nil
}

// bankTrend labels trends on the bank's event clock (its latest event
// time), not the wall clock: a backfill of last year's logs then shows
// which topics were new, growing or fading at the time, instead of
// everything STALE. A clock ahead of the wall clock (future-dated events)
// is held at the wall clock, and an empty bank uses the wall clock.
func (w *Worker) bankTrend(ctx context.Context, bankID string) (func([]time.Time) string, error) {
	clock, err := w.st.BankClock(ctx, bankID)
	if err != nil {
		return nil, err
	}
	if now := w.now(); clock.IsZero() || clock.After(now) {
		clock = now
	}
	return func(ev []time.Time) string { return Trend(ev, clock) }, nil
}

// DrainBank consolidates every pending fact of a bank, batch by batch,
// honouring the bank's pause (checked before each batch) and the rate
// limit, then refreshes the bank's trends and, at most once per
// MentalModelMinInterval, its mental models. It is what a job runs, and
// what `memstream consolidate --bank` runs on demand.
func (w *Worker) DrainBank(ctx context.Context, bankID string) (Result, error) {
	return w.drain(ctx, bankID, time.Time{})
}

// drain is DrainBank that, with a non-zero until, stops after the first
// batch that ends past it, with Result.More set.
func (w *Worker) drain(ctx context.Context, bankID string, until time.Time) (Result, error) {
	ctx = priority.WithClass(ctx, priority.Background)
	var res Result
	if _, err := w.st.FoldEntityMentions(ctx); err != nil {
		return res, err
	}
	for {
		t0 := time.Now()
		paused, err := w.st.ConsolidationPaused(ctx, bankID)
		if err != nil {
			return res, err
		}
		if paused {
			res.Paused = true
			break
		}
		facts, err := w.st.PendingFacts(ctx, bankID, w.cfg.BatchSize)
		if err != nil {
			return res, err
		}
		t0 = w.phase("pending", t0)
		if len(facts) == 0 {
			break
		}
		// Semantic links are made here rather than at ingest: one HNSW
		// probe per fact would dominate the persist transaction. The insert
		// is idempotent, so a crashed round just redoes it.
		ids := make([]uuid.UUID, len(facts))
		for i, f := range facts {
			ids[i] = f.ID
		}
		scale, err := w.similarityScale(ctx)
		if err != nil {
			return res, err
		}
		if _, err := w.st.LinkSemantic(ctx, ids, scale.Cosine(w.cfg.LinkLevel)); err != nil {
			return res, err
		}
		trend, err := w.bankTrend(ctx, bankID)
		if err != nil {
			return res, err
		}
		w.phase("link", t0)
		out, err := w.consolidate(ctx, bankID, facts, trend, scale)
		if err != nil {
			return res, err
		}
		res.add(out, len(facts))
		if w.onBatch != nil {
			w.onBatch(bankID, res)
		}
		if !until.IsZero() && time.Now().After(until) {
			res.More = true
			break
		}
	}
	t1 := time.Now()
	trend, err := w.bankTrend(ctx, bankID)
	if err != nil {
		return res, err
	}
	if _, err := w.st.RefreshTrends(ctx, bankID, trend); err != nil {
		return res, err
	}
	t1 = w.phase("trends", t1)
	if res.Facts > 0 {
		n, err := w.refreshBankModels(ctx, bankID, false)
		res.MentalModels = n
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// candidateSlack is how many candidates past the limit each ranking
// reads, so that a ranking keeps its length when observations it held are
// invalidated or merged earlier in the same batch.
const candidateSlack = 4

// consolidate decides a batch of facts and applies the decisions in one
// transaction. The candidates of every fact are read in one statement; the
// adjudicator then takes the facts in groups of its batch size, in order,
// each group seeing what the groups before it decided (the view).
func (w *Worker) consolidate(ctx context.Context, bankID string, facts []store.PendingFact, trend func([]time.Time) string,
	scale simscale.Scale) (store.ApplyOutcome, error) {
	// The adjudication calls of one batch are one run of the bank's LLM trace.
	ctx = llmtrace.Start(ctx, bankID, "consolidation")
	start := time.Now()
	now := w.now()
	ids := make([]uuid.UUID, len(facts))
	var missing []int
	for i := range facts {
		f := &facts[i]
		ids[i] = f.ID
		f.Tags = normTags(f.Tags)
		if f.State == "valid" && len(f.Embedding) == 0 {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		texts := make([]string, len(missing))
		for j, i := range missing {
			texts[j] = extract.EmbeddingTextOf(facts[i].ReplyTo, facts[i].Text)
		}
		vecs, err := w.emb.EmbedDocuments(ctx, texts)
		if err != nil {
			return store.ApplyOutcome{}, fmt.Errorf("embed %d facts of bank %s: %w", len(texts), bankID, err)
		}
		for j, i := range missing {
			facts[i].Embedding = vecs[j]
		}
	}
	// An invalidated fact supports nothing; it only leaves the backlog.
	var qs []store.CandidateQuery
	var slots []string
	qi := make([]int, len(facts))
	for i, f := range facts {
		qi[i] = -1
		if f.State != "valid" {
			continue
		}
		q := store.CandidateQuery{BankID: bankID, Tags: f.Tags, Embedding: f.Embedding, Terms: text.QueryTerms(f.Text),
			EntityIDs: f.EntityIDs, Limit: w.cfg.Candidates}
		if s, ok := parseSlot(f.Text); ok {
			q.Slot = s.key()
		}
		qi[i] = len(qs)
		qs = append(qs, q)
		slots = append(slots, q.Slot)
	}
	t0 := w.phase("prep", start)
	lists, err := w.st.BatchObservationCandidates(ctx, bankID, qs, w.cfg.Candidates+candidateSlack)
	if err != nil {
		return store.ApplyOutcome{}, err
	}
	t0 = w.phase("candidates", t0)
	merge := scale.NearDuplicate(w.cfg.MergeThreshold)
	byID := make(map[uuid.UUID]store.PendingFact, len(facts))
	for _, f := range facts {
		byID[f.ID] = f
	}
	var valid []int
	for i := range facts {
		if qi[i] >= 0 {
			valid = append(valid, i)
		}
	}
	// One chain of calls sees each earlier call's decisions (its view);
	// independent chains run at once, and their edits are applied in
	// chain order, so the outcome does not depend on which call answers
	// first.
	chains := [][]int{valid}
	if conc := w.adjudicateConcurrency(); conc > 1 {
		chains = independentChains(facts, valid, qi, slots, lists, scale, w.adj.BatchSize())
	}
	perChain := make([][]store.ObsEdit, len(chains))
	err = forEachLimit(ctx, len(chains), w.adjudicateConcurrency(), func(ctx context.Context, c int) error {
		ge, err := w.adjudicateChain(ctx, bankID, chains[c], facts, qi, slots, lists, scale, newView(merge), byID, now)
		perChain[c] = ge
		return err
	})
	if err != nil {
		return store.ApplyOutcome{}, err
	}
	var edits []store.ObsEdit
	for _, ge := range perChain {
		edits = append(edits, ge...)
	}
	t0 = w.phase("adjudicate", t0)
	out, err := w.st.ApplyConsolidation(ctx, store.ConsolidationApply{BankID: bankID, FactIDs: ids, Edits: edits,
		Now: now, MergeThreshold: merge, Trend: trend})
	if err != nil {
		return out, err
	}
	w.phase("apply", t0)
	w.m.batchSeconds.Observe(time.Since(start).Seconds())
	if out.Applied {
		w.m.facts.WithLabelValues("applied").Add(float64(len(ids)))
	} else {
		w.m.facts.WithLabelValues("skipped").Add(float64(len(ids)))
	}
	w.m.changes.WithLabelValues("create").Add(float64(out.Created))
	w.m.changes.WithLabelValues("update").Add(float64(out.Updated))
	w.m.changes.WithLabelValues("invalidate").Add(float64(out.Invalidated))
	w.m.changes.WithLabelValues("merge").Add(float64(out.Merged))
	w.m.changes.WithLabelValues("evidence").Add(float64(out.Evidence))
	return out, nil
}

// adjudicateChain decides a chain of facts (indexes into facts, in batch
// order), BatchSize facts per call, each call seeing the decisions of the
// calls before it through v.
func (w *Worker) adjudicateChain(ctx context.Context, bankID string, chain []int, facts []store.PendingFact, qi []int, slots []string,
	lists []store.CandidateLists, scale simscale.Scale, v *view, byID map[uuid.UUID]store.PendingFact, now time.Time) ([]store.ObsEdit, error) {
	var edits []store.ObsEdit
	n := w.adj.BatchSize()
	for lo := 0; lo < len(chain); lo += n {
		var batch []FactCandidates
		for _, i := range chain[lo:min(lo+n, len(chain))] {
			cands := v.candidates(facts[i], slots[qi[i]], lists[qi[i]], w.cfg.Candidates)
			for j := range cands {
				cands[j].Level = scale.Level(cands[j].Similarity)
			}
			batch = append(batch, FactCandidates{Fact: facts[i], Candidates: cands})
		}
		if err := w.limiter.WaitN(ctx, len(batch)); err != nil {
			return nil, err
		}
		// The call's rows name the facts it decides (metadata.source_memory_ids).
		src := make([]uuid.UUID, len(batch))
		for j, fc := range batch {
			src[j] = fc.Fact.ID
		}
		dec, err := w.adj.Adjudicate(llmtrace.WithSourceMemories(ctx, src), batch)
		if err != nil {
			return nil, fmt.Errorf("adjudicate %d facts of bank %s: %w", len(batch), bankID, err)
		}
		if err := dec.validate(batch); err != nil {
			return nil, fmt.Errorf("adjudication of bank %s rejected: %w", bankID, err)
		}
		ge, err := w.edits(ctx, bankID, batch, dec)
		if err != nil {
			return nil, err
		}
		v.apply(byID, ge, now)
		edits = append(edits, ge...)
	}
	return edits, nil
}

// adjudicateConcurrency is how many adjudication calls of one batch may
// run at once: the adjudicator's own bound (an LLM's), else one.
func (w *Worker) adjudicateConcurrency() int {
	if c, ok := w.adj.(interface{ Concurrency() int }); ok {
		return max(1, c.Concurrency())
	}
	return 1
}

// edits turns a validated decision into store edits: new observations get
// ids derived from their first source fact (a replay derives the same
// id), embeddings and search_aux; every source fact becomes verbatim
// evidence dated when the fact happened.
func (w *Worker) edits(ctx context.Context, bankID string, batch []FactCandidates, d Decision) ([]store.ObsEdit, error) {
	facts := map[uuid.UUID]store.PendingFact{}
	cands := map[uuid.UUID]Candidate{}
	for _, fc := range batch {
		facts[fc.Fact.ID] = fc.Fact
		for _, c := range fc.Candidates {
			cands[c.ID] = c
		}
	}
	// Texts that are not some fact's own text need an embedding. An
	// observation of one fact with the same text copies that fact's
	// vector, the quote of the turn it answers included, so it is found
	// by a question about the request as the fact is; embedding its text
	// alone halved the consolidation rate with the local model and made
	// quoting facts stop matching their own observations (docs/EMBEDDINGS.md).
	var toEmbed []string
	need := func(text string, src []uuid.UUID) {
		if len(src) == 1 && facts[src[0]].Text == text {
			return
		}
		if !slices.Contains(toEmbed, text) {
			toEmbed = append(toEmbed, text)
		}
	}
	for _, c := range d.Creates {
		need(c.Text, c.SourceFactIDs)
	}
	for _, u := range d.Updates {
		if u.Text != "" && u.Text != cands[u.ObservationID].Text {
			need(u.Text, u.SourceFactIDs)
		}
	}
	vecs := map[string][]float32{}
	if len(toEmbed) > 0 {
		out, err := w.emb.EmbedDocuments(ctx, toEmbed)
		if err != nil {
			return nil, fmt.Errorf("embed %d observation texts: %w", len(toEmbed), err)
		}
		for i, t := range toEmbed {
			vecs[t] = out[i]
		}
	}
	vecOf := func(text string, src []uuid.UUID) []float32 {
		if v, ok := vecs[text]; ok {
			return v
		}
		return facts[src[0]].Embedding
	}
	evidence := func(src []uuid.UUID, rel float32) ([]store.ObsEvidence, []string, []uuid.UUID) {
		var ev []store.ObsEvidence
		var names []string
		var ents []uuid.UUID
		if rel <= 0 {
			rel = 1
		}
		for _, id := range src {
			f := facts[id]
			ev = append(ev, store.ObsEvidence{MemoryID: f.ID, Quote: f.Text, Relevance: rel, At: f.When()})
			names = append(names, f.EntityNames...)
			ents = append(ents, f.EntityIDs...)
		}
		return ev, names, ents
	}

	var out []store.ObsEdit
	ordinal := map[uuid.UUID]int{}
	for _, c := range d.Creates {
		first := c.SourceFactIDs[0]
		parts := []string{bankID, "observation", first.String()}
		if k := ordinal[first]; k > 0 {
			parts = append(parts, strconv.Itoa(k))
		}
		ordinal[first]++
		ev, names, ents := evidence(c.SourceFactIDs, 1)
		out = append(out, store.ObsEdit{Kind: store.EditCreate, ObservationID: store.DeriveID(parts...), Text: c.Text,
			Embedding: vecOf(c.Text, c.SourceFactIDs), SearchAux: text.Aux(c.Text, names), Metadata: c.Metadata,
			Tags: facts[first].Tags, EntityIDs: ents, Reason: c.Reason, Evidence: ev})
	}
	for _, u := range d.Updates {
		cand := cands[u.ObservationID]
		ev, names, _ := evidence(u.SourceFactIDs, u.Relevance)
		e := store.ObsEdit{Kind: store.EditEvidence, ObservationID: u.ObservationID, Reason: u.Reason, Evidence: ev}
		if u.Text != "" && u.Text != cand.Text {
			meta := u.Metadata
			if meta == nil {
				meta = cand.Metadata
			}
			e.Kind, e.Text, e.Embedding, e.SearchAux, e.Metadata = store.EditUpdate, u.Text, vecOf(u.Text, u.SourceFactIDs),
				text.Aux(u.Text, names), meta
		}
		out = append(out, e)
	}
	for _, del := range d.Deletes {
		out = append(out, store.ObsEdit{Kind: store.EditInvalidate, ObservationID: del.ObservationID, Reason: del.Reason,
			Sources: del.SourceFactIDs})
	}
	return out, nil
}

// normTags is the scope key's canonical form: sorted, without duplicates.
func normTags(tags []string) []string {
	out := slices.Clone(tags)
	if out == nil {
		out = []string{}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func scopeKey(tags []string) string {
	return fmt.Sprint(normTags(tags))
}

// WriteSummary prints a drain's result for people (memstream consolidate).
func (r Result) WriteSummary(w io.Writer, bank string, took time.Duration) {
	if r.Paused {
		fmt.Fprintf(w, "bank %s: consolidation is paused; resume it through the bank API (consolidation_state running)\n", bank)
	}
	fmt.Fprintf(w, "done in %s: %d facts consolidated; observations %d created, %d updated, %d invalidated, %d merged; %d evidence added; %d mental models refreshed\n",
		took.Round(time.Millisecond), r.Facts, r.Created, r.Updated, r.Invalidated, r.Merged, r.Evidence, r.MentalModels)
}
