package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/pgserver"
	"github.com/memstream/memstream/store"
)

const benchUsage = `Usage: memstream bench ingest|consolidate|recall|defense|reflect|compare|fake-openai [flags]

Each benchmark prints one JSON line. Speeds come with the ratio to a
baseline measured in the same run on the same data (SPEC §7).`

// CommandDeps are what the benchmarks' command line needs from main: the
// base defense policy a configuration selects, so that a benchmark builds
// what serve builds (its embedder comes from embed.FromConfig, as serve's).
type CommandDeps struct {
	BasePolicy func(config.Config) defense.Policy
}

// Command runs `memstream bench NAME [flags]`.
func Command(ctx context.Context, deps CommandDeps, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, benchUsage)
		return fmt.Errorf("bench: name a benchmark")
	}
	switch args[0] {
	case "ingest":
		return ingestCommand(ctx, deps, args[1:], stdout, stderr)
	case "recall":
		return recallCommand(ctx, deps, args[1:], stdout, stderr)
	case "defense":
		return defenseCommand(ctx, args[1:], stdout, stderr)
	case "reflect":
		return reflectCommand(ctx, args[1:], stdout, stderr)
	case "consolidate":
		return consolidateCommand(ctx, deps, args[1:], stdout, stderr)
	case "compare":
		return compareCommand(ctx, args[1:], stdout, stderr)
	case "fake-openai":
		return fakeOpenAICommand(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, benchUsage)
		return nil
	}
	fmt.Fprintln(stderr, benchUsage)
	return fmt.Errorf("bench: unknown benchmark %q", args[0])
}

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

