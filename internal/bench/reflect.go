package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/reflect"
	"github.com/memstream/memstream/store"
)

// ReflectResult is the JSON line of `memstream bench reflect`.
type ReflectResult struct {
	Bench        string  `json:"bench"`
	Mode         string  `json:"mode"`
	Facts        int     `json:"facts"`
	Observations int64   `json:"observations"`
	MentalModels int64   `json:"mental_models"`
	Queries      int     `json:"queries"`
	P50MS        float64 `json:"p50_ms"`
	P95MS        float64 `json:"p95_ms"`
	P99MS        float64 `json:"p99_ms"`
	// RecallP50MS and RecallP95MS time one recall call with the request
	// reflect's recall tool makes, on the same queries, in the same run:
	// the baseline of SPEC §7.
	RecallP50MS float64 `json:"recall_p50_ms"`
	RecallP95MS float64 `json:"recall_p95_ms"`
	RatioP50    float64 `json:"ratio_p50_to_recall"`
	RatioP95    float64 `json:"ratio_p95_to_recall"`
	// ToolCallsPerQuery and CitedShare describe the answers: how many
	// tools ran and the share of answers citing at least one source.
	ToolCallsPerQuery float64 `json:"tool_calls_per_query"`
	CitedShare        float64 `json:"cited_share"`
	ObservationShare  float64 `json:"observation_cited_share"`
	// ToolP50MS is each tool's median time, for finding what bounds p50.
	ToolP50MS  map[string]float64 `json:"tool_p50_ms"`
	Errors     int                `json:"errors"`
	GOMAXPROCS int                `json:"gomaxprocs"`
}

// ReflectConfig is what `memstream bench reflect` runs: a fresh schema
// loaded with a synthetic bank (offline embedder), with observations and
// mental models added, and offline reflect timed against a single recall
// call on the same questions.
type ReflectConfig struct {
	Facts           int    // facts in the bank
	Queries         int    // timed reflect questions
	ObservationsPct int    // observations as a percentage of the facts
	MentalModels    int    // mental models in the bank
	DatabaseURL     string // empty: a managed server in a temporary directory
	Dim             int    // embedding dimension of the offline embedder
	Seed            uint64 // corpus seed: the same seed gives the same bank
	Warmup          int    // untimed questions before each timed pass
	Keep            bool   // keep the schema (and the temporary server)
}

