package bankindex

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memstream/memstream/internal/lifetime"
	"github.com/memstream/memstream/internal/wait"
	"github.com/memstream/memstream/store"
)

// Store is the pass the maintainer runs (store.Store has it).
type Store interface {
	BankIndexPass(ctx context.Context, p store.BankIndexPolicy) (store.BankIndexReport, error)
}

// Deps are a Maintainer's collaborators. Logger and Registerer may be nil.
type Deps struct {
	Store      Store
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Config says which banks get an index (Policy) and how often the sizes
// are checked.
type Config struct {
	Policy   store.BankIndexPolicy
	Interval time.Duration
}

// Maintainer runs store.BankIndexPass at start and every Interval.
type Maintainer struct {
	st   Store
	cfg  Config
	log  *slog.Logger
	life lifetime.Stopper

	passes  *prometheus.CounterVec
	built   prometheus.Counter
	indexes prometheus.Gauge
}

// New checks cfg and registers the metrics.
func New(deps Deps, cfg Config) (*Maintainer, error) {
	if deps.Store == nil {
		return nil, errors.New("bankindex: no store")
	}
	if cfg.Interval <= 0 {
		return nil, fmt.Errorf("bankindex: interval must be positive, got %s", cfg.Interval)
	}
	if cfg.Policy.MinFacts < 1 || cfg.Policy.MaxIndexes < 0 {
		return nil, fmt.Errorf("bankindex: min facts must be positive and max indexes not negative, got %d and %d", cfg.Policy.MinFacts, cfg.Policy.MaxIndexes)
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Maintainer{st: deps.Store, cfg: cfg, log: log,
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "memstream_bank_index_passes_total",
			Help: "Bank index passes, by outcome (done, skipped: another maintainer held the lock, error)."}, []string{"outcome"}),
		built: prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_bank_index_builds_total",
			Help: "Bank HNSW indexes built."}),
		indexes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "memstream_bank_index_indexes",
			Help: "Banks with an HNSW index of their own after the last pass."}),
	}
	if deps.Registerer != nil {
		for _, c := range []prometheus.Collector{m.passes, m.built, m.indexes} {
			if err := deps.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("bankindex: register metrics: %w", err)
			}
		}
	}
	return m, nil
}

// Run passes at once and then every Interval until ctx ends or Stop. A
// failed pass is logged and tried again at the next interval; a build that
// Stop cancels leaves an invalid index, which the next pass drops first.
func (m *Maintainer) Run(ctx context.Context) error {
	ctx, end, ok := m.life.Begin(ctx)
	defer end()
	if !ok {
		return nil
	}
	for {
		m.Pass(ctx)
		if !wait.Sleep(ctx, m.cfg.Interval) {
			return nil
		}
	}
}

// Stop ends Run (cancelling a build in progress) and returns once Run
// has, or when ctx ends.
func (m *Maintainer) Stop(ctx context.Context) error { return m.life.Stop(ctx) }

// Pass runs one pass now and reports it.
func (m *Maintainer) Pass(ctx context.Context) (store.BankIndexReport, error) {
	t0 := time.Now()
	rep, err := m.st.BankIndexPass(ctx, m.cfg.Policy)
	switch {
	case err != nil:
		m.passes.WithLabelValues("error").Inc()
		if ctx.Err() == nil {
			m.log.Warn("bank index pass failed", slog.Any("error", err))
		}
		return rep, err
	case rep.Skipped:
		m.passes.WithLabelValues("skipped").Inc()
		return rep, nil
	}
	m.built.Add(float64(len(rep.Created)))
	m.indexes.Set(float64(len(rep.Indexed)))
	m.passes.WithLabelValues("done").Inc()
	if len(rep.Created) > 0 || len(rep.Dropped) > 0 {
		m.log.Info("bank indexes changed", slog.Int("indexed", len(rep.Indexed)), slog.Any("created", rep.Created),
			slog.Any("dropped", rep.Dropped), slog.Duration("took", time.Since(t0)))
	}
	return rep, nil
}
