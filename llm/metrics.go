package llm

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	calls, tokens            *prometheus.CounterVec
	retries, reasks, invalid prometheus.Counter
	fallbacks                prometheus.Counter
	seconds                  prometheus.Histogram
	inflight                 prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memstream_llm_calls_total", Help: "LLM extraction calls by outcome (ok, rate_limited, server_error, client_error, timeout, network_error).",
		}, []string{"outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memstream_llm_tokens_total", Help: "Tokens reported by the LLM, by kind (prompt, completion).",
		}, []string{"kind"}),
		retries:   prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_llm_retries_total", Help: "LLM calls retried after a transient failure."}),
		reasks:    prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_llm_reasks_total", Help: "Re-asks after an invalid answer."}),
		invalid:   prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_llm_invalid_answers_total", Help: "Answers that failed JSON parsing or fact validation."}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_llm_fallback_chunks_total", Help: "Chunks extracted by the offline extractor because the LLM failed."}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "memstream_llm_call_seconds", Help: "Latency of one LLM call, successful or not.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
		}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "memstream_llm_inflight_calls", Help: "LLM calls in flight."}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.calls, m.tokens, m.retries, m.reasks, m.invalid, m.fallbacks, m.seconds, m.inflight} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("llm metrics: %w", err)
			}
		}
	}
	return m, nil
}
