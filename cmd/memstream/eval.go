package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/broker"
	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/eval"
)

// Output files of `memstream eval run`, written into the dataset directory
// next to the data they were measured on.
const (
	evalReportJSON = "report.json"
	evalReportMD   = "report.md"
	evalChartPNG   = "recall_by_type.png"
	evalMisses     = "misses.jsonl"
)

const evalUsage = `Usage:
  memstream eval gen --out DIR [--seed N] [--size small|full]
  memstream eval run DIR [--api URL] [--arms a,b] [--fusion rrf|interleave] [--ablation]

gen writes a deterministic LongMemEval-style dataset (events.jsonl,
questions.jsonl, manifest.json). run ingests DIR/events.jsonl through Kafka
(by default into a private in-process memstream: embedded Kafka, a managed
PostgreSQL on a free port in a temporary directory, the HTTP API), waits
until every event is stored, asks every question through the recall API and
writes report.json, report.md and recall_by_type.png into DIR.
`

func cmdEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, evalUsage)
		return errors.New("eval: name a subcommand, gen or run")
	}
	switch args[0] {
	case "gen":
		return cmdEvalGen(args[1:], stdout, stderr)
	case "run":
		return cmdEvalRun(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, evalUsage)
		return nil
	}
	fmt.Fprint(stderr, evalUsage)
	return fmt.Errorf("eval: unknown subcommand %q (gen, run)", args[0])
}

