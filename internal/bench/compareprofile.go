package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// SideProfile says where one memstream side's time went (bench compare
// --profile): a timeline of the ingest from memstream's own counters,
// the server-side time of each stage and route over the ingest window,
// and per-part timings of the recall questions asked again with trace.
type SideProfile struct {
	System string `json:"system"`
	Round  int    `json:"round"`
	// Timeline, seconds from the first retain sent (the counters are
	// sampled every SampleMS).
	RetainsAnsweredS float64 `json:"retains_answered_s"`
	FirstPersistedS  float64 `json:"first_persisted_s"`
	AllPersistedS    float64 `json:"all_persisted_s"`
	FirstBankFoundS  float64 `json:"first_bank_found_s"`
	QueryableS       float64 `json:"queryable_s"`
	QueryablePolls   int     `json:"queryable_polls"`
	SampleMS         int     `json:"sample_ms"`
	// Ingest window (first retain to queryable): per stage the number of
	// calls, their summed seconds and mean milliseconds.
	Stages map[string]statSum `json:"stages"`
	// Routes over the ingest window (retain, recall) and over the timed
	// recalls.
	IngestRoutes map[string]statSum `json:"ingest_routes"`
	RecallRoutes map[string]statSum `json:"recall_routes"`
	EndToEnd     statSum            `json:"pipeline_end_to_end"`
	Commits      float64            `json:"consumer_commits"`
	Consolidate  map[string]statSum `json:"consolidation_phases_ingest_window"`
	// The timed questions asked again with trace: p50 of each part, in ms.
	Trace map[string]float64 `json:"trace_p50_ms"`
	// FakeEmbedP50MS is one query embedding from the fake server, timed
	// from the bench process over HTTP (what recall's embed costs at
	// least).
	FakeEmbedP50MS float64 `json:"fake_embed_p50_ms"`
}

type statSum struct {
	Count  float64 `json:"count"`
	SumS   float64 `json:"sum_s"`
	MeanMS float64 `json:"mean_ms"`
}

// scrape reads a Prometheus text page into sums: "name{label=value}" →
// count and sum for histograms, value for counters (in Count).
func scrape(ctx context.Context, base string) (map[string]statSum, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]statSum{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			key := name + labelKey(m)
			switch {
			case m.GetHistogram() != nil:
				out[key] = statSum{Count: float64(m.GetHistogram().GetSampleCount()), SumS: m.GetHistogram().GetSampleSum()}
			case m.GetCounter() != nil:
				out[key] = statSum{Count: m.GetCounter().GetValue()}
			}
		}
	}
	return out, nil
}

func labelKey(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	if len(parts) == 0 {
		return ""
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// delta is after − before for the keys of one metric, keyed by their label
// part, with the mean of histograms.
func delta(before, after map[string]statSum, metric string) map[string]statSum {
	out := map[string]statSum{}
	for k, a := range after {
		rest, ok := strings.CutPrefix(k, metric)
		if !ok || (rest != "" && rest[0] != '{') {
			continue
		}
		b := before[k]
		d := statSum{Count: a.Count - b.Count, SumS: a.SumS - b.SumS}
		if d.Count == 0 {
			continue
		}
		if d.SumS > 0 {
			d.MeanMS = 1000 * d.SumS / d.Count
		}
		out[strings.Trim(rest, "{}")] = d
	}
	return out
}

// sampler polls records_out_total while the ingest runs.
type sampler struct {
	base     string
	start    time.Time
	every    time.Duration
	baseline float64
	want     float64
	mu       sync.Mutex
	first    time.Duration
	all      time.Duration
	stop     chan struct{}
	done     chan struct{}
}

func startSampler(ctx context.Context, base string, start time.Time, baseline, want float64) *sampler {
	s := &sampler{base: base, start: start, every: 100 * time.Millisecond, baseline: baseline, want: want,
		stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(s.every)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			m, err := scrape(ctx, base)
			if err != nil {
				continue
			}
			out := m["memstream_pipeline_records_out_total"].Count - s.baseline
			el := time.Since(s.start)
			s.mu.Lock()
			if out > 0 && s.first == 0 {
				s.first = el
			}
			if out >= s.want && s.all == 0 {
				s.all = el
			}
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *sampler) finish() (first, all time.Duration) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first, s.all
}

type traceResp struct {
	Results []json.RawMessage `json:"results"`
	Trace   *struct {
		EmbedMS   float64 `json:"embed_ms"`
		ArmsMS    float64 `json:"arms_ms"`
		HydrateMS float64 `json:"hydrate_ms"`
		ScoreMS   float64 `json:"score_ms"`
		TotalMS   float64 `json:"total_ms"`
		Arms      []struct {
			Arm        string  `json:"arm"`
			DurationMS float64 `json:"duration_ms"`
		} `json:"arms"`
	} `json:"trace"`
}

// traceRecalls asks the questions again with trace on and returns the p50
// of each part: client round trip, recall's total, embed, each arm, until
// the last arm, hydrate, score; "outside_recall" is the client round trip
// minus recall's total (HTTP, JSON, the API's entity states).
func traceRecalls(ctx context.Context, base string, qs []struct{ bank, q string }, maxTokens int) (map[string]float64, error) {
	parts := map[string][]float64{}
	for _, q := range qs {
		t0 := time.Now()
		var r traceResp
		if err := postJSON(ctx, base+"/v1/default/banks/"+q.bank+"/memories/recall", map[string]any{"query": q.q, "max_tokens": maxTokens, "trace": true}, &r); err != nil {
			return nil, err
		}
		client := float64(time.Since(t0).Microseconds()) / 1000
		if r.Trace == nil {
			return nil, fmt.Errorf("recall answered without a trace")
		}
		parts["client"] = append(parts["client"], client)
		parts["recall_total"] = append(parts["recall_total"], r.Trace.TotalMS)
		parts["outside_recall"] = append(parts["outside_recall"], client-r.Trace.TotalMS)
		parts["embed"] = append(parts["embed"], r.Trace.EmbedMS)
		parts["arms_until_last"] = append(parts["arms_until_last"], r.Trace.ArmsMS)
		parts["hydrate"] = append(parts["hydrate"], r.Trace.HydrateMS)
		parts["score_and_cut"] = append(parts["score_and_cut"], r.Trace.ScoreMS)
		slowest, name := 0.0, ""
		for _, a := range r.Trace.Arms {
			parts["arm_"+a.Arm] = append(parts["arm_"+a.Arm], a.DurationMS)
			if a.DurationMS > slowest {
				slowest, name = a.DurationMS, a.Arm
			}
		}
		parts["slowest_arm_is_"+name] = append(parts["slowest_arm_is_"+name], 1)
	}
	out := map[string]float64{}
	for k, xs := range parts {
		if strings.HasPrefix(k, "slowest_arm_is_") {
			out[k] = float64(len(xs)) // a count, not a time
			continue
		}
		out[k] = math.Round(pctF(xs, 0.5)*1000) / 1000
	}
	return out, nil
}

// fakeEmbedP50 times n single-query embeddings from the fake server.
func fakeEmbedP50(ctx context.Context, url string, n int) float64 {
	var lat []time.Duration
	for i := range n {
		t0 := time.Now()
		if err := postJSON(ctx, url+"/embeddings", map[string]any{"model": "text-embedding-3-small", "input": []string{fmt.Sprintf("what did we decide about ticket %d", i)}}, nil); err != nil {
			return 0
		}
		lat = append(lat, time.Since(t0))
	}
	return pct(lat, 0.5)
}
