package reflect

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Reflector's collectors. Labels are bounded: mode is
// llm or offline, outcome one of the outcome constants, tool one of five
// names (anything else the model invents is counted as "unknown").
type metrics struct {
	seconds    *prometheus.HistogramVec
	iterations prometheus.Histogram
	toolCalls  *prometheus.CounterVec
	llmTokens  prometheus.Counter
}

// Outcomes of a reflect call.
const (
	outcomeDone    = "done"    // the model called done
	outcomeForced  = "forced"  // iterations, budget or time ran out
	outcomeOffline = "offline" // extractive answer
	outcomeError   = "error"
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "memstream_reflect_seconds",
			Help:    "Time of a whole reflect call, by mode (llm, offline) and outcome (done, forced, offline, error).",
			Buckets: []float64{0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 60},
		}, []string{"mode", "outcome"}),
		iterations: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "memstream_reflect_iterations",
			Help:    "Agent loop iterations per reflect call.",
			Buckets: []float64{1, 2, 3, 4, 5, 6, 8, 10, 15, 20},
		}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memstream_reflect_tool_calls_total",
			Help: "Tool calls made by the reflect agent, by tool.",
		}, []string{"tool"}),
		llmTokens: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "memstream_reflect_llm_tokens_total",
			Help: "Tokens (prompt and completion) spent by reflect's LLM calls.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.seconds, m.iterations, m.toolCalls, m.llmTokens} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("reflect: register metrics: %w", err)
		}
	}
	return m, nil
}
