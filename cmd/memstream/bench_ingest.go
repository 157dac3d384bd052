package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/internal/bench"
	"github.com/memstream/memstream/pgserver"
)

const benchIngestUsage = `Usage: memstream bench ingest [flags]

Runs N synthetic chat events through an in-process Kafka broker (kfake) and
the full ingest pipeline into PostgreSQL, then COPYs the resulting
memory_units rows into a fresh copy of the same indexed table in the same
run, and prints one JSON line (stdout) and a summary (stderr).

With --embed local,hash the offline mode runs once per embedding provider
on the same events, each into fresh tables of the same dimension, and
prints one JSON line per provider, with the time spent embedding per fact
(no embedding cache, so every fact pays the model).

With --llm-latency, the extractor is the openai provider talking to an
in-process fake OpenAI-compatible server with that latency, once per
--llm-concurrency × --llm-chunks-per-call combination.

Flags:`

func parseIntList(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", p)
		}
		out = append(out, n)
	}
	return out, nil
}

func benchIngest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	def := config.Default()
	fs := flag.NewFlagSet("bench ingest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f bench.IngestConfig
	fs.IntVar(&f.Events, "events", 20000, "events to ingest")
	fs.IntVar(&f.Banks, "banks", 8, "memory banks the events spread over")
	fs.IntVar(&f.Partitions, "partitions", 4, "partitions of the events topic")
	fs.IntVar(&f.Lanes, "lanes", def.Pipeline.PersistWorkers, "pipeline lanes (pipeline.persist_workers)")
	fs.IntVar(&f.BatchSize, "batch-size", def.Pipeline.BatchSize, "pipeline batch size (pipeline.batch_size)")
	fs.IntVar(&f.LatencyEvents, "latency-events", 0, "events of the paced latency phase (default: N/10, 100..2000)")
	fs.Uint64Var(&f.Seed, "seed", 1, "random seed of the synthetic events")
	fs.StringVar(&f.DatabaseURL, "database-url", "", "PostgreSQL URL to use (a fresh schema is created and dropped); default: a managed server under a temp dir")
	fs.DurationVar(&f.LLMLatency, "llm-latency", 0, "run the LLM mode against a fake OpenAI-compatible server with this latency per call")
	conc := fs.String("llm-concurrency", "1,4,16,32", "LLM mode: llm.concurrency values to run")
	cpc := fs.String("llm-chunks-per-call", "1,4", "LLM mode: llm.chunks_per_call values to run")
	embedders := fs.String("embed", def.Embed.Provider, "offline mode: embedding providers to run one after another on the same events (e.g. local,hash), each into fresh tables")
	fs.IntVar(&f.Dim, "dim", def.Embed.Dim, "vector size of every run (the local model makes only its own)")
	fs.Usage = func() { fmt.Fprintln(stderr, benchIngestUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if f.LLMConcurrency, err = parseIntList(*conc); err != nil {
		return fmt.Errorf("--llm-concurrency: %w", err)
	}
	if f.LLMChunksPerCall, err = parseIntList(*cpc); err != nil {
		return fmt.Errorf("--llm-chunks-per-call: %w", err)
	}
	if f.Events <= 0 || f.Banks <= 0 || f.Partitions <= 0 || f.Lanes <= 0 || f.BatchSize <= 0 {
		return fmt.Errorf("bench ingest: --events, --banks, --partitions, --lanes and --batch-size must be positive")
	}
	if *embedders != "" {
		f.Embedders = strings.Split(*embedders, ",")
	}
	deps := bench.IngestDeps{NewEmbedder: func(provider string, dim int) (embed.Embedder, error) {
		cfg := config.Default()
		if provider != "" {
			cfg.Embed.Provider = provider
		}
		// No cache: the synthetic events repeat their sentences, and a
		// cache would hide what the model costs per fact.
		cfg.Embed.Dim, cfg.Embed.CacheSize = dim, 0
		return newEmbedder(cfg)
	}, BasePolicy: basePolicy(config.Default())}
	return bench.RunIngest(ctx, deps, f, stdout, stderr)
}

const benchConsolidateUsage = `Usage: memstream bench consolidate [flags]

Ingests N synthetic chat events (the ingest benchmark's) through the full
pipeline with consolidation off, then lets the consolidation worker drain
the backlog they left, and optionally ingests more events while it runs.
Prints one JSON line (stdout): the ingest rate, the consolidation rate and
their ratio, the backlog once per second, and where the drain's time went.

Flags:`

func benchConsolidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	def := config.Default()
	fs := flag.NewFlagSet("bench consolidate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c bench.ConsolidateConfig
	f := &c.Ingest
	fs.IntVar(&f.Events, "events", 1000, "events to ingest before the drain (1000 make about 17 000 facts)")
	fs.IntVar(&f.Banks, "banks", 8, "memory banks the events spread over")
	fs.IntVar(&f.Partitions, "partitions", 4, "partitions of the events topic")
	fs.IntVar(&f.Lanes, "lanes", def.Pipeline.PersistWorkers, "pipeline lanes (pipeline.persist_workers)")
	fs.IntVar(&f.BatchSize, "batch-size", def.Pipeline.BatchSize, "pipeline batch size (pipeline.batch_size)")
	fs.Uint64Var(&f.Seed, "seed", 1, "random seed of the synthetic events")
	fs.StringVar(&f.DatabaseURL, "database-url", "", "PostgreSQL URL to use (a fresh schema is created and dropped); default: a managed server under a temp dir")
	fs.IntVar(&c.Workers, "workers", def.Consolidation.Workers, "consolidation workers (consolidation.workers)")
	fs.IntVar(&c.BatchSize, "consolidation-batch", def.Consolidation.BatchSize, "facts per consolidation batch (consolidation.batch_size)")
	fs.IntVar(&c.SustainEvents, "sustain-events", 0, "events ingested while the worker runs, after the drain (0: skip)")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write a Go CPU profile of the drain to this file")
	fs.Usage = func() { fmt.Fprintln(stderr, benchConsolidateUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return err
	}
	if f.Events <= 0 || f.Banks <= 0 || f.Partitions <= 0 || f.Lanes <= 0 || f.BatchSize <= 0 || c.Workers <= 0 || c.BatchSize <= 0 || c.SustainEvents < 0 {
		return fmt.Errorf("bench consolidate: counts must be positive")
	}
	deps := bench.IngestDeps{NewEmbedder: func(provider string, dim int) (embed.Embedder, error) {
		cfg := config.Default()
		if provider != "" {
			cfg.Embed.Provider = provider
		}
		if dim > 0 {
			cfg.Embed.Dim = dim
		}
		return newEmbedder(cfg)
	}, BasePolicy: basePolicy(config.Default())}
	return bench.RunConsolidate(ctx, deps, c, stdout, stderr)
}

// benchFakeOpenAI serves the side-by-side benchmark's fake
// OpenAI-compatible API until interrupted, printing its base URL.
func benchFakeOpenAI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench fake-openai", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	dim := fs.Int("dim", 384, "embedding dimensions")
	latency := fs.Duration("latency", 0, "delay before every answer")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: memstream bench fake-openai [--addr A] [--dim N] [--latency D]\n\n"+
			"Serves /v1/embeddings (hash embeddings), /v1/chat/completions (memstream's extraction prompt: one fact per\n"+
			"sentence) and /v1/models until interrupted; prints the base URL (…/v1) on stdout. Flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, err := bench.NewFakeOpenAI(*dim, *latency)
	if err != nil {
		return err
	}
	return bench.ServeFake(ctx, *addr, f, stdout)
}

// benchCompare runs memstream and Hindsight side by side
// (scripts/bench-hindsight.sh installs Hindsight and calls it).
func benchCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c bench.CompareConfig
	self, _ := os.Executable()
	fs.StringVar(&c.MemstreamBin, "memstream-bin", self, "memstream binary to serve with")
	fs.StringVar(&c.HindsightBin, "hindsight-bin", "", "hindsight-api of a virtualenv with hindsight-api-slim==1.1.0 (required)")
	fs.IntVar(&c.Events, "events", 500, "events retained per system and round")
	fs.IntVar(&c.Banks, "banks", 8, "banks the events spread over")
	fs.IntVar(&c.Queries, "queries", 200, "recall queries per system and round")
	fs.IntVar(&c.Rounds, "rounds", 2, "interleaved rounds (the order alternates)")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of the synthetic events")
	fs.IntVar(&c.Dim, "dim", 384, "embedding dimensions of the shared fake embedder")
	fs.StringVar(&c.WorkDir, "work-dir", "", "directory for both systems' data (default: a new temporary one, removed afterwards)")
	fs.DurationVar(&c.Timeout, "timeout", 10*time.Minute, "bound on each wait (queryable, consolidated)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.HindsightBin == "" {
		return fmt.Errorf("bench compare: --hindsight-bin is required (scripts/bench-hindsight.sh installs it)")
	}
	if c.WorkDir == "" {
		dir, err := pgserver.TempDir("memstream-bench-compare-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		c.WorkDir = dir
	}
	return bench.RunCompare(ctx, c, stdout, stderr)
}
