package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/broker"
	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/eval"
	"github.com/memstream/memstream/internal/bench"
	"github.com/memstream/memstream/pgserver"
)

func cmdEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, eval.Usage)
		return errors.New("eval: name a subcommand, gen or run")
	}
	switch args[0] {
	case "gen":
		return eval.GenCommand(args[1:], stdout, stderr)
	case "run":
		return cmdEvalRun(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, eval.Usage)
		return nil
	}
	fmt.Fprint(stderr, eval.Usage)
	return fmt.Errorf("eval: unknown subcommand %q (gen, run)", args[0])
}

// evalRunOptions is what `eval run` does; the regression test fills it
// directly, with a configuration that points at the test database.
type evalRunOptions struct {
	eval.BenchmarkConfig
	// API is the base URL of a running memstream. Empty starts one in
	// process from Config.
	API string
	// Config is used for the in-process stack, and with API set for the
	// Kafka brokers to produce to and the embedder of the dense baseline.
	Config config.Config
	// HindsightBin, with Target hindsight and no API, is the hindsight-api
	// to start (with its own PostgreSQL, embedding with Config's embedder).
	HindsightBin string
}

func cmdEvalRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path, sets := commonFlags(fs)
	api := fs.String("api", "", "base URL of a running memstream; events are produced to its configured Kafka (default: start memstream in process)")
	skip := fs.Bool("skip-ingest", false, "do not produce events; ask the questions of data already ingested (needs --api)")
	arms := fs.String("arms", "", "comma-separated recall arms for the main run: semantic,keyword,graph,temporal (default all)")
	fusion := fs.String("fusion", "rrf", "fusion of the main run: rrf or interleave")
	ablation := fs.Bool("ablation", false, "also run each arm alone, interleave fusion and no observations, and print the deltas")
	joint := fs.String("ablation-off", "", "with --ablation, also rows with several heuristics off together: comma-separated sets of names joined by +, e.g. query_form+change")
	maxTokens := fs.Int("max-tokens", 2048, "recall max_tokens budget; answer-in-context is measured within it")
	conc := fs.Int("concurrency", 1, "questions in flight (1 keeps latency figures free of self-inflicted queueing)")
	ingestTimeout := fs.Duration("ingest-timeout", 20*time.Minute, "how long to wait for every event to be stored")
	consTimeout := fs.Duration("consolidation-timeout", 10*time.Minute, "how long to wait for consolidation to drain")
	verbose := fs.Bool("verbose", false, "log the in-process memstream at the configured level (default: warnings only, so the tables stay readable)")
	consStall := fs.Duration("consolidation-stall", 30*time.Second, "stop waiting for consolidation when pending_consolidation does not change for this long")
	part := fs.String("part", "", "run one part only: heldout, tuning, heldout-2, heldout-3, dialogue or dialogue-tuning (default: every part of the dataset)")
	noBaselines := fs.Bool("no-baselines", false, "skip the BM25 and dense baselines over the raw turns")
	target := fs.String("target", eval.TargetMemstream, "whose API to retain into and ask: memstream, or hindsight (Hindsight 1.1.0 in its no-LLM chunks mode; needs --ingest retain, and --api or --hindsight-bin)")
	hindsightBin := fs.String("hindsight-bin", "", "with --target hindsight and no --api: the hindsight-api to start, with a PostgreSQL of its own, embedding with memstream's configured embedder (scripts/bench-hindsight.sh installs it)")
	ingest := fs.String("ingest", eval.IngestKafka, "how events reach memstream: kafka (produced to its topic) or retain (HTTP retain, one call per session or message, as a Hindsight client user sends them)")
	label := fs.String("context", "", "context label sent with every event (Kafka) or retain item, as a Hindsight client sends one (e.g. \"chat conversation\"); default none")
	fs.Usage = func() {
		fmt.Fprint(stderr, eval.Usage+"\nFlags of run:\n")
		fs.PrintDefaults()
	}
	dir, rest := splitPositional(args)
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if dir == "" && fs.NArg() > 0 {
		dir = fs.Arg(0)
	}
	if dir == "" {
		fs.Usage()
		return errors.New("eval run: name the dataset DIR written by eval gen")
	}
	if *skip && *api == "" {
		return errors.New("eval run: --skip-ingest needs --api (an in-process memstream starts empty)")
	}
	cfg, err := loadConfig(*path, *sets)
	if err != nil {
		return err
	}
	jointSets, err := eval.ParseJointOff(*joint)
	if err != nil {
		return fmt.Errorf("eval run --ablation-off: %w", err)
	}
	if len(jointSets) > 0 && !*ablation {
		return errors.New("eval run --ablation-off: needs --ablation (its rows are ablation rows)")
	}
	opts := evalRunOptions{API: *api, Config: cfg, BenchmarkConfig: eval.BenchmarkConfig{
		Dir: dir, Token: os.Getenv("MEMSTREAM_API_KEY"), SkipIngest: *skip,
		Arms: strings.FieldsFunc(*arms, func(r rune) bool { return r == ',' || r == ' ' }), Fusion: *fusion, Ablation: *ablation, AblationOff: jointSets, MaxTokens: *maxTokens, Concurrency: *conc,
		IngestTimeout: *ingestTimeout, ConsolidationTimeout: *consTimeout, ConsolidationStall: *consStall,
		Part: *part, NoBaselines: *noBaselines, Out: stdout, Ingest: *ingest, Context: *label, Target: *target,
	}, HindsightBin: *hindsightBin}
	if opts.Part != "" && !eval.IsPart(opts.Part) {
		return fmt.Errorf("eval run: --part %q is not heldout, tuning, heldout-2, heldout-3, dialogue or dialogue-tuning", opts.Part)
	}
	if opts.Target == eval.TargetHindsight {
		return runEvalHindsight(ctx, opts, stderr)
	}
	if opts.API == "" {
		tmp, err := pgserver.TempDir("memstream-eval-")
		if err != nil {
			return fmt.Errorf("eval run: temporary data_dir: %w", err)
		}
		defer os.RemoveAll(tmp)
		if opts.Config, err = inProcessConfig(cfg, tmp); err != nil {
			return err
		}
		if !*verbose {
			opts.Config.Log.Level = "warn"
		}
	}
	_, err = runEval(ctx, opts, stderr)
	return err
}

