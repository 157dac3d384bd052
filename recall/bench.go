package recall

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"
)

// qRawHNSW is the baseline of `memstream bench recall` (SPEC §7): the one
// index probe a plain vector store would make, with the server's default
// hnsw settings.
const qRawHNSW = `SELECT id FROM memory_units WHERE bank_id = $1 ORDER BY embedding <=> $2 LIMIT 10`

// BenchResult is one configuration of `memstream bench recall`: recall
// latency at a concurrency, against the raw HNSW query measured on the
// same table, with the same queries, at the same concurrency.
type BenchResult struct {
	Bench       string  `json:"bench"`
	Facts       int     `json:"facts"`
	Entities    int     `json:"entities"`
	Links       int     `json:"links"`
	Concurrency int     `json:"concurrency"`
	Queries     int     `json:"queries"`
	Budget      string  `json:"budget"`
	Arms        string  `json:"arms"`
	P50MS       float64 `json:"p50_ms"`
	P95MS       float64 `json:"p95_ms"`
	P99MS       float64 `json:"p99_ms"`
	QPS         float64 `json:"qps"`
	Errors      int     `json:"errors"`
	// ArmErrors counts arms dropped from answers (timeouts included).
	ArmErrors int `json:"arm_errors"`
	// ArmP50MS is each arm's median time, for finding what bounds p50.
	ArmP50MS map[string]float64 `json:"arm_p50_ms"`
	// EmbedP50MS is the query embedding's median time; ArmsP50MS the
	// median time until the last arm is done, HydrateP50MS and
	// ScoreP50MS of what follows (see Trace).
	EmbedP50MS   float64 `json:"embed_p50_ms"`
	ArmsP50MS    float64 `json:"arms_p50_ms"`
	HydrateP50MS float64 `json:"hydrate_p50_ms"`
	ScoreP50MS   float64 `json:"score_p50_ms"`
	MeanResults  float64 `json:"mean_results"`
	MeanTokens   float64 `json:"mean_tokens"`
	RawHNSWP50MS float64 `json:"raw_hnsw_p50_ms"`
	RawHNSWP99MS float64 `json:"raw_hnsw_p99_ms"`
	RawHNSWQPS   float64 `json:"raw_hnsw_qps"`
	// RatioP50 is P50MS / RawHNSWP50MS; the target is ≤ 10.
	RatioP50   float64 `json:"ratio_p50_to_raw_hnsw"`
	GOMAXPROCS int     `json:"gomaxprocs"`
}