// RunReflect runs the reflect benchmark: one JSON line to stdout, progress
// to stderr.
func RunReflect(ctx context.Context, cfg ReflectConfig, stdout, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	progress := func(msg string) { fmt.Fprintf(stderr, "%s bench reflect: %s\n", time.Now().Format("15:04:05"), msg) }

	base, release, err := benchBase(ctx, cfg.DatabaseURL, "memstream-bench-reflect-", cfg.Keep, log, progress)
	if err != nil {
		return err
	}
	defer release()
	schema := fmt.Sprintf("bench_reflect_%d", cfg.Facts)
	su, err := store.CreateSchema(ctx, base, schema, false)
	if err != nil {
		return err
	}
	if !cfg.Keep {
		defer func() {
			if err := store.DropSchema(context.WithoutCancel(ctx), base, schema); err != nil {
				log.Warn("bench reflect: drop schema", slog.String("schema", schema), slog.String("error", err.Error()))
			}
		}()
	}
	st, err := store.Open(ctx, store.Deps{Logger: log}, store.Config{URL: su, Dim: cfg.Dim, MaxConns: 8})
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	emb, err := embed.NewHash(cfg.Dim)
	if err != nil {
		return err
	}
	t0 := time.Now()
	bank, err := LoadBank(ctx, st, emb, BankConfig{
		BankID: fmt.Sprintf("bench-%d", cfg.Facts), Facts: cfg.Facts, Queries: cfg.Queries, Seed: cfg.Seed, Now: bankNow}, progress)
	if err != nil {
		return err
	}
	// The consolidated layer only has to exist in realistic numbers, so
	// that reflect's first two tools do real work: consolidation has its
	// own benchmark.
	nObs, err := st.BulkObservations(ctx, bank.BankID, cfg.Facts*cfg.ObservationsPct/100)
	if err != nil {
		return fmt.Errorf("bench reflect: add observations: %w", err)
	}
	res := ReflectResult{Bench: "reflect", Mode: "offline", Facts: bank.Facts, Observations: nObs,
		Queries: len(bank.Queries), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	questions := make([]string, len(bank.Queries))
	for i, q := range bank.Queries {
		questions[i] = q.Query
	}
	if res.MentalModels, err = st.BulkMentalModels(ctx, bank.BankID, questions[:cfg.MentalModels], bankNow.AddDate(0, 0, -7)); err != nil {
		return fmt.Errorf("bench reflect: add mental models: %w", err)
	}
	if err := st.Analyze(ctx); err != nil {
		return fmt.Errorf("bench reflect: analyze: %w", err)
	}
	progress(fmt.Sprintf("loaded %d facts, %d observations, %d mental models in %s", bank.Facts, res.Observations, res.MentalModels,
		time.Since(t0).Round(time.Second)))

	rc, err := recall.New(recall.Deps{Store: st, Embedder: emb, Logger: log}, recall.Config{})
	if err != nil {
		return err
	}
	rcfg := reflect.Config{}.WithDefaults()
	rf, err := reflect.New(reflect.Deps{Recaller: rc, Store: st, Logger: log, Registerer: prometheus.NewRegistry()}, rcfg)
	if err != nil {
		return err
	}
	now := bankNow

	// The two are interleaved, question by question, alternating which
	// goes first, so that neither gains from a warmer cache or a quieter
	// machine; the baseline is the recall call reflect's recall tool makes.
	lat := make([]time.Duration, 0, len(questions))
	base1 := make([]time.Duration, 0, len(questions))
	var tools, cited, citedObs int
	toolLat := map[string][]time.Duration{}
	nWarm := min(cfg.Warmup, len(questions))
	for i, q := range slices.Concat(questions[:nWarm], questions) {
		timed := i >= nWarm
		doReflect := func() error {
			start := time.Now()
			resp, err := rf.Reflect(ctx, reflect.Request{BankID: bank.BankID, Query: q, QueryTimestamp: &now})
			d := time.Since(start)
			if !timed {
				return nil
			}
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				res.Errors++
				log.Warn("bench reflect: reflect failed", slog.String("error", err.Error()))
				return nil
			}
			lat = append(lat, d)
			tools += len(resp.Trace.ToolCalls)
			for _, tc := range resp.Trace.ToolCalls {
				toolLat[tc.Tool] = append(toolLat[tc.Tool], time.Duration(tc.DurationMS)*time.Millisecond)
			}
			if len(resp.BasedOn.Memories)+len(resp.BasedOn.Observations)+len(resp.BasedOn.MentalModels) > 0 {
				cited++
			}
			if len(resp.BasedOn.Observations) > 0 {
				citedObs++
			}
			return nil
		}
		doRecall := func() error {
			start := time.Now()
			_, err := rc.Recall(ctx, recall.Request{BankID: bank.BankID, Query: q, Types: []string{"world", "experience"},
				QueryTime: now, MaxTokens: rcfg.MaxToolResultTokens})
			d := time.Since(start)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("bench reflect: baseline recall: %w", err)
			}
			if timed {
				base1 = append(base1, d)
			}
			return nil
		}
		first, second := doReflect, doRecall
		if i%2 == 1 {
			first, second = doRecall, doReflect
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
	}
	if len(lat) == 0 {
		return fmt.Errorf("bench reflect: every reflect failed (%d errors)", res.Errors)
	}
	res.P50MS, res.P95MS, res.P99MS = pctMS(lat, 50), pctMS(lat, 95), pctMS(lat, 99)
	res.RecallP50MS, res.RecallP95MS = pctMS(base1, 50), pctMS(base1, 95)
	res.RatioP50 = round2f(res.P50MS / res.RecallP50MS)
	res.RatioP95 = round2f(res.P95MS / res.RecallP95MS)
	res.ToolP50MS = map[string]float64{}
	for tool, ds := range toolLat {
		res.ToolP50MS[tool] = pctMS(ds, 50)
	}
	res.ToolCallsPerQuery = round2f(float64(tools) / float64(len(lat)))
	res.CitedShare = round2f(float64(cited) / float64(len(lat)))
	res.ObservationShare = round2f(float64(citedObs) / float64(len(lat)))
	line, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("bench reflect: %w", err)
	}
	fmt.Fprintln(stdout, string(line))
	progress(fmt.Sprintf("%d facts: reflect p50 %.2f ms, p95 %.2f ms; one recall p50 %.2f ms; ratio %.2fx",
		res.Facts, res.P50MS, res.P95MS, res.RecallP50MS, res.RatioP50))
	return nil
}

// pctMS is the p-th percentile of ds in milliseconds (nearest rank).
func pctMS(ds []time.Duration, p int) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p+99)/100 - 1
	i = max(0, min(i, len(s)-1))
	return round2f(float64(s[i].Microseconds()) / 1000)
}

func round2f(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }
