package pipeline

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	in, out, facts, persisted, duplicates, units, resumedChunks prometheus.Counter
	lanes                                                       prometheus.Gauge
	deadLettered, retries, stalls                               *prometheus.CounterVec
	stageSeconds                                                *prometheus.HistogramVec
	e2eSeconds                                                  prometheus.Histogram
	depth                                                       *prometheus.GaugeVec
	laneStuck, laneBusy                                         *prometheus.GaugeVec
	stuckOffset                                                 *prometheus.GaugeVec
	unavailable                                                 *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		in:         prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_pipeline_records_in_total", Help: "Records submitted to the pipeline."}),
		out:        prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_pipeline_records_out_total", Help: "Records persisted and acknowledged."}),
		facts:      prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_pipeline_facts_extracted_total", Help: "Facts extracted."}),
		persisted:  prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_pipeline_events_persisted_total", Help: "Events (and units of long events) newly written to PostgreSQL."}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_pipeline_events_duplicate_total", Help: "Replayed events skipped because they were already stored."}),
		units:      prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_pipeline_event_units_total", Help: "Units (one transaction each) of the events stored in several, long or dense with facts."}),
		resumedChunks: prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_pipeline_resumed_chunks_total",
			Help: "Chunks of a long event skipped on redelivery because a previous run had stored them."}),
		lanes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "memstream_pipeline_lanes", Help: "Running pipeline lanes, shared and long."}),
		deadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memstream_pipeline_dead_letters_total", Help: "Records sent to the dead-letter topic, by error class.",
		}, []string{"class"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memstream_pipeline_retries_total", Help: "Stage calls retried.",
		}, []string{"stage"}),
		stalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memstream_pipeline_stalls_total", Help: "Stage failures that stalled records for a retry, by stage and fault class (transient, unavailable, unknown).",
		}, []string{"stage", "class"}),
		stageSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "memstream_pipeline_stage_seconds", Help: "Time spent per successful stage call (per record for prepare, per batch otherwise).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
		}, []string{"stage"}),
		e2eSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "memstream_pipeline_end_to_end_seconds", Help: "From prepare to acknowledged commit, per record.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}),
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "memstream_pipeline_channel_depth", Help: "Items waiting between stages.",
		}, []string{"channel"}),
		laneStuck: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "memstream_pipeline_lane_stuck", Help: "1 while a lane's current step has made no progress for pipeline.max_event_seconds.",
		}, []string{"lane"}),
		laneBusy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "memstream_pipeline_lane_step_seconds", Help: "How long the lane's oldest unfinished step (a stage call, or a stall) has been going on; 0 when idle.",
		}, []string{"lane"}),
		stuckOffset: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "memstream_pipeline_lane_stuck_offset", Help: "Offset of the record a stuck lane is stuck on (present only while stuck).",
		}, []string{"lane", "topic", "partition", "stage"}),
		unavailable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "memstream_pipeline_provider_unavailable", Help: "1 while a stage stalls on an auth or configuration error of its provider or database.",
		}, []string{"stage"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.in, m.out, m.facts, m.persisted, m.duplicates, m.units, m.resumedChunks, m.lanes, m.deadLettered,
			m.retries, m.stalls, m.stageSeconds, m.e2eSeconds, m.depth, m.laneStuck, m.laneBusy, m.stuckOffset, m.unavailable} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("pipeline metrics: %w", err)
			}
		}
	}
	return m, nil
}
