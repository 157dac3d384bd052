package llmtrace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memstream/memstream/internal/lifetime"
	"github.com/memstream/memstream/retention"
	"github.com/memstream/memstream/store"
)

// Writer is the part of the store the recorder writes through
// (store.Store has it).
type Writer interface {
	AddLLMRequests(ctx context.Context, rs []store.LLMRequest) error
	PruneLLMRequests(ctx context.Context, before time.Time, banks []string, keep int) (int64, error)
}

// Config bounds the recorder. Retention and MaxPerBank mirror
// llm.trace_retention and llm.trace_max_per_bank.
type Config struct {
	// Provider labels every row (llm.provider, "openai").
	Provider string
	// Model labels a row whose answer names none (a failed request):
	// every client of the endpoint calls the configured llm.model.
	Model string
	// Retention is how long a row is kept.
	Retention time.Duration
	// MaxPerBank is how many of its newest rows a bank keeps; 0 turns
	// recording off (New returns a nil Recorder).
	MaxPerBank int
	// Buffer is how many rows may wait to be written; more are dropped
	// (counted). Default 4096.
	Buffer int
	// BatchSize is the most rows one write carries. Default 256.
	BatchSize int
	// FlushInterval is the longest a row waits in the buffer. Default 500ms.
	FlushInterval time.Duration
	// WriteTimeout bounds one write, and the last one at Stop. Default 5s.
	WriteTimeout time.Duration
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Buffer == 0 {
		c.Buffer = 4096
	}
	if c.BatchSize == 0 {
		c.BatchSize = 256
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = 500 * time.Millisecond
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 5 * time.Second
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Retention <= 0:
		return fmt.Errorf("llm.trace_retention: must be positive, got %s", c.Retention)
	case c.MaxPerBank < 0:
		return fmt.Errorf("llm.trace_max_per_bank: must not be negative, got %d", c.MaxPerBank)
	case c.Buffer < 1 || c.BatchSize < 1:
		return fmt.Errorf("llmtrace: buffer (%d) and batch size (%d) must be positive", c.Buffer, c.BatchSize)
	case c.FlushInterval <= 0 || c.WriteTimeout <= 0:
		return errors.New("llmtrace: flush interval and write timeout must be positive")
	}
	return nil
}

// Deps are a Recorder's collaborators. Registerer and Logger may be nil.
type Deps struct {
	Store      Writer
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Recorder buffers recorded requests and writes them in batches. A nil
// *Recorder records nothing: Transport returns its base unchanged.
type Recorder struct {
	st   Writer
	cfg  Config
	log  *slog.Logger
	life lifetime.Stopper
	ch   chan pending

	written prometheus.Counter
	dropped *prometheus.CounterVec

	// touched holds the banks written to since their last prune: only
	// they can have grown past the cap.
	touchMu sync.Mutex
	touched map[string]bool

	warnMu   sync.Mutex
	lastWarn time.Time
	held     int
}

// New checks cfg and registers the metrics; with cfg.MaxPerBank 0 it
// returns a nil Recorder, which records nothing.
func New(deps Deps, cfg Config) (*Recorder, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.MaxPerBank == 0 {
		return nil, nil
	}
	if deps.Store == nil {
		return nil, errors.New("llmtrace: no store")
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Recorder{st: deps.Store, cfg: cfg, log: log, ch: make(chan pending, cfg.Buffer), touched: map[string]bool{},
		written: prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_llm_trace_written_total",
			Help: "LLM requests recorded in llm_requests (GET …/llm-requests)."}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "memstream_llm_trace_dropped_total",
			Help: "LLM requests not recorded, by reason (buffer_full, write_failed); the calls themselves went on."}, []string{"reason"}),
	}
	if deps.Registerer != nil {
		for _, c := range []prometheus.Collector{r.written, r.dropped} {
			if err := deps.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("llmtrace: register metrics: %w", err)
			}
		}
	}
	return r, nil
}

// record queues one finished request; it never blocks the call.
func (r *Recorder) record(p pending) {
	select {
	case r.ch <- p:
	default:
		r.drop("buffer_full", 1, nil)
	}
}

