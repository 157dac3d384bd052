package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/store"
)

// RecallConfig is what `memstream bench recall` runs: for each bank size in
// Facts, a fresh schema loaded with a synthetic bank, then recall timed at
// each concurrency against a raw HNSW query on the same table (SPEC §7).
type RecallConfig struct {
	Facts       []int  // bank sizes
	Queries     int    // timed recall queries per configuration
	Concurrency []int  // concurrent clients
	DatabaseURL string // empty: a managed server in a temporary directory
	Dim         int    // embedding dimension of the offline embedder
	Seed        uint64 // corpus seed: the same seed gives the same bank
	Warmup      int    // untimed queries before each timed pass
	Keep        bool   // keep the schemas (and the temporary server)
	Reuse       bool   // reuse banks a Keep run left instead of loading again
	// Banks above 1 spreads each size of Facts over that many banks of
	// Zipf-skewed sizes in one table, and times the largest bank, the
	// smallest and a pool of queries from every bank.
	Banks int
	// Embedders are the embedding providers to run, one bank per provider
	// and size, same facts and queries; empty means the hash embedder.
	Embedders []string
	// NewEmbedder builds a provider's embedder (needed for providers other
	// than hash). It should not cache: every timed query pays the model.
	NewEmbedder func(provider string, dim int) (embed.Embedder, error)
	// Passes is how many times each configuration is timed (see passes);
	// 0 means the default.
	Passes int
	// BankIndexes is the policy of the banks' own HNSW indexes in a
	// many-bank run, applied after the load (or on reuse) as the worker
	// does in production; MaxIndexes 0 drops them all.
	BankIndexes store.BankIndexPolicy
}

// bankNow is the query timestamp of the synthetic banks: fixed, so that
// "last Saturday" means the same days in every run.
var bankNow = time.Date(2025, 6, 11, 12, 0, 0, 0, time.UTC)

// RunRecall runs the recall benchmark: one JSON line per configuration to
// stdout, progress to stderr.
func RunRecall(ctx context.Context, cfg RecallConfig, stdout, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	progress := func(msg string) { fmt.Fprintf(stderr, "%s bench recall: %s\n", time.Now().Format("15:04:05"), msg) }

	base, release, err := benchBase(ctx, cfg.DatabaseURL, "memstream-bench-recall-", cfg.Keep, log, progress)
	if err != nil {
		return err
	}
	defer release()
	providers := cfg.Embedders
	if len(providers) == 0 {
		providers = []string{"hash"}
	}
	embs := make([]embed.Embedder, len(providers))
	for i, p := range providers {
		if p == "hash" || cfg.NewEmbedder == nil {
			if p != "hash" {
				return fmt.Errorf("bench recall: no constructor for embedder %q", p)
			}
			embs[i], err = embed.NewHash(cfg.Dim)
		} else {
			embs[i], err = cfg.NewEmbedder(p, cfg.Dim)
		}
		if err != nil {
			return err
		}
	}
	maxConc := 1
	for _, c := range cfg.Concurrency {
		maxConc = max(maxConc, c)
	}
	for _, n := range cfg.Facts {
		if cfg.Banks > 1 {
			// The many-banks mode runs on the first embedder.
			if err := recallMany(ctx, cfg, base, n, maxConc, embs[0], log, progress, stdout); err != nil {
				return err
			}
			continue
		}
		loaded := make([]*loadedBank, 0, len(providers))
		closeAll := func() {
			for _, l := range loaded {
				l.close()
			}
		}
		for i, p := range providers {
			l, err := loadSize(ctx, cfg, base, n, maxConc, p, embs[i], log, progress)
			if err != nil {
				closeAll()
				return err
			}
			loaded = append(loaded, l)
			if err := l.time(ctx, cfg, progress, stdout); err != nil {
				closeAll()
				return err
			}
		}
		if len(loaded) > 1 {
			if err := pairedRecall(ctx, loaded, cfg.Warmup, progress, stdout); err != nil {
				closeAll()
				return err
			}
		}
		closeAll()
	}
	return nil
}

// loadedBank is one provider's bank of one size, open for timing.
type loadedBank struct {
	provider string
	facts    int
	st       *store.Store
	r        *recall.Recaller
	emb      embed.Embedder
	bank     *Bank
	log      *slog.Logger
	close    func()
}