// inProcessConfig isolates the in-process memstream from anything else on
// the machine: its own data_dir, free ports, loopback HTTP without keys.
func inProcessConfig(cfg config.Config, dataDir string) (config.Config, error) {
	cfg.DataDir = dataDir
	cfg.Kafka.Brokers = nil
	cfg.Kafka.EmbeddedAddr = "127.0.0.1:0" // kfake picks a free port
	cfg.HTTP.Addr = "127.0.0.1:0"
	cfg.Auth = config.Auth{}
	if cfg.Database.Embedded() {
		port, err := pgserver.FreePort()
		if err != nil {
			return cfg, fmt.Errorf("database.embedded_port: %w", err)
		}
		cfg.Database.EmbeddedPort = port
	}
	return cfg, nil
}

// runEval starts memstream in process unless opts.API names a running
// one, wires its API, its Kafka and its embedder into the benchmark, and
// runs it.
func runEval(ctx context.Context, opts evalRunOptions, stderr io.Writer) (*eval.Outcome, error) {
	bc := opts.BenchmarkConfig
	bc.BaseURL = opts.API
	topic := opts.Config.Kafka.Topics[0]
	var prod *kgo.Client
	if bc.BaseURL == "" {
		if bc.Out != nil {
			fmt.Fprintln(bc.Out, "== starting memstream in process (embedded Kafka, PostgreSQL, HTTP API) …")
		}
		log := opts.Config.Log.NewLogger(stderr).With(slog.String("component", "eval"))
		p, err := serveInProcess(ctx, opts.Config, log)
		if err != nil {
			return nil, err
		}
		defer func() {
			if err := p.stop(); err != nil {
				fmt.Fprintln(stderr, "memstream eval: stopping in-process memstream:", err)
			}
		}()
		bc.BaseURL = "http://" + p.addr
		prod = p.a.prod
	} else if !bc.SkipIngest {
		var err error
		prod, err = broker.NewProducer(broker.ProducerDeps{}, broker.ProducerConfig{Brokers: opts.Config.Kafka.Addrs(), ClientID: opts.Config.Kafka.ClientID + "-eval"})
		if err != nil {
			return nil, err
		}
		defer prod.Close()
	}
	deps := eval.BenchmarkDeps{Produce: func(ctx context.Context, file string) (int, error) {
		return broker.ProduceFile(ctx, prod, file, topic, "", stderr)
	}}
	if !bc.NoBaselines {
		emb, err := embed.FromConfig(opts.Config.Embed)
		if err != nil {
			return nil, err
		}
		deps.Embedder = emb
	}
	return eval.RunBenchmark(ctx, deps, bc)
}

// runEvalHindsight asks Hindsight: the one at opts.API, or one started
// from opts.HindsightBin that embeds with the configured embedder, the one
// the dense baseline (and memstream, run with the same configuration)
// uses.
func runEvalHindsight(ctx context.Context, opts evalRunOptions, stderr io.Writer) error {
	bc := opts.BenchmarkConfig
	bc.BaseURL = opts.API
	emb, err := embed.FromConfig(opts.Config.Embed)
	if err != nil {
		return err
	}
	if bc.BaseURL == "" {
		if opts.HindsightBin == "" {
			return errors.New("eval run: --target hindsight needs --api or --hindsight-bin")
		}
		tmp, err := pgserver.TempDir("memstream-eval-hindsight-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		if bc.Out != nil {
			fmt.Fprintf(bc.Out, "== starting Hindsight (%s, chunks mode, own PostgreSQL, embeddings from %s) …\n", opts.HindsightBin, opts.Config.Embed.Provider)
		}
		hs, err := bench.StartHindsightStack(ctx, bench.HindsightStackDeps{Embedder: emb}, bench.HindsightConfig{Bin: opts.HindsightBin, WorkDir: tmp})
		if err != nil {
			return err
		}
		defer hs.Stop()
		bc.BaseURL = hs.URL()
	}
	_, err = eval.RunBenchmark(ctx, eval.BenchmarkDeps{Embedder: emb}, bc)
	return err
}