// RunBench asks bank's queries through r at the given concurrency, then
// runs the raw HNSW baseline with the same queries' embeddings at the same
// concurrency. The first warmup queries of each pass are not timed, so
// both measure a warm cache.
func RunBench(ctx context.Context, r *Recaller, pool *pgxpool.Pool, emb Embedder, bank *BenchBank, concurrency, warmup int) (BenchResult, error) {
	res := BenchResult{Bench: "recall", Facts: bank.Facts, Entities: bank.Entities, Links: bank.Links,
		Concurrency: concurrency, Queries: len(bank.Queries), Budget: BudgetMid, Arms: "semantic,keyword,graph,temporal",
		GOMAXPROCS: runtime.GOMAXPROCS(0), ArmP50MS: map[string]float64{}}
	if concurrency < 1 {
		return res, fmt.Errorf("bench recall: concurrency must be positive, got %d", concurrency)
	}
	qs := bank.Queries

	// Recall pass.
	var (
		mu       sync.Mutex
		lat      = make([]time.Duration, 0, len(qs))
		arms     = map[string][]float64{}
		embeds   []float64
		phases   [3][]float64 // arms, hydrate, score
		nRes     int
		nTok     int
		errs     int
		armErrs  int
		firstErr error
	)
	for i := range min(warmup, len(qs)) {
		req := qs[i]
		if _, err := r.Recall(ctx, req); err != nil {
			return res, fmt.Errorf("bench recall: warmup: %w", err)
		}
	}
	elapsed, err := runConcurrent(ctx, len(qs), concurrency, func(i int) {
		req := qs[i]
		req.Trace = true // the trace gives per-arm times; it costs a few small slices
		t0 := time.Now()
		resp, err := r.Recall(ctx, req)
		d := time.Since(t0)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs++
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		lat = append(lat, d)
		nRes += len(resp.Results)
		nTok += resp.Trace.TokensUsed
		embeds = append(embeds, resp.Trace.EmbedMS)
		for k, v := range []float64{resp.Trace.ArmsMS, resp.Trace.HydrateMS, resp.Trace.ScoreMS} {
			phases[k] = append(phases[k], v)
		}
		for _, a := range resp.Trace.Arms {
			arms[a.Arm] = append(arms[a.Arm], a.DurationMS)
			if a.Error != "" {
				armErrs++
			}
		}
	})
	if err != nil {
		return res, err
	}
	if len(lat) == 0 {
		return res, fmt.Errorf("bench recall: every query failed: %w", firstErr)
	}
	res.P50MS, res.P95MS, res.P99MS = pct(lat, 0.50), pct(lat, 0.95), pct(lat, 0.99)
	res.QPS = float64(len(lat)) / elapsed.Seconds()
	res.Errors, res.ArmErrors = errs, armErrs
	res.MeanResults = float64(nRes) / float64(len(lat))
	res.MeanTokens = float64(nTok) / float64(len(lat))
	for a, ds := range arms {
		res.ArmP50MS[a] = pctF(ds, 0.5)
	}
	res.EmbedP50MS = pctF(embeds, 0.5)
	res.ArmsP50MS, res.HydrateP50MS, res.ScoreP50MS = pctF(phases[0], 0.5), pctF(phases[1], 0.5), pctF(phases[2], 0.5)

	// Raw HNSW pass: embeddings computed beforehand, so it times the
	// index probe and the round trip only.
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.Query
	}
	vecs, err := emb.Embed(ctx, texts)
	if err != nil {
		return res, fmt.Errorf("bench recall: embed queries: %w", err)
	}
	raw := func(i int) error {
		rows, err := pool.Query(ctx, qRawHNSW, bank.BankID, pgvector.NewHalfVector(vecs[i]))
		if err != nil {
			return err
		}
		n := 0
		for rows.Next() {
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("raw hnsw query returned nothing")
		}
		return nil
	}
	for i := range min(warmup, len(qs)) {
		if err := raw(i); err != nil {
			return res, fmt.Errorf("bench recall: raw hnsw: %w", err)
		}
	}
	rawLat := make([]time.Duration, len(qs))
	var rawErr atomic.Value
	elapsed, err = runConcurrent(ctx, len(qs), concurrency, func(i int) {
		t0 := time.Now()
		if err := raw(i); err != nil {
			rawErr.CompareAndSwap(nil, err)
		}
		rawLat[i] = time.Since(t0)
	})
	if err != nil {
		return res, err
	}
	if e := rawErr.Load(); e != nil {
		return res, fmt.Errorf("bench recall: raw hnsw: %w", e.(error))
	}
	res.RawHNSWP50MS, res.RawHNSWP99MS = pct(rawLat, 0.5), pct(rawLat, 0.99)
	res.RawHNSWQPS = float64(len(qs)) / elapsed.Seconds()
	res.RatioP50 = res.P50MS / res.RawHNSWP50MS
	return res, nil
}

// runConcurrent calls fn(0..n-1) from c workers and returns the wall time.
func runConcurrent(ctx context.Context, n, c int, fn func(i int)) (time.Duration, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("bench recall: %w", err)
	}
	return time.Since(t0), nil
}

// pct is the nearest-rank percentile in milliseconds.
func pct(ds []time.Duration, p float64) float64 {
	fs := make([]float64, len(ds))
	for i, d := range ds {
		fs[i] = float64(d.Microseconds()) / 1000
	}
	return pctF(fs, p)
}

func pctF(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