// time runs every concurrency on the bank, one JSON line each.
func (l *loadedBank) time(ctx context.Context, cfg RecallConfig, progress func(string), stdout io.Writer) error {
	raw, err := l.st.RawSearcher(ctx, false)
	if err != nil {
		return err
	}
	defer raw.Close()
	for pass := range passes(cfg) {
		for _, c := range cfg.Concurrency {
			r := l.r
			if pass > 0 {
				// Fresh term statistics: only the database's cache is warm.
				if r, err = recall.New(recall.Deps{Store: l.st, Embedder: l.emb, Logger: l.log}, recall.Config{}); err != nil {
					return err
				}
			}
			progress(fmt.Sprintf("%s pass, %s, %d facts: %d queries at concurrency %d", passName(pass), l.provider, l.facts, cfg.Queries, c))
			res, err := runRecall(ctx, r, raw, l.emb, l.bank, c, cfg.Warmup)
			if err != nil {
				return err
			}
			res.Embedder, res.Pass = l.provider, passName(pass)
			line, err := json.Marshal(res)
			if err != nil {
				return fmt.Errorf("bench recall: %w", err)
			}
			fmt.Fprintln(stdout, string(line))
			progress(fmt.Sprintf("%s pass, %s, %d facts, c=%d: p50 %.2f ms, p95 %.2f ms, p99 %.2f ms, %.0f QPS; raw HNSW p50 %.2f ms; ratio %.1fx",
				passName(pass), l.provider, l.facts, c, res.P50MS, res.P95MS, res.P99MS, res.QPS, res.RawHNSWP50MS, res.RatioP50))
		}
	}
	return nil
}

// PairedResult compares embedders on banks of the same facts and queries:
// query i is asked of every bank in turn (the order rotating with i), one
// at a time, so load that comes and goes on a shared machine falls on all
// of them alike.
type PairedResult struct {
	Bench     string             `json:"bench"`
	Facts     int                `json:"facts"`
	Queries   int                `json:"queries"`
	Embedders []string           `json:"embedders"`
	P50MS     map[string]float64 `json:"p50_ms"`
	P95MS     map[string]float64 `json:"p95_ms"`
	EmbedP50  map[string]float64 `json:"embed_p50_ms"`
	// RatioP50 is each embedder's p50 over the first one's.
	RatioP50 map[string]float64 `json:"ratio_p50_to_first"`
}

func pairedRecall(ctx context.Context, banks []*loadedBank, warmup int, progress func(string), stdout io.Writer) error {
	qs := banks[0].bank.Queries
	res := PairedResult{Bench: "recall_paired", Facts: banks[0].facts, Queries: len(qs), P50MS: map[string]float64{},
		P95MS: map[string]float64{}, EmbedP50: map[string]float64{}, RatioP50: map[string]float64{}}
	lat := make([][]time.Duration, len(banks))
	emb := make([][]float64, len(banks))
	for _, b := range banks {
		if len(b.bank.Queries) != len(qs) {
			return fmt.Errorf("bench recall: paired banks have %d and %d queries", len(qs), len(b.bank.Queries))
		}
		res.Embedders = append(res.Embedders, b.provider)
		for i := range min(warmup, len(qs)) {
			if _, err := b.r.Recall(ctx, b.bank.Queries[i]); err != nil {
				return fmt.Errorf("bench recall: paired warmup: %w", err)
			}
		}
	}
	progress(fmt.Sprintf("%d facts: %d queries asked of %v in turn", res.Facts, len(qs), res.Embedders))
	for i := range qs {
		for j := range banks {
			k := (i + j) % len(banks)
			req := banks[k].bank.Queries[i]
			req.Trace = true
			t0 := time.Now()
			resp, err := banks[k].r.Recall(ctx, req)
			d := time.Since(t0)
			if err != nil {
				return fmt.Errorf("bench recall: paired %s: %w", banks[k].provider, err)
			}
			lat[k] = append(lat[k], d)
			emb[k] = append(emb[k], resp.Trace.EmbedMS)
		}
	}
	for k, b := range banks {
		res.P50MS[b.provider], res.P95MS[b.provider] = pct(lat[k], 0.5), pct(lat[k], 0.95)
		res.EmbedP50[b.provider] = pctF(emb[k], 0.5)
		res.RatioP50[b.provider] = res.P50MS[b.provider] / res.P50MS[banks[0].provider]
	}
	line, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("bench recall: %w", err)
	}
	fmt.Fprintln(stdout, string(line))
	for _, b := range banks {
		progress(fmt.Sprintf("paired, %d facts: %s p50 %.2f ms (embedding %.2f ms), p95 %.2f ms, %.2fx the first",
			res.Facts, b.provider, res.P50MS[b.provider], res.EmbedP50[b.provider], res.P95MS[b.provider], res.RatioP50[b.provider]))
	}
	return nil
}