func cmdEvalGen(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Int64("seed", 1, "random seed; the same seed and size give byte-identical files")
	out := fs.String("out", "", "directory to write the dataset to (required)")
	size := fs.String("size", "small", "preset: small (about 60 questions, for tests) or full (several hundred, for reports)")
	fs.Usage = func() {
		fmt.Fprint(stderr, evalUsage+"\nFlags of gen:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		fs.Usage()
		return errors.New("eval gen: --out is required")
	}
	var cfg eval.GenConfig
	switch *size {
	case "small":
		cfg = eval.Small()
	case "full":
		cfg = eval.Full()
	default:
		return fmt.Errorf("eval gen: --size %q is not small or full", *size)
	}
	cfg.Seed = *seed
	d, err := eval.Generate(cfg)
	if err != nil {
		return err
	}
	if err := d.Write(*out); err != nil {
		return err
	}
	m := d.Manifest
	fmt.Fprintf(stdout, "wrote %s: %d banks, %d sessions, %d turns, %d questions (seed %d, %s)\n",
		*out, m.Banks, m.Sessions, m.Turns, m.Questions, m.Seed, *size)
	for _, t := range eval.Types {
		if n := m.ByType[t]; n > 0 {
			fmt.Fprintf(stdout, "  %-27s %d\n", t, n)
		}
	}
	return nil
}

// evalRunOptions is what `eval run` does; the regression test fills it
// directly, with a configuration that points at the test database.
type evalRunOptions struct {
	Dir string
	// API is the base URL of a running memstream. Empty starts one in
	// process from Config.
	API   string
	Token string
	// Config is used for the in-process stack, and with API set for the
	// Kafka brokers to produce to.
	Config config.Config
	// SkipIngest asks questions of data that is already ingested.
	SkipIngest bool
	// Arms and Fusion configure the main run.
	Arms   []string
	Fusion string
	// Ablation repeats the questions with each eval.AblationVariants entry.
	Ablation    bool
	MaxTokens   int
	Concurrency int
	// IngestTimeout bounds the wait for every event to be stored.
	IngestTimeout time.Duration
	// ConsolidationTimeout bounds the wait for pending_consolidation to
	// reach zero; ConsolidationStall gives up earlier when the count does
	// not move at all, which is what happens when no worker consumes it.
	ConsolidationTimeout time.Duration
	ConsolidationStall   time.Duration
	// NoFiles skips writing report files (the regression test only needs
	// the numbers).
	NoFiles bool
}

// evalOutcome is what `eval run` measured; it is also report.json.
type evalOutcome struct {
	Manifest eval.Manifest `json:"manifest"`
	Main     eval.Report   `json:"main"`
	// Bars checks Main against the quality bars of the current round.
	Bars     []eval.Bar `json:"quality_bars"`
	Ablation []evalArm  `json:"ablation,omitempty"`
	// Notes explain what the numbers do not cover (consolidation not
	// drained, no reranker), so a reader of report.json sees them too.
	Notes []string `json:"notes,omitempty"`
	// Coverage says which evidence turns ingestion stored at all.
	Coverage   *eval.Coverage `json:"coverage,omitempty"`
	IngestSecs float64        `json:"ingest_seconds"`
	// ConsolidationSecs is how long the wait for consolidation took after
	// ingestion, until it drained or the runner gave up.
	ConsolidationSecs float64 `json:"consolidation_seconds"`
	MeasuredAt        string  `json:"measured_at"`
	Banks             int     `json:"banks"`
	DeadLetters       int64   `json:"dead_letters"`
}

type evalArm struct {
	Name   string      `json:"name"`
	Report eval.Report `json:"report"`
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
	maxTokens := fs.Int("max-tokens", 2048, "recall max_tokens budget; answer-in-context is measured within it")
	conc := fs.Int("concurrency", 1, "questions in flight (1 keeps latency figures free of self-inflicted queueing)")
	ingestTimeout := fs.Duration("ingest-timeout", 20*time.Minute, "how long to wait for every event to be stored")
	consTimeout := fs.Duration("consolidation-timeout", 10*time.Minute, "how long to wait for consolidation to drain")
	verbose := fs.Bool("verbose", false, "log the in-process memstream at the configured level (default: warnings only, so the tables stay readable)")
	consStall := fs.Duration("consolidation-stall", 30*time.Second, "stop waiting for consolidation when pending_consolidation does not change for this long")
	fs.Usage = func() {
		fmt.Fprint(stderr, evalUsage+"\nFlags of run:\n")
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
	opts := evalRunOptions{
		Dir: dir, API: *api, Token: os.Getenv("MEMSTREAM_API_KEY"), Config: cfg, SkipIngest: *skip,
		Arms: splitList(*arms), Fusion: *fusion, Ablation: *ablation, MaxTokens: *maxTokens, Concurrency: *conc,
		IngestTimeout: *ingestTimeout, ConsolidationTimeout: *consTimeout, ConsolidationStall: *consStall,
	}
	if opts.API == "" {
		tmp, err := tempDataDir("memstream-eval-")
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
	_, err = runEval(ctx, opts, stdout, stderr)
	return err
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
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
		port, err := freePort()
		if err != nil {
			return cfg, fmt.Errorf("database.embedded_port: %w", err)
		}
		cfg.Database.EmbeddedPort = port
	}
	return cfg, nil
}

// freePort asks the kernel for a free TCP port. PostgreSQL binds it a
// moment later, which is racy in principle but fine for a private run.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// runEval ingests the dataset (unless told not to), waits for it, asks
// every question and writes the reports.
func runEval(ctx context.Context, opts evalRunOptions, stdout, stderr io.Writer) (*evalOutcome, error) {
	d, err := eval.Load(opts.Dir)
	if err != nil {
		return nil, err
	}
	if opts.IngestTimeout <= 0 {
		opts.IngestTimeout = 20 * time.Minute
	}
	if opts.ConsolidationTimeout <= 0 {
		opts.ConsolidationTimeout = 10 * time.Minute
	}
	if opts.ConsolidationStall <= 0 {
		opts.ConsolidationStall = 30 * time.Second
	}
	out := &evalOutcome{Manifest: d.Manifest, MeasuredAt: time.Now().UTC().Format(time.RFC3339)}
	base := opts.API
	topic := opts.Config.Kafka.Topics[0]
	var prod *kgo.Client
	if base == "" {
		fmt.Fprintln(stdout, "== starting memstream in process (embedded Kafka, PostgreSQL, HTTP API) …")
		log := newLogger(opts.Config, stderr).With(slog.String("component", "eval"))
		a, err := start(ctx, opts.Config, roles{ingest: true, api: true, worker: true}, newRegistry(), log)
		if err != nil {
			return nil, err
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- a.run(runCtx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				fmt.Fprintln(stderr, "memstream eval: stopping in-process memstream:", err)
			}
		}()
		select {
		case addr := <-a.apiAddr:
			base = "http://" + addr
		case err := <-done:
			done <- err // the deferred stop reads it again
			return nil, fmt.Errorf("in-process memstream stopped before serving: %w", err)
		}
		prod = a.prod
	} else if !opts.SkipIngest {
		prod, err = broker.NewProducer(brokersOf(opts.Config), opts.Config.Kafka.ClientID+"-eval")
		if err != nil {
			return nil, err
		}
		defer prod.Close()
	}
	c := &apiClient{base: strings.TrimRight(base, "/"), token: opts.Token, http: &http.Client{Timeout: 60 * time.Second,
		Transport: http.DefaultTransport.(*http.Transport).Clone()}}
	defer c.http.CloseIdleConnections()

	expected := map[string]int{}
	for _, e := range d.Events {
		expected[e.BankID]++
	}
	if !opts.SkipIngest {
		began := time.Now()
		file := filepath.Join(opts.Dir, eval.EventsFile)
		n, err := produceFile(ctx, prod, file, topic, "", stderr)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(stdout, "== produced %d events of %d banks to %s; waiting until they are stored …\n", n, len(expected), topic)
		if out.DeadLetters, err = waitEvalIngested(ctx, c, expected, opts.IngestTimeout); err != nil {
			return nil, err
		}
		out.IngestSecs = time.Since(began).Seconds()
		fmt.Fprintf(stdout, "== stored in %.1fs (%d dead-lettered)\n", out.IngestSecs, out.DeadLetters)
	}
	out.Banks = len(expected)
	consBegan := time.Now()
	note, err := waitConsolidated(ctx, c, expected, opts.ConsolidationTimeout, opts.ConsolidationStall)
	if err != nil {
		return nil, err
	}
	out.ConsolidationSecs = time.Since(consBegan).Seconds()
	if note == "" {
		fmt.Fprintf(stdout, "== consolidation drained in %.1fs\n", out.ConsolidationSecs)
	}
	if note != "" {
		out.Notes = append(out.Notes, note)
		fmt.Fprintln(stdout, "== note: "+note)
	}

	stored, err := storedTurns(ctx, c, sortedBanks(expected))
	if err != nil {
		return nil, err
	}
	cov := eval.EvidenceCoverage(d, stored)
	out.Coverage = &cov
	fmt.Fprintf(stdout, "== %d of %d evidence turns produced a stored fact\n", cov.StoredTurns, cov.EvidenceTurns)

	mainName := describeRun(opts.Arms, opts.Fusion)
	fmt.Fprintf(stdout, "== asking %d questions (%s) …\n", len(d.Questions), mainName)
	// One recaller, derived per variant, so that an observation's evidence
	// is looked up once for the whole run.
	api, err := eval.NewAPIRecaller(eval.APIRecallerConfig{BaseURL: base, Token: opts.Token, MaxTokens: opts.MaxTokens}, nil)
	if err != nil {
		return nil, err
	}
	defer api.Close()
	var rec *eval.Recorder
	out.Main, rec, err = evalPass(ctx, d, opts, api, eval.Variant{Name: mainName, Arms: opts.Arms, Fusion: opts.Fusion})
	if err != nil {
		return nil, err
	}
	misses := eval.Misses(d, out.Main, rec, 5)
	out.Bars = eval.QualityBars(out.Main)
	fmt.Fprintln(stdout)
	fmt.Fprint(stdout, out.Main.Markdown())
	fmt.Fprintln(stdout)
	fmt.Fprint(stdout, eval.BarsMarkdown(out.Bars))

	if opts.Ablation {
		out.Ablation = append(out.Ablation, evalArm{Name: mainName, Report: out.Main})
		for _, v := range eval.AblationVariants() {
			fmt.Fprintf(stdout, "== ablation: %s …\n", v.Name)
			rep, _, err := evalPass(ctx, d, opts, api, v)
			if err != nil {
				return nil, err
			}
			out.Ablation = append(out.Ablation, evalArm{Name: v.Name, Report: rep})
		}
		out.Notes = append(out.Notes,
			"rerank: memstream's recall has no reranker yet, so the ablation has no with/without-rerank row.",
			"what-if: the \"identical texts collapsed\" row is not a recall setting; the runner drops results whose text repeats a higher-ranked one before scoring, to measure what collapsing duplicates inside recall would gain.")
		fmt.Fprintln(stdout)
		fmt.Fprint(stdout, ablationMarkdown(out.Ablation))
	}
	for _, n := range out.Notes {
		fmt.Fprintln(stdout, "\nNote: "+n)
	}
	if opts.NoFiles {
		return out, nil
	}
	if err := writeEvalFiles(opts.Dir, out); err != nil {
		return nil, err
	}
	if err := writeMisses(filepath.Join(opts.Dir, evalMisses), misses); err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "\n== wrote %s, %s, %s and %s (%d turn-level misses with their top results) in %s\n",
		evalReportJSON, evalReportMD, evalChartPNG, evalMisses, len(misses), opts.Dir)
	return out, nil
}

func describeRun(arms []string, fusion string) string {
	a := "all arms"
	if len(arms) > 0 {
		a = strings.Join(arms, "+")
	}
	if fusion == "" {
		fusion = "rrf"
	}
	return a + ", " + fusion
}

// evalPass asks every question once with one recall configuration. The
// recorder holds the results, for the list of misses.
func evalPass(ctx context.Context, d *eval.Dataset, opts evalRunOptions, api *eval.APIRecaller, v eval.Variant) (eval.Report, *eval.Recorder, error) {
	r, err := api.With(v.Arms, v.Fusion, v.Types)
	if err != nil {
		return eval.Report{}, nil, err
	}
	var inner eval.Recaller = r
	if v.Collapse {
		inner = eval.Collapse{Inner: r}
	}
	rec := eval.NewRecorder(inner)
	rep, err := eval.Run(ctx, d, rec, eval.RunOptions{Name: v.Name, TokenBudget: opts.MaxTokens, Concurrency: opts.Concurrency})
	return rep, rec, err
}

// writeMisses writes one JSON line per missed question, so that a recall
// regression can be read question by question (jq, grep).
func writeMisses(path string, misses []eval.Miss) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, m := range misses {
		if err := enc.Encode(m); err != nil {
			return fmt.Errorf("encode %s: %w", path, err)
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func ablationMarkdown(arms []evalArm) string {
	as := make([]eval.Arm, len(arms))
	for i, a := range arms {
		as[i] = eval.Arm{Name: a.Name, Report: a.Report}
	}
	return eval.AblationMarkdown(as)
}

func writeEvalFiles(dir string, out *evalOutcome) error {
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", evalReportJSON, err)
	}
	if err := os.WriteFile(filepath.Join(dir, evalReportJSON), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", evalReportJSON, err)
	}
	var md strings.Builder
	m := out.Manifest
	fmt.Fprintf(&md, "# memstream eval report\n\nDataset: %s seed %d, %d banks, %d sessions, %d turns, %d questions. Measured %s.\n\n",
		m.Generator, m.Seed, m.Banks, m.Sessions, m.Turns, m.Questions, out.MeasuredAt)
	md.WriteString(out.Main.Markdown())
	md.WriteString("\n")
	md.WriteString(eval.BarsMarkdown(out.Bars))
	if out.Coverage != nil {
		md.WriteString("\n")
		md.WriteString(out.Coverage.Markdown())
	}
	if len(out.Ablation) > 0 {
		md.WriteString("\n")
		md.WriteString(ablationMarkdown(out.Ablation))
	}
	for _, n := range out.Notes {
		md.WriteString("\nNote: " + n + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, evalReportMD), []byte(md.String()), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", evalReportMD, err)
	}
	return out.Main.WriteChart(filepath.Join(dir, evalChartPNG))
}

// storedTurns pages through every bank's memories and collects the source
// turn of each fact, for the evidence coverage.
func storedTurns(ctx context.Context, c *apiClient, banks []string) (map[eval.Evidence]bool, error) {
	const pageSize = 1000
	out := map[eval.Evidence]bool{}
	for _, b := range banks {
		for offset := 0; ; offset += pageSize {
			var page struct {
				Items []struct {
					DocumentID string            `json:"document_id"`
					Metadata   map[string]string `json:"metadata"`
				} `json:"items"`
				Total int `json:"total"`
			}
			path := fmt.Sprintf("/v1/default/banks/%s/memories/list?limit=%d&offset=%d", b, pageSize, offset)
			if err := c.call(ctx, http.MethodGet, path, nil, &page); err != nil {
				return nil, fmt.Errorf("eval run: list memories of bank %s: %w", b, err)
			}
			for _, it := range page.Items {
				idx, err := strconv.Atoi(it.Metadata["message_index"])
				if err != nil || it.DocumentID == "" {
					continue
				}
				out[eval.Evidence{SessionID: it.DocumentID, TurnIndex: idx}] = true
			}
			if len(page.Items) < pageSize || offset+pageSize >= page.Total {
				break
			}
		}
	}
	return out, nil
}

// bankStats is the part of GET …/stats the runner waits on.
type bankStats struct {
	EventsIngested       int64 `json:"events_ingested"`
	EventsDeadLettered   int64 `json:"events_dead_lettered"`
	PendingConsolidation int64 `json:"pending_consolidation"`
}

func statsOf(ctx context.Context, c *apiClient, bank string) (bankStats, error) {
	var s bankStats
	err := c.call(ctx, http.MethodGet, "/v1/default/banks/"+bank+"/stats", nil, &s)
	return s, err
}

func sortedBanks(expected map[string]int) []string {
	banks := make([]string, 0, len(expected))
	for b := range expected {
		banks = append(banks, b)
	}
	sort.Strings(banks)
	return banks
}

// waitEvalIngested polls bank stats until every produced event is stored
// or dead-lettered. It returns the number dead-lettered: those events'
// questions cannot be answered, so the caller reports them.
func waitEvalIngested(ctx context.Context, c *apiClient, expected map[string]int, timeout time.Duration) (int64, error) {
	banks := sortedBanks(expected)
	deadline := time.Now().Add(timeout)
	for {
		var done, want, dead int64
		complete := true
		for _, b := range banks {
			s, err := statsOf(ctx, c, b)
			if err != nil && ctx.Err() != nil {
				return 0, ctx.Err()
			}
			// A bank that has not seen its first event yet answers 404.
			got := s.EventsIngested + s.EventsDeadLettered
			done += got
			dead += s.EventsDeadLettered
			want += int64(expected[b])
			if got < int64(expected[b]) {
				complete = false
			}
		}
		if complete {
			return dead, nil
		}
		if time.Now().After(deadline) {
			return dead, fmt.Errorf("eval run: only %d of %d events stored after %s", done, want, timeout)
		}
		select {
		case <-ctx.Done():
			return dead, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// waitConsolidated waits until no bank has facts pending consolidation. If
// the total does not move for stall, nothing is consolidating (this build
// may run no consolidation worker), and it returns a note instead of
// blocking for the whole timeout.
func waitConsolidated(ctx context.Context, c *apiClient, expected map[string]int, timeout, stall time.Duration) (string, error) {
	banks := sortedBanks(expected)
	deadline := time.Now().Add(timeout)
	last, lastChange := int64(-1), time.Now()
	for {
		var pending int64
		for _, b := range banks {
			s, err := statsOf(ctx, c, b)
			if err != nil {
				return "", fmt.Errorf("eval run: stats of bank %s: %w", b, err)
			}
			pending += s.PendingConsolidation
		}
		if pending == 0 {
			return "", nil
		}
		now := time.Now()
		if pending != last {
			last, lastChange = pending, now
		}
		if now.Sub(lastChange) >= stall {
			return fmt.Sprintf("consolidation did not drain: %d facts still pending and the count did not change for %s (no consolidation worker is running); observations are absent from these results.", pending, stall), nil
		}
		if now.After(deadline) {
			return fmt.Sprintf("consolidation did not drain within %s: %d facts still pending; results include only the observations built so far.", timeout, pending), nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
