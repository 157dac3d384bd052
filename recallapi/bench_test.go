package recallapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// BenchmarkMentalModelGetHTTP measures a cached mental-model GET end to
// end over loopback HTTP with keep-alive, the way an agent reads its
// model before each turn. It reports p50 and p99 besides ns/op.
func BenchmarkMentalModelGetHTTP(b *testing.B) {
	e := newEnv(b, envOpts{})
	c := e.call("POST", "/v1/default/banks/b1/mental-models", `{"name":"m","source_query":"q","content":"Alice prefers green tea and short answers."}`, "")
	if c.status != 201 {
		b.Fatalf("create: %d %s", c.status, c.raw)
	}
	ts := httptest.NewServer(e.h)
	defer ts.Close()
	url := ts.URL + "/v1/default/banks/b1/mental-models/" + c.body["id"].(string)
	client := ts.Client()
	get := func() {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+adminKey)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	get() // fill the cache
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		get()
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50_us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99_us")
	if hits := e.cacheCount("hit"); hits < float64(b.N) {
		b.Fatalf("only %v of %d GETs were cache hits", hits, b.N)
	}
}
