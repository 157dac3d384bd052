package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/store"
)

// benchRecallNow is the query timestamp of the synthetic banks: fixed, so
// that "last Saturday" means the same days in every run.
var benchRecallNow = time.Date(2025, 6, 11, 12, 0, 0, 0, time.UTC)

// benchRecall runs `memstream bench recall`: for each bank size, a fresh
// schema is loaded with a synthetic bank, then recall is timed at each
// concurrency against a raw HNSW query on the same table (SPEC §7). One
// JSON line per configuration goes to stdout, progress to stderr.
func benchRecall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench recall", flag.ContinueOnError)
	fs.SetOutput(stderr)
	factsFlag := fs.String("facts", "10000,100000", "bank sizes, comma-separated")
	queries := fs.Int("queries", 1000, "timed recall queries per configuration")
	concFlag := fs.String("concurrency", "1,8", "concurrent clients, comma-separated")
	dbURL := fs.String("database-url", "", "PostgreSQL with pgvector and pg_trgm (default: a managed server in a temporary directory)")
	dim := fs.Int("dim", 384, "embedding dimension of the offline embedder")
	seed := fs.Uint64("seed", 1, "corpus seed (same seed, same bank)")
	warmup := fs.Int("warmup", 50, "untimed queries before each timed pass")
	keep := fs.Bool("keep", false, "keep the bench schemas (and the temporary server) for inspection")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the whole run to this file")
	reuse := fs.Bool("reuse", false, "with --database-url: reuse banks a --keep run left instead of loading again (implies --keep)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: memstream bench recall [--facts 10000,100000] [--queries 1000] [--concurrency 1,8] [--database-url URL]\n\n"+
			"Loads synthetic banks (offline embedder, entities and links), runs recall with all four\n"+
			"arms and reports p50/p95/p99, QPS and the ratio to a raw HNSW top-10 query. Flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("bench recall: unexpected argument %q", fs.Arg(0))
	}
	sizes, err := intList(*factsFlag, "--facts")
	if err != nil {
		return err
	}
	concs, err := intList(*concFlag, "--concurrency")
	if err != nil {
		return err
	}
	if *reuse {
		if *dbURL == "" {
			return fmt.Errorf("bench recall: --reuse needs --database-url")
		}
		*keep = true
	}
	if *queries < 1 {
		return fmt.Errorf("bench recall: --queries must be positive, got %d", *queries)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("bench recall: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("bench recall: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	progress := func(msg string) { fmt.Fprintf(stderr, "%s bench recall: %s\n", time.Now().Format("15:04:05"), msg) }

	base, release, err := benchBase(ctx, *dbURL, "memstream-bench-recall-", *keep, log, progress)
	if err != nil {
		return err
	}
	defer release()
	emb, err := embed.NewLocal(*dim)
	if err != nil {
		return err
	}
	maxConc := 1
	for _, c := range concs {
		maxConc = max(maxConc, c)
	}
	for _, n := range sizes {
		if err := benchRecallSize(ctx, base, n, *queries, concs, maxConc, *dim, *seed, *warmup, *keep, *reuse, emb, log, progress, stdout); err != nil {
			return err
		}
	}
	return nil
}

func benchRecallSize(ctx context.Context, base string, facts, queries int, concs []int, maxConc, dim int, seed uint64, warmup int, keep, reuse bool,
	emb *embed.Local, log *slog.Logger, progress func(string), stdout io.Writer) error {
	schema := fmt.Sprintf("bench_recall_%d", facts)
	su, err := openSchemaURL(ctx, base, schema, reuse)
	if err != nil {
		return err
	}
	if !keep {
		defer dropSchema(context.WithoutCancel(ctx), base, schema)
	}
	// A recall holds up to four connections (one per arm).
	st, err := store.Open(ctx, store.Config{URL: su, Dim: dim, MaxConns: 4*maxConc + 4}, log)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	t0 := time.Now()
	bank, err := recall.LoadBenchBank(ctx, st.Pool(), emb, recall.BenchBankConfig{
		BankID: fmt.Sprintf("bench-%d", facts), Facts: facts, Queries: queries, Seed: seed, Now: benchRecallNow, Reuse: reuse}, progress)
	if err != nil {
		return err
	}
	progress(fmt.Sprintf("loaded %d facts, %d entities, %d links in %s", bank.Facts, bank.Entities, bank.Links, time.Since(t0).Round(time.Second)))
	r, err := recall.New(st.Pool(), emb, recall.Config{}, log)
	if err != nil {
		return err
	}
	for _, c := range concs {
		progress(fmt.Sprintf("%d facts: %d queries at concurrency %d", facts, queries, c))
		res, err := recall.RunBench(ctx, r, st.Pool(), emb, bank, c, warmup)
		if err != nil {
			return err
		}
		line, err := json.Marshal(res)
		if err != nil {
			return fmt.Errorf("bench recall: %w", err)
		}
		fmt.Fprintln(stdout, string(line))
		progress(fmt.Sprintf("%d facts, c=%d: p50 %.2f ms, p95 %.2f ms, p99 %.2f ms, %.0f QPS; raw HNSW p50 %.2f ms; ratio %.1fx",
			facts, c, res.P50MS, res.P95MS, res.P99MS, res.QPS, res.RawHNSWP50MS, res.RatioP50))
	}
	return nil
}

func intList(s, flagName string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bench recall: %s: %q is not a positive integer", flagName, f)
		}
		out = append(out, n)
	}
	return out, nil
}
