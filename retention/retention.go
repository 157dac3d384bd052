package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memstream/memstream/internal/lifetime"
)

// Rule prunes one table. A Rule without Prune keeps everything (New skips
// it), so a caller can hand over a switched-off rule as it is.
type Rule struct {
	// Table names the rule in logs and metrics.
	Table string
	// Prune deletes the rows the rule no longer keeps as of now and
	// returns how many went.
	Prune func(ctx context.Context, now time.Time) (int64, error)
}

// Age is the rule that deletes table's rows older than keep, through
// del(before); keep 0 keeps them forever (a Rule without Prune).
func Age(table string, keep time.Duration, del func(ctx context.Context, before time.Time) (int64, error)) Rule {
	if keep <= 0 {
		return Rule{Table: table}
	}
	return Rule{Table: table, Prune: func(ctx context.Context, now time.Time) (int64, error) {
		return del(ctx, now.Add(-keep))
	}}
}

// Config sets the schedule.
type Config struct {
	// Interval is how often every rule runs, and bounds one rule's run.
	// Default 1m: the retentions are days, but the LLM trace's per-bank
	// cap should not be overrun for long.
	Interval time.Duration
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Interval == 0 {
		c.Interval = time.Minute
	}
	return c
}

// Deps are a Pruner's collaborators; both may be nil.
type Deps struct {
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Pruner runs its rules on one schedule.
type Pruner struct {
	cfg   Config
	rules []Rule
	log   *slog.Logger
	life  lifetime.Stopper

	pruned, errs *prometheus.CounterVec
}

// New returns a Pruner for the rules that prune (the others keep their
// tables whole) and registers its metrics.
func New(deps Deps, cfg Config, rules ...Rule) (*Pruner, error) {
	cfg = cfg.WithDefaults()
	if cfg.Interval < 0 {
		return nil, fmt.Errorf("retention: interval must be positive, got %s", cfg.Interval)
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pruner{cfg: cfg, log: log,
		pruned: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "memstream_retention_pruned_total",
			Help: "Rows deleted past their table's retention or per-bank cap (llm_requests, audit_log, defense_audit)."}, []string{"table"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "memstream_retention_errors_total",
			Help: "Prunes that failed; the table is pruned again at the next tick."}, []string{"table"}),
	}
	for _, r := range rules {
		if r.Prune == nil {
			continue
		}
		if r.Table == "" {
			return nil, errors.New("retention: a rule without a table name")
		}
		p.rules = append(p.rules, r)
		// Both series exist from the start, at 0.
		p.pruned.WithLabelValues(r.Table)
		p.errs.WithLabelValues(r.Table)
	}
	if deps.Registerer != nil {
		for _, c := range []prometheus.Collector{p.pruned, p.errs} {
			if err := deps.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("retention: register metrics: %w", err)
			}
		}
	}
	return p, nil
}

// Tables names the tables the Pruner prunes, in rule order.
func (p *Pruner) Tables() []string {
	out := make([]string, len(p.rules))
	for i, r := range p.rules {
		out[i] = r.Table
	}
	return out
}

// Run prunes now, then every Interval, until ctx ends or Stop. With no
// rule it only waits: serve's components run as a group that ends when
// one of them returns.
func (p *Pruner) Run(ctx context.Context) error {
	ctx, end, ok := p.life.Begin(ctx)
	defer end()
	if !ok {
		return nil
	}
	if len(p.rules) == 0 {
		<-ctx.Done()
		return nil
	}
	tick := time.NewTicker(p.cfg.Interval)
	defer tick.Stop()
	for {
		p.PruneOnce(ctx)
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil
		}
	}
}

// PruneOnce runs every rule once, each within Interval; a failure is
// logged and counted, and the other rules still run.
func (p *Pruner) PruneOnce(ctx context.Context) {
	now := time.Now()
	for _, r := range p.rules {
		rctx, cancel := context.WithTimeout(ctx, p.cfg.Interval)
		n, err := r.Prune(rctx, now)
		cancel()
		p.pruned.WithLabelValues(r.Table).Add(float64(n))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.errs.WithLabelValues(r.Table).Inc()
			p.log.Warn("prune failed", slog.String("table", r.Table), slog.Int64("rows_deleted", n), slog.Any("error", err))
		}
	}
}

// Stop ends Run and returns once it has or when ctx ends.
func (p *Pruner) Stop(ctx context.Context) error { return p.life.Stop(ctx) }
