package priority

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// holders acquire a gate in named goroutines and record the order in
// which they got their slots; each holds its slot until released.
type holders struct {
	t       *testing.T
	g       *Gate
	mu      sync.Mutex
	order   []string
	release map[string]func()
	got     chan string
	wg      sync.WaitGroup
}

func newHolders(t *testing.T, g *Gate) *holders {
	return &holders{t: t, g: g, release: map[string]func(){}, got: make(chan string, 64)}
}

// start queues name for a slot of class c, and returns once the gate
// shows it granted or waiting (never by sleeping).
func (h *holders) start(name string, c Class) {
	h.t.Helper()
	live0, bg0 := h.g.Waiting()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		rel, err := h.g.Acquire(WithClass(context.Background(), c))
		if err != nil {
			h.t.Errorf("%s: %v", name, err)
			return
		}
		h.mu.Lock()
		h.order = append(h.order, name)
		h.release[name] = rel
		h.mu.Unlock()
		h.got <- name
	}()
	for {
		select {
		case n := <-h.got:
			h.got <- n // seen by whoever waits for it
			return
		default:
		}
		live, bg := h.g.Waiting()
		if live > live0 || bg > bg0 {
			return
		}
		runtime.Gosched()
	}
}

// next waits for the next grant and returns its name.
func (h *holders) next() string { return <-h.got }

func (h *holders) done(name string) {
	h.mu.Lock()
	rel := h.release[name]
	h.mu.Unlock()
	if rel == nil {
		h.t.Fatalf("%s holds no slot", name)
	}
	rel()
}

func (h *holders) wait() { h.wg.Wait() }

func mustGate(t *testing.T, cfg GateConfig) *Gate {
	t.Helper()
	return mustGateWith(t, GateDeps{}, cfg)
}

func mustGateWith(t *testing.T, deps GateDeps, cfg GateConfig) *Gate {
	t.Helper()
	g, err := NewGate(deps, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// A freed slot goes to the live waiter even when a background one queued
// first.
func TestLiveBeforeBackground(t *testing.T) {
	t.Parallel()
	g := mustGate(t, GateConfig{Name: "t", Slots: 1})
	h := newHolders(t, g)
	h.start("bg-holder", Background)
	if n := h.next(); n != "bg-holder" {
		t.Fatalf("first grant %s", n)
	}
	h.start("bg-waiter", Background)
	h.start("live-1", Live)
	h.start("live-2", Live)
	if l, b := g.Waiting(); l != 2 || b != 1 {
		t.Fatalf("waiting live %d background %d", l, b)
	}
	h.done("bg-holder")
	if n := h.next(); n != "live-1" {
		t.Fatalf("after the background holder: %s", n)
	}
	h.done("live-1")
	if n := h.next(); n != "live-2" {
		t.Fatalf("then: %s", n)
	}
	h.done("live-2")
	if n := h.next(); n != "bg-waiter" {
		t.Fatalf("last: %s", n)
	}
	h.done("bg-waiter")
	h.wait()
}

// Background work never holds the slot kept for live work: with two
// slots, the second background request waits while a live one is admitted
// at once.
func TestBackgroundCap(t *testing.T) {
	t.Parallel()
	g := mustGate(t, GateConfig{Name: "t", Slots: 2})
	h := newHolders(t, g)
	h.start("bg-1", Background)
	h.next()
	h.start("bg-2", Background)
	if _, b := g.Waiting(); b != 1 {
		t.Fatalf("second background request admitted past the cap")
	}
	h.start("live", Live)
	if n := h.next(); n != "live" {
		t.Fatalf("live request got no free slot: %s", n)
	}
	h.done("live")
	// The free slot is still the live one's: bg-2 waits for bg-1.
	if _, b := g.Waiting(); b != 1 {
		t.Fatal("background request took the live slot")
	}
	h.done("bg-1")
	if n := h.next(); n != "bg-2" {
		t.Fatalf("then %s", n)
	}
	h.done("bg-2")
	h.wait()
}

// A background waiter is passed over by at most MaxBypass live grants.
func TestBackgroundNotStarved(t *testing.T) {
	t.Parallel()
	g := mustGate(t, GateConfig{Name: "t", Slots: 1, MaxBypass: 2})
	h := newHolders(t, g)
	h.start("live-0", Live)
	h.next()
	h.start("bg", Background)
	for i := 1; i <= 4; i++ {
		h.start(fmt.Sprintf("live-%d", i), Live)
	}
	prev := "live-0"
	var order []string
	for range 5 {
		h.done(prev)
		prev = h.next()
		order = append(order, prev)
	}
	h.done(prev)
	h.wait()
	if want := []string{"live-1", "live-2", "bg", "live-3", "live-4"}; !slices.Equal(order, want) {
		t.Fatalf("grant order %v, want %v", order, want)
	}
}

// A waiter whose context ends leaves the queue and takes no slot.
func TestAcquireCancelled(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	g := mustGateWith(t, GateDeps{Registerer: reg}, GateConfig{Name: "t", Slots: 1})
	rel, err := g.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(WithClass(context.Background(), Background))
	errc := make(chan error)
	go func() {
		_, err := g.Acquire(ctx)
		errc <- err
	}()
	for {
		if _, b := g.Waiting(); b == 1 {
			break
		}
		runtime.Gosched()
	}
	if n := gauge(t, reg, "background"); n != 1 {
		t.Fatalf("waiting gauge %v", n)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled acquire: %v", err)
	}
	rel()
	rel() // a second release is harmless
	if _, b := g.Waiting(); b != 0 || gauge(t, reg, "background") != 0 {
		t.Fatal("cancelled waiter still queued")
	}
	rel2, err := g.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rel2()
	if g.held != 0 || g.heldBg != 0 {
		t.Fatalf("slots leaked: held %d background %d", g.held, g.heldBg)
	}
}

func TestGateConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []GateConfig{{Slots: 0}, {Slots: 2, MaxBackground: 3}, {Slots: 1, MaxBypass: -1}} {
		if _, err := NewGate(GateDeps{}, c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	g := mustGate(t, GateConfig{Slots: 1})
	if g.cfg.MaxBackground != 1 {
		t.Fatalf("one slot: background cap %d, want 1", g.cfg.MaxBackground)
	}
	if Of(context.Background()) != Live || Of(WithClass(context.Background(), Background)) != Background {
		t.Fatal("class of a context")
	}
}

func gauge(t *testing.T, reg *prometheus.Registry, class string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "memstream_priority_waiting_requests" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "class" && l.GetValue() == class {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}
