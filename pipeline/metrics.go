package pipeline

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	in, out, facts, persisted, duplicates prometheus.Counter
	lanes                                 prometheus.Gauge
	deadLettered, retries                 *prometheus.CounterVec
	stageSeconds                          *prometheus.HistogramVec
	e2eSeconds                            prometheus.Histogram
	depth                                 *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		in:         prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_pipeline_records_in_total", Help: "Records submitted to the pipeline."}),
		out:        prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_pipeline_records_out_total", Help: "Records persisted and acknowledged."}),
		facts:      prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_pipeline_facts_extracted_total", Help: "Facts extracted."}),
		persisted:  prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_pipeline_events_persisted_total", Help: "Events newly written to PostgreSQL."}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_pipeline_events_duplicate_total", Help: "Replayed events skipped because they were already stored."}),
		lanes:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "memstream_pipeline_lanes", Help: "Running pipeline lanes."}),
		deadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memstream_pipeline_dead_letters_total", Help: "Records sent to the dead-letter topic, by error class.",
		}, []string{"class"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memstream_pipeline_retries_total", Help: "Stage retries.",
		}, []string{"stage"}),
		stageSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "memstream_pipeline_stage_seconds", Help: "Time spent per stage call (per record for prepare, per batch otherwise).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
		}, []string{"stage"}),
		e2eSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "memstream_pipeline_end_to_end_seconds", Help: "From prepare to acknowledged commit, per record.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}),
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "memstream_pipeline_channel_depth", Help: "Items waiting between stages.",
		}, []string{"channel"}),
	}
	if reg != nil {
		reg.MustRegister(m.in, m.out, m.facts, m.persisted, m.duplicates, m.lanes, m.deadLettered, m.retries, m.stageSeconds, m.e2eSeconds, m.depth)
	}
	return m
}