func ingestCommand(ctx context.Context, deps CommandDeps, args []string, stdout, stderr io.Writer) error {
	def := config.Default()
	fs := flag.NewFlagSet("bench ingest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f IngestConfig
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
	ideps := IngestDeps{NewEmbedder: func(provider string, dim int) (embed.Embedder, error) {
		cfg := config.Default()
		if provider != "" {
			cfg.Embed.Provider = provider
		}
		// No cache: the synthetic events repeat their sentences, and a
		// cache would hide what the model costs per fact.
		cfg.Embed.Dim, cfg.Embed.CacheSize = dim, 0
		return embed.FromConfig(cfg.Embed)
	}, BasePolicy: deps.BasePolicy(config.Default())}
	return RunIngest(ctx, ideps, f, stdout, stderr)
}

const benchConsolidateUsage = `Usage: memstream bench consolidate [flags]

Ingests N synthetic chat events (the ingest benchmark's) through the full
pipeline with consolidation off, then lets the consolidation worker drain
the backlog they left, and optionally ingests more events while it runs.
Prints one JSON line (stdout): the ingest rate, the consolidation rate and
their ratio, the backlog once per second, and where the drain's time went.

Flags:`

func consolidateCommand(ctx context.Context, deps CommandDeps, args []string, stdout, stderr io.Writer) error {
	def := config.Default()
	fs := flag.NewFlagSet("bench consolidate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c ConsolidateConfig
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
	provider := fs.String("embed", def.Embed.Provider, "embedding provider of the ingest and the drain (local, hash)")
	fs.IntVar(&f.Dim, "dim", def.Embed.Dim, "vector size (the local model makes only its own)")
	fs.Usage = func() { fmt.Fprintln(stderr, benchConsolidateUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return err
	}
	f.Embedders = []string{*provider}
	if f.Events <= 0 || f.Banks <= 0 || f.Partitions <= 0 || f.Lanes <= 0 || f.BatchSize <= 0 || c.Workers <= 0 || c.BatchSize <= 0 || c.SustainEvents < 0 {
		return fmt.Errorf("bench consolidate: counts must be positive")
	}
	ideps := IngestDeps{NewEmbedder: func(provider string, dim int) (embed.Embedder, error) {
		cfg := config.Default()
		if provider != "" {
			cfg.Embed.Provider = provider
		}
		if dim > 0 {
			cfg.Embed.Dim = dim
		}
		return embed.FromConfig(cfg.Embed)
	}, BasePolicy: deps.BasePolicy(config.Default())}
	return RunConsolidate(ctx, ideps, c, stdout, stderr)
}

// fakeOpenAICommand serves the side-by-side benchmark's fake
// OpenAI-compatible API until interrupted, printing its base URL.
func fakeOpenAICommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench fake-openai", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	dim := fs.Int("dim", 384, "embedding dimensions (hash; the local model makes only its own 512)")
	latency := fs.Duration("latency", 0, "delay before every answer")
	provider := fs.String("embed", "hash", "embedder behind /v1/embeddings: hash, or local (memstream's default model, embed.provider local)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: memstream bench fake-openai [--addr A] [--dim N] [--latency D] [--embed hash|local]\n\n"+
			"Serves /v1/embeddings (hash embeddings, or the local model's), /v1/chat/completions (memstream's extraction prompt and any\n"+
			"structured-output call answered from its JSON schema: one fact per sentence, one observation per fact) and\n"+
			"/v1/models until interrupted; prints the base URL (…/v1) on stdout; logs unanswered calls on stderr. Flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	var f *FakeOpenAI
	switch *provider {
	case "hash":
		var err error
		if f, err = NewFakeOpenAI(*dim, *latency); err != nil {
			return err
		}
	case "local":
		cfg := config.Default()
		cfg.Embed.Provider, cfg.Embed.Dim = "local", config.LocalModelDim
		e, err := embed.FromConfig(cfg.Embed)
		if err != nil {
			return fmt.Errorf("bench fake-openai: %w", err)
		}
		f = NewFakeOpenAIWith(e, *latency)
	default:
		return fmt.Errorf("bench fake-openai: --embed %q: want hash or local", *provider)
	}
	fmt.Fprintln(stderr, f.Describe())
	return ServeFake(ctx, *addr, f, stdout)
}

// compareCommand runs memstream and Hindsight side by side
// (scripts/bench-hindsight.sh installs Hindsight and calls it).
func compareCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c CompareConfig
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
	fs.IntVar(&c.MemstreamMaxTokens, "memstream-max-tokens", 4096, "max_tokens of memstream's timed recalls (Hindsight's: --hindsight-max-tokens); lower it until mean_results match, for recall at equal result counts")
	fs.IntVar(&c.HindsightMaxTokens, "hindsight-max-tokens", 4096, "max_tokens of Hindsight's timed recalls; with --llm fake Hindsight returns more results than memstream at 4096, so lower it until mean_results match")
	fs.BoolVar(&c.Profile, "profile", false, "after each memstream side, print a line saying where its time went (stage and route times from its metrics, a timeline of the ingest, the recall questions again with trace)")
	fs.BoolVar(&c.SkipHindsight, "skip-hindsight", false, "run memstream alone (with --profile)")
	fs.StringVar(&c.LLM, "llm", "none", "none: Hindsight's no-LLM chunks mode beside memstream's offline extractor; fake: both extract and consolidate through the fake LLM (one fact per sentence, one observation per fact)")
	fs.DurationVar(&c.LLMLatency, "llm-latency", 0, "with --llm fake: delay of every fake chat answer, the same for both systems")
	fs.Func("memstream-env", "extra KEY=VALUE for memstream serve (repeatable; e.g. MEMSTREAM_PIPELINE_BATCH_WAIT=10ms)", func(v string) error {
		if !strings.Contains(v, "=") {
			return fmt.Errorf("want KEY=VALUE")
		}
		c.MemstreamEnv = append(c.MemstreamEnv, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.LLM != "none" && c.LLM != "fake" {
		return fmt.Errorf("bench compare: --llm %q: want none or fake", c.LLM)
	}
	if c.HindsightBin == "" && !c.SkipHindsight {
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
	return RunCompare(ctx, c, stdout, stderr)
}

// recallCommand runs `memstream bench recall`: for each bank size, a fresh
// schema is loaded with a synthetic bank, then recall is timed at each
// concurrency against a raw HNSW query on the same table (SPEC §7). One
// JSON line per configuration goes to stdout, progress to stderr.
func recallCommand(ctx context.Context, deps CommandDeps, args []string, stdout, stderr io.Writer) error {
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
	dbDefaults := config.Default().Database
	bankIndexes := fs.Int("bank-indexes", dbDefaults.BankIndexMax, "with --banks: at most this many of the largest banks get an HNSW index of their own after the load (database.bank_index_max; 0 drops them)")
	bankIndexMin := fs.Int("bank-index-min-facts", dbDefaults.BankIndexMinFacts, "with --banks: the fewest facts a bank needs for its own index (database.bank_index_min_facts)")
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
	if *bankIndexes < 0 || *bankIndexMin < 1 {
		return fmt.Errorf("bench recall: --bank-indexes must not be negative and --bank-index-min-facts must be positive")
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
	return RunRecall(ctx, RecallConfig{Facts: sizes, Queries: *queries, Concurrency: concs, DatabaseURL: *dbURL,
		Dim: *dim, Seed: *seed, Warmup: *warmup, Keep: *keep, Reuse: *reuse, Banks: *banks, Embedders: strings.Split(*embedders, ","),
		BankIndexes: store.BankIndexPolicy{MaxIndexes: *bankIndexes, MinFacts: *bankIndexMin, MaxShare: store.BankIndexMaxShare, BuildMemory: store.BankIndexBuildMemory},
		NewEmbedder: func(provider string, dim int) (embed.Embedder, error) {
			cfg := config.Default()
			// No cache: the timed passes repeat the warm-up's queries, and
			// every query should pay the model as a new one does.
			cfg.Embed.Provider, cfg.Embed.Dim, cfg.Embed.CacheSize = provider, dim, 0
			return embed.FromConfig(cfg.Embed)
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

// reflectCommand runs `memstream bench reflect`: a fresh schema is loaded
// with a synthetic bank (offline embedder), observations and mental
// models are added, and offline reflect is timed against a single recall
// call on the same questions.
func reflectCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
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
	return RunReflect(ctx, ReflectConfig{Facts: *facts, Queries: *queries, ObservationsPct: *obsPct, MentalModels: *models,
		DatabaseURL: *dbURL, Dim: *dim, Seed: *seed, Warmup: *warmup, Keep: *keep}, stdout, stderr)
}

// defenseCommand runs `memstream bench defense`: scanner throughput on clean
// and secret-dense chat text, against a strings.Contains pass over the same
// text in the same run (SPEC §7). The JSON line goes to stdout so it can be
// recorded as is; the human summary goes to stderr.
func defenseCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench defense", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizeMB := fs.Int("size-mb", 8, "size of each generated corpus in MiB")
	dur := fs.Duration("min-duration", time.Second, "how long each measurement repeats")
	seed := fs.Uint64("seed", 1, "corpus seed (same seed, same text)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: memstream bench defense [--size-mb N] [--min-duration D] [--seed S]\n\n"+
			"Measures the defense scanner in MB/s on one goroutine, on clean and on\n"+
			"secret-dense chat text, with the ratio to a strings.Contains scan. Flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("bench defense: unexpected argument %q", fs.Arg(0))
	}
	if *sizeMB <= 0 || *sizeMB > 1024 {
		return fmt.Errorf("bench defense: --size-mb must be in 1..1024, got %d", *sizeMB)
	}
	if *dur <= 0 {
		return fmt.Errorf("bench defense: --min-duration must be positive, got %s", *dur)
	}
	res, err := RunDefense(ctx, DefenseConfig{SizeBytes: *sizeMB << 20, MinDuration: *dur, Seed: *seed})
	if err != nil {
		return err
	}
	return res.Report(stdout, stderr)
}
