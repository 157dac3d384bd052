package priority

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Class is the priority of a piece of work.
type Class int

// The classes, highest first.
const (
	Live Class = iota
	Background
)

// String names the class in metrics and logs.
func (c Class) String() string {
	if c == Background {
		return "background"
	}
	return "live"
}

type classKey struct{}

// WithClass returns ctx marked with c.
func WithClass(ctx context.Context, c Class) context.Context {
	return context.WithValue(ctx, classKey{}, c)
}

// Of returns the class ctx carries; Live when it carries none.
func Of(ctx context.Context) Class {
	if c, ok := ctx.Value(classKey{}).(Class); ok {
		return c
	}
	return Live
}

// GateConfig configures a Gate.
type GateConfig struct {
	// Name labels the gate's metrics (llm, embed).
	Name string
	// Slots is how many holders the gate admits at once.
	Slots int
	// MaxBackground is the most slots background work may hold at once;
	// 0 means Slots-1 (at least 1), so one slot is kept for live work.
	MaxBackground int
	// MaxBypass is how many live grants may pass over a waiting background
	// request before it gets the next slot; 0 means 8.
	MaxBypass int
}

// GateDeps are what a gate reports to.
type GateDeps struct {
	// Registerer receives the gate's metrics; nil registers nothing.
	Registerer prometheus.Registerer
}

// WithDefaults fills unset fields.
func (c GateConfig) WithDefaults() GateConfig {
	if c.MaxBackground == 0 {
		c.MaxBackground = max(1, c.Slots-1)
	}
	if c.MaxBypass == 0 {
		c.MaxBypass = 8
	}
	return c
}

func (c GateConfig) validate() error {
	switch {
	case c.Slots < 1:
		return fmt.Errorf("priority gate %s: slots %d, must be at least 1", c.Name, c.Slots)
	case c.MaxBackground < 1 || c.MaxBackground > c.Slots:
		return fmt.Errorf("priority gate %s: max background %d, must be between 1 and the %d slots", c.Name, c.MaxBackground, c.Slots)
	case c.MaxBypass < 1:
		return fmt.Errorf("priority gate %s: max bypass %d, must be at least 1", c.Name, c.MaxBypass)
	}
	return nil
}

// Gate admits a bounded number of holders, live ones first. It is safe for
// concurrent use.
type Gate struct {
	cfg GateConfig

	mu       sync.Mutex
	held     int
	heldBg   int
	bypassed int           // live grants since the oldest background waiter queued
	waiting  [2]*list.List // of *waiter, by Class

	waitSec *prometheus.HistogramVec
	queued  *prometheus.GaugeVec
}

type waiter struct {
	class   Class
	granted chan struct{} // closed when the slot is the waiter's
}

// NewGate returns a gate.
func NewGate(deps GateDeps, cfg GateConfig) (*Gate, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	g := &Gate{cfg: cfg, waiting: [2]*list.List{list.New(), list.New()}}
	labels := prometheus.Labels{"gate": cfg.Name}
	g.waitSec = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "memstream_priority_wait_seconds",
		Help: "Time a request waited for a slot of the gate, by class.", ConstLabels: labels,
		Buckets: []float64{0.0005, 0.002, 0.01, 0.05, 0.2, 1, 5, 30}}, []string{"class"})
	g.queued = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "memstream_priority_waiting_requests",
		Help: "Requests waiting for a slot of the gate, by class.", ConstLabels: labels}, []string{"class"})
	if deps.Registerer != nil {
		for _, c := range []prometheus.Collector{g.waitSec, g.queued} {
			if err := deps.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("priority gate %s: %w", cfg.Name, err)
			}
		}
	}
	return g, nil
}

// Slots is the number of holders the gate admits at once.
func (g *Gate) Slots() int { return g.cfg.Slots }

// Acquire waits for a slot for work of ctx's class (Of) and returns the
// function that gives it back. It fails only when ctx ends first.
func (g *Gate) Acquire(ctx context.Context) (release func(), err error) {
	return g.AcquireClass(ctx, Of(ctx))
}

// AcquireClass is Acquire for an explicit class.
func (g *Gate) AcquireClass(ctx context.Context, c Class) (release func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	if g.admits(c) && g.waiting[Live].Len() == 0 && (c == Live || g.waiting[Background].Len() == 0) {
		g.take(c)
		g.mu.Unlock()
		g.waitSec.WithLabelValues(c.String()).Observe(0)
		return g.releaser(c), nil
	}
	w := &waiter{class: c, granted: make(chan struct{})}
	el := g.waiting[c].PushBack(w)
	g.queued.WithLabelValues(c.String()).Inc()
	g.mu.Unlock()

	start := time.Now()
	select {
	case <-w.granted:
		g.waitSec.WithLabelValues(c.String()).Observe(time.Since(start).Seconds())
		return g.releaser(c), nil
	case <-ctx.Done():
		g.mu.Lock()
		select {
		case <-w.granted:
			// Granted while giving up: hand the slot on.
			g.mu.Unlock()
			g.releaser(c)()
		default:
			g.waiting[c].Remove(el)
			g.queued.WithLabelValues(c.String()).Dec()
			if c == Background && g.waiting[Background].Len() == 0 {
				g.bypassed = 0
			}
			// A live waiter may have been held back only by this one's turn.
			g.grant()
			g.mu.Unlock()
		}
		return nil, ctx.Err()
	}
}

// Waiting reports how many requests of each class wait for a slot.
func (g *Gate) Waiting() (live, background int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting[Live].Len(), g.waiting[Background].Len()
}

// InUse reports how many slots are held.
func (g *Gate) InUse() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

// admits reports whether a free slot may go to work of class c now.
func (g *Gate) admits(c Class) bool {
	if g.held >= g.cfg.Slots {
		return false
	}
	return c == Live || g.heldBg < g.cfg.MaxBackground
}

func (g *Gate) take(c Class) {
	g.held++
	if c == Background {
		g.heldBg++
	}
}

func (g *Gate) releaser(c Class) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.held--
			if c == Background {
				g.heldBg--
			}
			g.grant()
			g.mu.Unlock()
		})
	}
}

// grant hands free slots to waiters: live first, unless the oldest
// background waiter has been passed over MaxBypass times.
func (g *Gate) grant() {
	for {
		lw, bw := g.waiting[Live].Front(), g.waiting[Background].Front()
		bgReady := bw != nil && g.admits(Background)
		var el *list.Element
		switch {
		case bgReady && (lw == nil || g.bypassed >= g.cfg.MaxBypass):
			el = bw
			g.bypassed = 0
		case lw != nil && g.admits(Live):
			el = lw
			if bgReady {
				g.bypassed++
			}
		default:
			return
		}
		w := el.Value.(*waiter)
		g.waiting[w.class].Remove(el)
		g.queued.WithLabelValues(w.class.String()).Dec()
		g.take(w.class)
		close(w.granted)
	}
}
