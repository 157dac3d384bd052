package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/memstream/memstream/internal/bench"
)

// benchReflect runs `memstream bench reflect`: a fresh schema is loaded
// with a synthetic bank (offline embedder), observations and mental
// models are added, and offline reflect is timed against a single recall
// call on the same questions.
func benchReflect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench reflect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	facts := fs.Int("facts", 10000, "facts in the bank")
	queries := fs.Int("queries", 300, "timed reflect questions")
	obsPct := fs.Int("observations-pct", 5, "observations as a percentage of the facts")
	models := fs.Int("mental-models", 20, "mental models in the bank")
	dbURL := fs.String("database-url", "", "PostgreSQL with pgvector and pg_trgm (default: a managed server in a temporary directory)")
	dim := fs.Int("dim", 384, "embedding dimension of the offline embedder")
	seed := fs.Uint64("seed", 1, "corpus seed (same seed, same bank)")
	warmup := fs.Int("warmup", 30, "untimed questions before each timed pass")
	keep := fs.Bool("keep", false, "keep the bench schema (and the temporary server) for inspection")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: memstream bench reflect [--facts 10000] [--queries 300] [--database-url URL]\n\n"+
			"Loads a synthetic bank with observations and mental models, runs offline reflect\n"+
			"(search_mental_models → search_observations → recall → extractive answer) and reports\n"+
			"p50/p95/p99 with the ratio to one recall call on the same questions. Flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("bench reflect: unexpected argument %q", fs.Arg(0))
	case *facts < 100:
		return fmt.Errorf("bench reflect: --facts must be at least 100, got %d", *facts)
	case *queries < 1:
		return fmt.Errorf("bench reflect: --queries must be positive, got %d", *queries)
	case *obsPct < 0 || *obsPct > 100:
		return fmt.Errorf("bench reflect: --observations-pct must be 0–100, got %d", *obsPct)
	case *models < 0 || *models > *queries:
		return fmt.Errorf("bench reflect: --mental-models must be 0–%d (--queries), got %d", *queries, *models)
	}
	return bench.RunReflect(ctx, bench.ReflectConfig{Facts: *facts, Queries: *queries, ObservationsPct: *obsPct, MentalModels: *models,
		DatabaseURL: *dbURL, Dim: *dim, Seed: *seed, Warmup: *warmup, Keep: *keep}, stdout, stderr)
}
