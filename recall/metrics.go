package recall

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Arm outcomes for memstream_recall_arm_failures_total. A timeout is told
// apart from other errors because it calls for a bigger ArmTimeout or a
// cheaper query, while an error calls for a look at the log.
const (
	outcomeError   = "error"
	outcomeTimeout = "timeout"
)

// metrics are the Recaller's Prometheus collectors. Labels are bounded:
// arm is one of four names, outcome one of ok/error/timeout.
type metrics struct {
	armSeconds  *prometheus.HistogramVec
	armFailures *prometheus.CounterVec
	recallSecs  *prometheus.HistogramVec
	results     prometheus.Counter
	tokens      prometheus.Counter
}

// latencyBuckets span a cheap index probe (0.5 ms) to a timed-out arm
// (the default ArmTimeout is 2 s).
var latencyBuckets = []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		armSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "memstream_recall_arm_seconds",
			Help:    "Time one retrieval arm took, including arms that failed.",
			Buckets: latencyBuckets,
		}, []string{"arm"}),
		armFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memstream_recall_arm_failures_total",
			Help: "Retrieval arms dropped from an answer, by arm and outcome (error or timeout).",
		}, []string{"arm", "outcome"}),
		recallSecs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "memstream_recall_seconds",
			Help:    "Time of a whole recall, from request to scored and budgeted results, by outcome (ok, invalid, error).",
			Buckets: latencyBuckets,
		}, []string{"outcome"}),
		results: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "memstream_recall_results_total",
			Help: "Facts returned by recalls.",
		}),
		tokens: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "memstream_recall_tokens_total",
			Help: "Tokens of the facts returned by recalls, as counted against max_tokens.",
		}),
	}
	var err error
	m.armSeconds, err = register(reg, m.armSeconds)
	if err != nil {
		return nil, err
	}
	if m.armFailures, err = register(reg, m.armFailures); err != nil {
		return nil, err
	}
	if m.recallSecs, err = register(reg, m.recallSecs); err != nil {
		return nil, err
	}
	if m.results, err = register(reg, m.results); err != nil {
		return nil, err
	}
	if m.tokens, err = register(reg, m.tokens); err != nil {
		return nil, err
	}
	// Pre-create the label sets, so a dashboard shows a zero rather than
	// nothing before the first failure.
	for _, a := range allArms {
		m.armSeconds.WithLabelValues(a)
		m.armFailures.WithLabelValues(a, outcomeError)
		m.armFailures.WithLabelValues(a, outcomeTimeout)
	}
	return m, nil
}

// register registers c, or returns the collector already registered under
// the same description: two Recallers sharing a registry (an API and a
// reflect worker in one process) then share their series instead of
// failing to start.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if old, ok := are.ExistingCollector.(C); ok {
			return old, nil
		}
	}
	var zero C
	return zero, fmt.Errorf("recall: register metrics: %w", err)
}

// armFailed counts a dropped arm. ctxErr is the arm context's error: an
// arm that ran out of its own time reports some wrapped driver error, and
// only the context says that it was a timeout.
func (m *metrics) armFailed(arm string, err, ctxErr error) {
	outcome := outcomeError
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctxErr, context.DeadlineExceeded) {
		outcome = outcomeTimeout
	}
	m.armFailures.WithLabelValues(arm, outcome).Inc()
}
