package recall

import (
	"context"
	"testing"
	"time"

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
	r := fx.recallerWith(t, Deps{Embedder: failingEmbedder{}, Registerer: reg}, Config{})
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
	r2 := fx.recallerWith(t, Deps{Embedder: failingEmbedder{}, Registerer: reg}, Config{})
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