// loadSize loads one provider's bank of one size in a schema of its own.
// close drops the schema (unless Keep) and closes the store.
func loadSize(ctx context.Context, cfg RecallConfig, base string, facts, maxConc int, provider string, emb embed.Embedder, log *slog.Logger, progress func(string)) (*loadedBank, error) {
	schema := fmt.Sprintf("bench_recall_%d", facts)
	if provider != "hash" {
		schema += "_" + provider
	}
	su, err := store.CreateSchema(ctx, base, schema, cfg.Reuse)
	if err != nil {
		return nil, err
	}
	l := &loadedBank{provider: provider, facts: facts, emb: emb, log: log}
	l.close = func() {
		if l.st != nil {
			l.st.Close()
		}
		if !cfg.Keep {
			_ = store.DropSchema(context.WithoutCancel(ctx), base, schema)
		}
	}
	// A recall holds up to four connections (one per arm).
	l.st, err = store.Open(ctx, store.Deps{Logger: log}, store.Config{URL: su, Dim: cfg.Dim, MaxConns: 4*maxConc + 4, Embedder: provider})
	if err != nil {
		l.close()
		return nil, err
	}
	if _, err := l.st.Migrate(ctx); err != nil {
		l.close()
		return nil, err
	}
	t0 := time.Now()
	l.bank, err = LoadBank(ctx, l.st, emb, BankConfig{
		BankID: fmt.Sprintf("bench-%d", facts), Facts: facts, Queries: cfg.Queries, Seed: cfg.Seed, Now: bankNow, Reuse: cfg.Reuse}, progress)
	if err != nil {
		l.close()
		return nil, err
	}
	progress(fmt.Sprintf("%s: loaded %d facts, %d entities, %d links in %s", provider, l.bank.Facts, l.bank.Entities, l.bank.Links, time.Since(t0).Round(time.Second)))
	l.r, err = recall.New(recall.Deps{Store: l.st, Embedder: emb, Logger: log}, recall.Config{})
	if err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

// RecallResult is one configuration of `memstream bench recall`: recall
// latency at a concurrency, against the raw HNSW query measured on the
// same table, with the same queries, at the same concurrency.
type RecallResult struct {
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
	// ArmP99MS and ArmsP99MS are the same at p99, for finding what
	// bounds the tail.
	ArmP99MS  map[string]float64 `json:"arm_p99_ms"`
	ArmsP99MS float64            `json:"arms_p99_ms"`
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
	// Embedder is the embedding provider of the bank and the queries.
	Embedder string `json:"embedder"`
	// RatioP50 is P50MS / RawHNSWP50MS; the target is ≤ 10.
	RatioP50   float64 `json:"ratio_p50_to_raw_hnsw"`
	GOMAXPROCS int     `json:"gomaxprocs"`
	// Set, Banks and TableFacts describe a many-bank run: which queries
	// (largest_bank, small_bank, all_banks), how many banks share the
	// table, and how many facts it holds. Facts is then the queried bank's.
	Set        string `json:"set,omitempty"`
	Banks      int    `json:"banks,omitempty"`
	TableFacts int    `json:"table_facts,omitempty"`
	// BankIndexes is how many banks of the table had an HNSW index of
	// their own (store.BankIndexPass) during the pass.
	BankIndexes int `json:"bank_indexes"`
	// LoadAvg is /proc/loadavg's 1-minute figure when the pass started.
	LoadAvg string `json:"loadavg_1m"`
	// Pass is "cold" for the first timing of a configuration, "warm" for
	// the same queries timed again (see passName).
	Pass string `json:"pass"`
}

// runRecall asks bank's queries through r at the given concurrency, then
// runs the raw HNSW baseline with the same queries' embeddings at the same
// concurrency. The first warmup queries of each pass are not timed, so
// both measure a warm cache.
func runRecall(ctx context.Context, r *recall.Recaller, raw *store.RawSearcher, emb recall.Embedder, bank *Bank, concurrency, warmup int) (RecallResult, error) {
	res := RecallResult{Bench: "recall", Facts: bank.Facts, Entities: bank.Entities, Links: bank.Links,
		Concurrency: concurrency, Queries: len(bank.Queries), Budget: recall.BudgetMid, Arms: "semantic,keyword,graph,temporal",
		GOMAXPROCS: runtime.GOMAXPROCS(0), ArmP50MS: map[string]float64{}, ArmP99MS: map[string]float64{}, LoadAvg: loadAvg()}
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
		res.ArmP50MS[a], res.ArmP99MS[a] = pctF(ds, 0.5), pctF(ds, 0.99)
	}
	res.EmbedP50MS = pctF(embeds, 0.5)
	res.ArmsP50MS, res.HydrateP50MS, res.ScoreP50MS = pctF(phases[0], 0.5), pctF(phases[1], 0.5), pctF(phases[2], 0.5)
	res.ArmsP99MS = pctF(phases[0], 0.99)

	// Raw HNSW pass: embeddings computed beforehand, so it times the
	// index probe and the round trip only.
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.Query
	}
	vecs, err := emb.EmbedQueries(ctx, texts)
	if err != nil {
		return res, fmt.Errorf("bench recall: embed queries: %w", err)
	}
	// The baseline (SPEC §7): the one index probe a plain vector store
	// would make, with the server's default hnsw settings (and, with many
	// banks in the table, the iterative scan: see store.RawSearcher).
	probe := func(i int) error {
		n, err := raw.Nearest(ctx, qs[i].BankID, vecs[i], 10)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("raw hnsw query returned nothing")
		}
		return nil
	}
	for i := range min(warmup, len(qs)) {
		if err := probe(i); err != nil {
			return res, fmt.Errorf("bench recall: raw hnsw: %w", err)
		}
	}
	rawLat := make([]time.Duration, len(qs))
	var rawErr atomic.Value
	elapsed, err = runConcurrent(ctx, len(qs), concurrency, func(i int) {
		t0 := time.Now()
		if err := probe(i); err != nil {
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
