package bench

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The profile's stage times are differences of two scrapes of a live
// metrics page; a wrong label key or a counter read as a histogram would
// report nothing or the totals since start.
func TestScrapeDelta(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "memstream_pipeline_stage_seconds"}, []string{"stage"})
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_pipeline_records_out_total"})
	other := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "memstream_pipeline_stage_seconds_other"})
	reg.MustRegister(h, c, other)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	ctx := context.Background()

	h.WithLabelValues("persist").Observe(5) // before the window: not counted
	c.Add(7)
	before, err := scrape(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	h.WithLabelValues("persist").Observe(0.2)
	h.WithLabelValues("persist").Observe(0.4)
	h.WithLabelValues("embed").Observe(0.01)
	other.Observe(1)
	c.Add(3)
	after, err := scrape(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	d := delta(before, after, "memstream_pipeline_stage_seconds")
	if len(d) != 2 {
		t.Fatalf("delta keys = %v, want stage=persist and stage=embed only", d)
	}
	p := d["stage=persist"]
	if p.Count != 2 || p.SumS < 0.599 || p.SumS > 0.601 || p.MeanMS < 299 || p.MeanMS > 301 {
		t.Errorf("persist delta = %+v, want 2 calls, 0.6 s, mean 300 ms", p)
	}
	if e := d["stage=embed"]; e.Count != 1 {
		t.Errorf("embed delta = %+v, want 1 call", e)
	}
	if n := after["memstream_pipeline_records_out_total"].Count - before["memstream_pipeline_records_out_total"].Count; n != 3 {
		t.Errorf("counter delta = %v, want 3", n)
	}
}