// drop counts lost rows and logs at most once a minute, with the count
// held back since the last line.
func (r *Recorder) drop(reason string, n int, err error) {
	r.dropped.WithLabelValues(reason).Add(float64(n))
	r.warnMu.Lock()
	defer r.warnMu.Unlock()
	r.held += n
	if now := time.Now(); r.lastWarn.IsZero() || now.Sub(r.lastWarn) >= time.Minute {
		r.lastWarn = now
		r.log.Warn("llm requests not recorded", slog.String("reason", reason), slog.Int("requests_since_last_report", r.held), slog.Any("error", err))
		r.held = 0
	}
}

// Run writes buffered rows every FlushInterval (or at once when a batch
// is full) until ctx ends or Stop; then it writes what is still
// buffered, within WriteTimeout. Pruning is Retention's rule, run by a
// retention.Pruner with the other tables'.
func (r *Recorder) Run(ctx context.Context) error {
	ctx, end, ok := r.life.Begin(ctx)
	defer end()
	if !ok {
		return nil
	}
	flush := time.NewTicker(r.cfg.FlushInterval)
	defer flush.Stop()
	batch := make([]store.LLMRequest, 0, r.cfg.BatchSize)
	write := func(ctx context.Context) {
		if len(batch) == 0 {
			return
		}
		wctx, cancel := context.WithTimeout(ctx, r.cfg.WriteTimeout)
		defer cancel()
		if err := r.st.AddLLMRequests(wctx, batch); err != nil {
			r.drop("write_failed", len(batch), err)
		} else {
			r.written.Add(float64(len(batch)))
			r.touchMu.Lock()
			for _, q := range batch {
				r.touched[q.BankID] = true
			}
			r.touchMu.Unlock()
		}
		batch = batch[:0]
	}
	for {
		select {
		case p := <-r.ch:
			batch = append(batch, r.row(p))
			if len(batch) >= r.cfg.BatchSize {
				write(ctx)
			}
		case <-flush.C:
			write(ctx)
		case <-ctx.Done():
			// The calls are over (the API, pipeline and worker stop
			// first): write what they left, on a context of its own.
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.WriteTimeout)
			defer cancel()
		drain:
			for {
				select {
				case p := <-r.ch:
					batch = append(batch, r.row(p))
					if len(batch) >= r.cfg.BatchSize {
						write(last)
					}
				default:
					break drain
				}
			}
			write(last)
			return nil
		}
	}
}

// Retention is the trace's rule for a retention.Pruner: rows past
// Retention go, and the banks written to since their last prune are cut
// to their MaxPerBank newest (a bank nobody wrote to has not grown). A
// nil Recorder keeps nothing to prune: its rule is off.
func (r *Recorder) Retention() retention.Rule {
	rule := retention.Rule{Table: "llm_requests"}
	if r == nil {
		return rule
	}
	rule.Prune = func(ctx context.Context, now time.Time) (int64, error) {
		r.touchMu.Lock()
		banks := make([]string, 0, len(r.touched))
		for b := range r.touched {
			banks = append(banks, b)
		}
		clear(r.touched)
		r.touchMu.Unlock()
		n, err := r.st.PruneLLMRequests(ctx, now.Add(-r.cfg.Retention), banks, r.cfg.MaxPerBank)
		if err != nil {
			// Their cap is still owed: the next prune tries them again.
			r.touchMu.Lock()
			for _, b := range banks {
				r.touched[b] = true
			}
			r.touchMu.Unlock()
		}
		return n, err
	}
	return rule
}

// RetentionRule is the llm_requests rule a process prunes with: r's
// (age and per-bank cap) when tracing is on, else age alone through st,
// so that what an earlier run recorded still goes after tracing is turned
// off (llm.trace_max_per_bank 0 gives a nil r).
func RetentionRule(r *Recorder, st Writer, age time.Duration) retention.Rule {
	if r != nil {
		return r.Retention()
	}
	return retention.Age("llm_requests", age, func(ctx context.Context, before time.Time) (int64, error) {
		return st.PruneLLMRequests(ctx, before, nil, 0)
	})
}

// Stop ends Run, which writes what is buffered, and returns once it has
// or when ctx ends.
func (r *Recorder) Stop(ctx context.Context) error { return r.life.Stop(ctx) }
