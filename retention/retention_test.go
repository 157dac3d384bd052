package retention

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestAgeCutsAtNowLessKeep checks the cut an Age rule hands its delete,
// and that keep 0 switches the rule off.
func TestAgeCutsAtNowLessKeep(t *testing.T) {
	var got time.Time
	r := Age("audit_log", 30*24*time.Hour, func(_ context.Context, before time.Time) (int64, error) { got = before; return 4, nil })
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	if n, err := r.Prune(context.Background(), now); n != 4 || err != nil {
		t.Fatalf("prune: %d, %v", n, err)
	}
	if want := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("cut at %s; want %s", got, want)
	}
	if off := Age("defense_audit", 0, nil); off.Prune != nil || off.Table != "defense_audit" {
		t.Errorf("keep 0 gave %+v; want a rule that keeps everything", off)
	}
}

// TestRunPrunesEveryRuleOnOneSchedule checks that Run prunes at start and
// then on every tick, counts per table, and that a failing rule neither
// stops the others nor the loop.
func TestRunPrunesEveryRuleOnOneSchedule(t *testing.T) {
	var mu sync.Mutex
	runs := map[string]int{}
	rule := func(table string, n int64, err error) Rule {
		return Rule{Table: table, Prune: func(ctx context.Context, _ time.Time) (int64, error) {
			if _, ok := ctx.Deadline(); !ok {
				t.Errorf("%s pruned without a deadline", table)
			}
			mu.Lock()
			defer mu.Unlock()
			runs[table]++
			return n, err
		}}
	}
	reg := prometheus.NewRegistry()
	p, err := New(Deps{Registerer: reg}, Config{Interval: 10 * time.Millisecond},
		rule("llm_requests", 2, nil), rule("audit_log", 1, errors.New("down")), Rule{Table: "defense_audit"}, rule("defense_audit", 3, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Tables(); len(got) != 3 || got[2] != "defense_audit" {
		t.Fatalf("tables %v; want the three that prune", got)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := runs["defense_audit"]
		mu.Unlock()
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs %v after 5s", runs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := testutil.ToFloat64(p.pruned.WithLabelValues("llm_requests")); got != 2*float64(runs["llm_requests"]) {
		t.Errorf("llm_requests pruned %v over %d runs; want 2 a run", got, runs["llm_requests"])
	}
	if got := testutil.ToFloat64(p.errs.WithLabelValues("audit_log")); got != float64(runs["audit_log"]) || got < 3 {
		t.Errorf("audit_log errors %v over %d runs; want one a run, the loop going on", got, runs["audit_log"])
	}
	if got := testutil.ToFloat64(p.errs.WithLabelValues("defense_audit")); got != 0 {
		t.Errorf("defense_audit errors %v", got)
	}
}

// TestNoRulesRunsNothing checks that a Pruner with every rule off runs
// until stopped (returning early would end serve's run group), and that a
// stopped one does not start.
func TestNoRulesRunsNothing(t *testing.T) {
	p, err := New(Deps{}, Config{}, Rule{Table: "audit_log"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("Run with no rules returned at once (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	q, _ := New(Deps{}, Config{}, Rule{Table: "x", Prune: func(context.Context, time.Time) (int64, error) { t.Error("a stopped pruner pruned"); return 0, nil }})
	if err := q.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := q.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Deps{}, Config{}, Rule{Prune: func(context.Context, time.Time) (int64, error) { return 0, nil }}); err == nil {
		t.Error("a rule without a table was taken")
	}
}
