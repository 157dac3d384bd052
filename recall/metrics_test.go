package recall

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// counterValue reads a counter without the testutil package (whose
// dependencies this module does not carry).
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// seriesCount is how many series of the family name reg holds.
func seriesCount(t *testing.T, reg *prometheus.Registry, name string) int {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return len(f.GetMetric())
		}
	}
	return 0
}

// TestMetrics checks that a recall is counted per arm, that a failed arm is
// counted with its outcome, and that results and tokens add up to the
// response.
func TestMetrics(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, mainFacts(t))
	reg := prometheus.NewRegistry()
	r := fx.recaller(t, failingEmbedder{}, Config{Registerer: reg})
	resp, err := r.Recall(context.Background(), Request{BankID: "b1", Query: "order A-7731-QX and Zhang Wei", QueryTime: queryTime, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := seriesCount(t, reg, "memstream_recall_arm_seconds"); n != len(allArms) {
		t.Errorf("arm_seconds series = %d, want %d", n, len(allArms))
	}
	if got := counterValue(t, r.met.armFailures.WithLabelValues(ArmSemantic, outcomeError)); got != 1 {
		t.Errorf("semantic failures = %g, want 1 (the embedder fails)", got)
	}
	if got := counterValue(t, r.met.armFailures.WithLabelValues(ArmKeyword, outcomeError)); got != 0 {
		t.Errorf("keyword failures = %g, want 0", got)
	}
	if got := counterValue(t, r.met.results); got != float64(len(resp.Results)) || got == 0 {
		t.Errorf("results_total = %g, want %d (> 0)", got, len(resp.Results))
	}
	if got := counterValue(t, r.met.tokens); got != float64(resp.Trace.TokensUsed) || got == 0 {
		t.Errorf("tokens_total = %g, want %d (> 0)", got, resp.Trace.TokensUsed)
	}

	// A bad request is counted as invalid, not as a served recall.
	if _, err := r.Recall(context.Background(), Request{BankID: "b1", Query: "x", Budget: "huge"}); err == nil {
		t.Fatal("bad budget accepted")
	}
	if got := counterValue(t, r.met.results); got != float64(len(resp.Results)) {
		t.Errorf("an invalid request changed results_total to %g", got)
	}

	// A second Recaller on the same registry shares the series instead of
	// failing to register.
	r2 := fx.recaller(t, failingEmbedder{}, Config{Registerer: reg})
	if r2.met.results != r.met.results {
		t.Error("second Recaller did not reuse the registered counter")
	}
}

// TestArmTimeoutIsCounted checks the timeout outcome: a slow embedder
// makes the semantic arm run out of its own time.
func TestArmTimeoutIsCounted(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, mainFacts(t))
	r := fx.recaller(t, failingEmbedder{delay: time.Minute}, Config{ArmTimeout: 300 * time.Millisecond})
	if _, err := r.Recall(context.Background(), Request{BankID: "b1", Query: "order A-7731-QX", QueryTime: queryTime, Arms: []string{ArmSemantic, ArmKeyword}}); err != nil {
		t.Fatal(err)
	}
	if got := counterValue(t, r.met.armFailures.WithLabelValues(ArmSemantic, outcomeTimeout)); got != 1 {
		t.Errorf("semantic timeouts = %g, want 1", got)
	}
}

// TestHNSWSettingsStayInTheBatch checks that hnswQuery's settings reach
// the query, make it read-only, and do not outlive it on the pooled
// connection.
func TestHNSWSettingsStayInTheBatch(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, mainFacts(t)[:1])
	r := fx.recaller(t, fx.emb, Config{})
	ctx := context.Background()
	var ef, ro string
	err := r.hnswQuery(ctx, 123, `SELECT current_setting('hnsw.ef_search'), current_setting('transaction_read_only')`, nil,
		func(rows pgx.Rows) error { return rows.Scan(&ef, &ro) })
	if err != nil {
		t.Fatal(err)
	}
	if ef != "123" || ro != "on" {
		t.Errorf("inside the batch: ef_search %q, read only %q; want 123, on", ef, ro)
	}
	err = r.hnswQuery(ctx, 50, `CREATE TABLE recall_must_not_write (x int)`, nil, func(pgx.Rows) error { return nil })
	if err == nil {
		t.Error("a write ran inside the read-only batch")
	}
	var mode string
	err = r.genericQuery(ctx, `SELECT current_setting('plan_cache_mode'), current_setting('transaction_read_only')`, nil,
		func(rows pgx.Rows) error { return rows.Scan(&mode, &ro) })
	if err != nil {
		t.Fatal(err)
	}
	if mode != "force_generic_plan" || ro != "on" {
		t.Errorf("inside the generic batch: plan_cache_mode %q, read only %q; want force_generic_plan, on", mode, ro)
	}
	err = r.genericQuery(ctx, `CREATE TABLE recall_must_not_write (x int)`, nil, func(pgx.Rows) error { return nil })
	if err == nil {
		t.Error("a write ran inside the read-only generic batch")
	}
	// Every pooled connection: none may keep the settings.
	for range 8 {
		var after, afterMode string
		if err := fx.pool.QueryRow(ctx, `SELECT coalesce(current_setting('hnsw.ef_search', true), ''), current_setting('plan_cache_mode')`).Scan(&after, &afterMode); err != nil {
			t.Fatal(err)
		}
		if after == "123" || afterMode != "auto" {
			t.Fatalf("settings leaked to the pool: ef_search %q, plan_cache_mode %q", after, afterMode)
		}
	}
}
