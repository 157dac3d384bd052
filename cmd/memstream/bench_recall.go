package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/internal/bench"
)

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
	dim := fs.Int("dim", config.Default().Embed.Dim, "embedding dimension (the local model makes only its own)")
	seed := fs.Uint64("seed", 1, "corpus seed (same seed, same bank)")
	warmup := fs.Int("warmup", 50, "untimed queries before each timed pass")
	keep := fs.Bool("keep", false, "keep the bench schemas (and the temporary server) for inspection")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the whole run to this file")
	banks := fs.Int("banks", 1, "spread each --facts size over this many banks of Zipf-skewed sizes in one table (times the largest, the smallest and all banks)")
	embedders := fs.String("embed", "hash", "embedding providers, comma-separated (e.g. hash,local): one bank per provider and size, same facts and queries, timed in the same run")
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
	return bench.RunRecall(ctx, bench.RecallConfig{Facts: sizes, Queries: *queries, Concurrency: concs, DatabaseURL: *dbURL,
		Dim: *dim, Seed: *seed, Warmup: *warmup, Keep: *keep, Reuse: *reuse, Banks: *banks, Embedders: strings.Split(*embedders, ","),
		NewEmbedder: func(provider string, dim int) (embed.Embedder, error) {
			cfg := config.Default()
			// No cache: the timed passes repeat the warm-up's queries, and
			// every query should pay the model as a new one does.
			cfg.Embed.Provider, cfg.Embed.Dim, cfg.Embed.CacheSize = provider, dim, 0
			return newEmbedder(cfg)
		}}, stdout, stderr)
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
