package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Output files of a benchmark run, written into the dataset directory
// next to the data they were measured on.
const (
	ReportJSON = "report.json"
	ReportMD   = "report.md"
	ChartPNG   = "recall_by_type.png"
	MissesFile = "misses.jsonl"
)

// BenchmarkDeps are what RunBenchmark publishes and embeds with.
type BenchmarkDeps struct {
	// Produce publishes an events file (one SPEC §3 event per line) to
	// memstream's Kafka and returns how many it sent.
	Produce func(ctx context.Context, eventsFile string) (int, error)
	// Embedder is the embedder memstream runs with, for the dense
	// baseline.
	Embedder Embedder
}

// BenchmarkConfig configures RunBenchmark. The caller owns memstream
// itself (an in-process stack, or a running server) and hands over its
// API address and a way to publish events to its Kafka.
type BenchmarkConfig struct {
	// Dir is a dataset directory written by Dataset.Write; the reports go
	// there too.
	Dir string
	// Part restricts the run to one part (its banks and questions); empty
	// runs every part the dataset has.
	Part string
	// BaseURL is memstream's HTTP API; Token its bearer key, if any.
	BaseURL, Token string
	// SkipIngest runs without publishing the events (BenchmarkDeps.Produce
	// is unused); NoBaselines skips both baselines (BenchmarkDeps.Embedder
	// is unused).
	SkipIngest  bool
	NoBaselines bool
	// Arms and Fusion configure the main run; Ablation repeats the
	// questions with each AblationVariants entry.
	Arms     []string
	Fusion   string
	Ablation bool
	// AblationOff adds ablation rows with each set of heuristics off
	// together (ParseJointOff): redundant heuristics each look useless
	// one at a time.
	AblationOff [][]string
	// MaxTokens is the recall budget (default 2048); Concurrency the
	// questions in flight (default 1).
	MaxTokens   int
	Concurrency int
	// IngestTimeout bounds the wait for every event to be stored (default
	// 20m). ConsolidationTimeout bounds the wait for
	// pending_consolidation to reach zero (default 10m);
	// ConsolidationStall gives up earlier when the count does not move at
	// all (default 30s), which is what happens when no worker consumes it.
	IngestTimeout time.Duration
	// Ingest is IngestKafka (default) or IngestRetain; RetainConcurrency
	// is how many banks retain at once (default 8).
	Ingest            string
	RetainConcurrency int
	// Context is the label sent with every event (the Kafka event's
	// context, the retain item's), the way a Hindsight client sends one
	// context with every item; empty sends none, as generated.
	Context              string
	ConsolidationTimeout time.Duration
	ConsolidationStall   time.Duration
	// Target is whose API BaseURL is: TargetMemstream (default) or
	// TargetHindsight (retain ingest only, no ablation).
	Target string
	// NoFiles skips writing report files (a test that needs the numbers
	// only).
	NoFiles bool
	// Out receives progress lines and the tables; nil discards them.
	Out io.Writer
}

// WithDefaults fills zero fields.
func (c BenchmarkConfig) WithDefaults() BenchmarkConfig {
	if c.MaxTokens == 0 {
		c.MaxTokens = 2048
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 1
	}
	if c.Fusion == "" {
		c.Fusion = "rrf"
	}
	if c.IngestTimeout <= 0 {
		c.IngestTimeout = 20 * time.Minute
	}
	if c.ConsolidationTimeout <= 0 {
		c.ConsolidationTimeout = 10 * time.Minute
	}
	if c.ConsolidationStall <= 0 {
		c.ConsolidationStall = 30 * time.Second
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Ingest == "" {
		c.Ingest = IngestKafka
	}
	if c.RetainConcurrency <= 0 {
		c.RetainConcurrency = 8
	}
	if c.Target == "" {
		c.Target = TargetMemstream
	}
	return c
}

func (c BenchmarkConfig) validate(deps BenchmarkDeps) error {
	switch {
	case c.Dir == "":
		return errors.New("eval: BenchmarkConfig.Dir is empty")
	case c.Part != "" && !IsPart(c.Part):
		return fmt.Errorf("eval: BenchmarkConfig.Part %q is not %s", c.Part, partNames())
	case c.Ingest != IngestKafka && c.Ingest != IngestRetain:
		return fmt.Errorf("eval: BenchmarkConfig.Ingest %q is not %s or %s", c.Ingest, IngestKafka, IngestRetain)
	case !c.SkipIngest && c.Ingest == IngestKafka && deps.Produce == nil:
		return errors.New("eval: BenchmarkDeps.Produce is nil and SkipIngest is not set")
	case !c.NoBaselines && deps.Embedder == nil:
		return errors.New("eval: BenchmarkDeps.Embedder is nil and NoBaselines is not set")
	}
	return c.targetError()
}

// Outcome is what a benchmark run measured; it is also report.json.
type Outcome struct {
	Manifest Manifest `json:"manifest"`
	// Parts holds one report per part, held-out first.
	Parts []*PartOutcome `json:"parts"`
	// Notes explain what the numbers do not cover (consolidation not
	// drained, no reranker), so a reader of report.json sees them too.
	Notes      []string `json:"notes,omitempty"`
	IngestSecs float64  `json:"ingest_seconds"`
	// ConsolidationSecs is how long the wait for consolidation took after
	// ingestion, until it drained or the runner gave up.
	ConsolidationSecs float64 `json:"consolidation_seconds"`
	// BaselineSecs is how long building the baselines took (the dense one
	// embeds every raw turn).
	BaselineSecs float64 `json:"baseline_seconds"`
	MeasuredAt   string  `json:"measured_at"`
	Banks        int     `json:"banks"`
	DeadLetters  int64   `json:"dead_letters"`
	// Ingest is how the events reached memstream (IngestKafka or
	// IngestRetain); Facts how many facts the banks hold after it.
	Ingest string `json:"ingest"`
	Facts  int    `json:"facts"`
	// Context is the label the events carried (BenchmarkConfig.Context).
	Context string `json:"context,omitempty"`
	// Target is the system asked (TargetMemstream or TargetHindsight);
	// Chunks, for Hindsight, how many turns its stored units hold.
	Target string      `json:"target"`
	Chunks *ChunkStats `json:"hindsight_units,omitempty"`
}

// PartOutcome is everything measured on one part of the dataset.
type PartOutcome struct {
	Part string `json:"part"`
	Main Report `json:"main"`
	// Bars checks Main against the quality bars of the current round.
	Bars []Bar `json:"quality_bars"`
	// Baselines are BM25 and dense top-k over the raw turns, asked the
	// same questions in the same run.
	Baselines   []Arm                `json:"baselines,omitempty"`
	VsBaselines []BaselineComparison `json:"vs_baselines,omitempty"`
	Ablation    []Arm                `json:"ablation,omitempty"`
	// Coverage says which evidence turns ingestion stored at all.
	Coverage Coverage `json:"coverage"`
}

// Part returns the report of one part, or nil.
func (o *Outcome) Part(p string) *PartOutcome {
	for _, x := range o.Parts {
		if x.Part == p {
			return x
		}
	}
	return nil
}

// RunBenchmark ingests the dataset (unless told not to), waits until it is
// stored and consolidated, asks every question of memstream and of the
// baselines, scores each part on its own and writes the reports.
func RunBenchmark(ctx context.Context, deps BenchmarkDeps, cfg BenchmarkConfig) (*Outcome, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(deps); err != nil {
		return nil, err
	}
	stdout := cfg.Out
	d, err := Load(cfg.Dir)
	if err != nil {
		return nil, err
	}
	eventsFile := filepath.Join(cfg.Dir, EventsFile)
	if cfg.Part != "" || cfg.Context != "" {
		if cfg.Part != "" {
			if d, err = d.onePart(cfg.Part); err != nil {
				return nil, err
			}
		}
		for i := range d.Events {
			d.Events[i].Context = cfg.Context
		}
		tmp, err := os.MkdirTemp("", "memstream-eval-part-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		if err := d.Write(tmp); err != nil {
			return nil, err
		}
		eventsFile = filepath.Join(tmp, EventsFile)
	}
	// One recaller, derived per variant, so that an observation's evidence
	// is looked up once for the whole run; its client also polls the stats.
	api, err := NewAPIRecaller(APIRecallerDeps{}, APIRecallerConfig{BaseURL: cfg.BaseURL, Token: cfg.Token, MaxTokens: cfg.MaxTokens})
	if err != nil {
		return nil, err
	}
	defer api.Close()
	out := &Outcome{Manifest: d.Manifest, MeasuredAt: time.Now().UTC().Format(time.RFC3339), Ingest: cfg.Ingest, Context: cfg.Context, Target: cfg.Target}
	hindsight := cfg.Target == TargetHindsight
	var turns *ChunkTurns
	itemOf := RetainItemOf
	if hindsight {
		turns, itemOf = NewChunkTurns(d), HindsightItemOf
	}

	expected := map[string]int{}
	for _, e := range d.Events {
		expected[e.BankID]++
	}
	if !cfg.SkipIngest {
		began := time.Now()
		var n int
		if cfg.Ingest == IngestRetain {
			fmt.Fprintf(stdout, "== retaining %d events of %d banks over HTTP (%d banks at once) …\n", len(d.Events), len(expected), cfg.RetainConcurrency)
			n, err = retainEvents(ctx, api, d.Events, cfg.RetainConcurrency, itemOf)
		} else {
			n, err = deps.Produce(ctx, eventsFile)
		}
		if err != nil {
			return nil, err
		}
		label := ""
		if cfg.Context != "" {
			label = fmt.Sprintf(", context %q", cfg.Context)
		}
		fmt.Fprintf(stdout, "== sent %d events of %d banks (%s%s); waiting until they are stored …\n", n, len(expected), cfg.Ingest, label)
		if hindsight {
			// Hindsight's stats count no events; its retains were
			// synchronous, so nothing is left once no operation is pending.
			err = hindsightIdle(ctx, api, sortedBanks(expected), cfg.IngestTimeout)
		} else {
			out.DeadLetters, err = waitIngested(ctx, api.Stats, expected, cfg.IngestTimeout)
		}
		if err != nil {
			return nil, err
		}
		out.IngestSecs = time.Since(began).Seconds()
		fmt.Fprintf(stdout, "== stored in %.1fs (%d dead-lettered)\n", out.IngestSecs, out.DeadLetters)
	}
	out.Banks = len(expected)
	if hindsight {
		out.Notes = append(out.Notes, "Hindsight runs its no-LLM chunks mode: each retained item is cut into chunks of up to 3,000 characters, each chunk is one stored unit, nothing is consolidated. A unit is credited with every turn whose transcript line it holds (a per-message item: its one turn), so one result of a session item can find several evidence turns.")
	} else {
		consBegan := time.Now()
		note, err := WaitConsolidated(ctx, api.Stats, sortedBanks(expected), cfg.ConsolidationTimeout, cfg.ConsolidationStall)
		if err != nil {
			return nil, err
		}
		out.ConsolidationSecs = time.Since(consBegan).Seconds()
		if note == "" {
			fmt.Fprintf(stdout, "== consolidation drained in %.1fs\n", out.ConsolidationSecs)
		} else {
			out.Notes = append(out.Notes, note)
			fmt.Fprintln(stdout, "== note: "+note)
		}
	}

	var stored map[Evidence]bool
	if hindsight {
		var cs ChunkStats
		if stored, cs, err = hindsightStored(ctx, api, turns, sortedBanks(expected)); err != nil {
			return nil, err
		}
		out.Facts, out.Chunks = cs.Units, &cs
		fmt.Fprintf(stdout, "== hindsight: %d units, %.1f turns per unit on average (at most %d; %d without a turn)\n", cs.Units, cs.MeanTurns, cs.MaxTurns, cs.UnmappedUnit)
	} else if stored, out.Facts, err = storedTurns(ctx, api, sortedBanks(expected)); err != nil {
		return nil, err
	}
	facts := out.Facts
	fmt.Fprintf(stdout, "== %d facts stored (ingest %s)\n", facts, cfg.Ingest)
	present := map[string]bool{}
	for _, q := range d.Questions {
		present[q.Part] = true
	}
	for _, p := range AllParts {
		if present[p] {
			cov := EvidenceCoverage(d, stored, p)
			out.Parts = append(out.Parts, &PartOutcome{Part: p, Coverage: cov})
			fmt.Fprintf(stdout, "== %s: %d of %d evidence turns produced a stored fact\n", p, cov.StoredTurns, cov.EvidenceTurns)
		}
	}

	mainName := describeRun(cfg.Arms, cfg.Fusion)
	if hindsight {
		mainName = "hindsight chunks"
	}
	fmt.Fprintf(stdout, "== asking %d questions (%s) …\n", len(d.Questions), mainName)
	recallerOf := func(v Variant) (Recaller, error) {
		if hindsight {
			return NewHindsightRecaller(api, turns), nil
		}
		r, err := api.With(v.Arms, v.Fusion, v.Types, v.Off)
		if err != nil {
			return nil, err
		}
		if v.Collapse {
			return Collapse{Inner: r}, nil
		}
		return r, nil
	}
	mains, rec, err := pass(ctx, d, cfg, recallerOf, Variant{Name: mainName, Arms: cfg.Arms, Fusion: cfg.Fusion})
	if err != nil {
		return nil, err
	}
	for _, p := range out.Parts {
		p.Main = mains[p.Part]
	}

	if !cfg.NoBaselines {
		began := time.Now()
		fmt.Fprintln(stdout, "== baselines: indexing the raw turns (BM25, and dense with the configured embedder) …")
		dense, err := NewDense(ctx, d, deps.Embedder)
		if err != nil {
			return nil, err
		}
		for _, b := range []struct {
			name string
			r    Recaller
		}{{BaselineBM25, NewBM25(d)}, {BaselineDense, dense}} {
			reps, err := RunParts(ctx, d, b.r, RunOptions{Name: b.name, TokenBudget: cfg.MaxTokens, Concurrency: cfg.Concurrency})
			if err != nil {
				return nil, err
			}
			for _, p := range out.Parts {
				p.Baselines = append(p.Baselines, Arm{Name: b.name, Report: reps[p.Part]})
			}
		}
		out.BaselineSecs = time.Since(began).Seconds()
		for _, p := range out.Parts {
			p.VsBaselines = CompareBaselines(p.Main, p.Baselines)
		}
	}
	for _, p := range out.Parts {
		if barred(p.Part) {
			p.Bars = QualityBars(p.Main, p.Baselines...)
		}
	}

	if cfg.Ablation {
		for _, p := range out.Parts {
			p.Ablation = append(p.Ablation, Arm{Name: mainName, Report: p.Main})
		}
		for _, v := range append(AblationVariants(), JointVariants(cfg.AblationOff)...) {
			fmt.Fprintf(stdout, "== ablation: %s …\n", v.Name)
			reps, _, err := pass(ctx, d, cfg, recallerOf, v)
			if err != nil {
				return nil, err
			}
			for _, p := range out.Parts {
				p.Ablation = append(p.Ablation, Arm{Name: v.Name, Report: reps[p.Part]})
			}
		}
	}
	if out.Part(PartHeldOut) != nil {
		out.Notes = append(out.Notes, "The held-out part's misses are deliberately not listed (no misses file, no lost turns): it is never tuned against.")
	}
	if out.Part(PartHeldOut2) != nil {
		out.Notes = append(out.Notes, "The second held-out part's misses are not listed either (no misses file, no lost turns): it was written blind and is never tuned against.")
	}
	if out.Part(PartHeldOut3) != nil {
		out.Notes = append(out.Notes, "The third held-out part's misses are not listed either (no misses file, no lost turns): it was written blind and is never tuned against.")
	}
	if out.Part(PartDialogue) != nil {
		out.Notes = append(out.Notes, "The dialogue part's misses are not listed either (no misses file, no lost turns): like the held-out part it is never tuned against.")
	}
	fmt.Fprintln(stdout)
	fmt.Fprint(stdout, out.Markdown())
	if cfg.NoFiles {
		return out, nil
	}
	if err := out.writeFiles(cfg.Dir); err != nil {
		return nil, err
	}
	files := []string{ReportJSON, ReportMD}
	for _, p := range out.Parts {
		files = append(files, ChartName(p.Part))
	}
	if misses, counts := tunableMisses(d, out.Parts, rec); len(counts) > 0 {
		if err := writeMisses(filepath.Join(cfg.Dir, MissesFile), misses); err != nil {
			return nil, err
		}
		files = append(files, fmt.Sprintf("%s (turn-level and fresh-first misses with their top results: %s)", MissesFile, strings.Join(counts, ", ")))
	}
	fmt.Fprintf(stdout, "\n== wrote %s in %s\n", strings.Join(files, ", "), cfg.Dir)
	return out, nil
}

// tunableMisses are the misses of the parts that may be read (Tunable),
// for one misses file: a miss's bank id says its part. counts says how
// many each part has.
func tunableMisses(d *Dataset, parts []*PartOutcome, rec *Recorder) (misses []Miss, counts []string) {
	for _, p := range parts {
		if Tunable(p.Part) {
			m := Misses(d, p.Main, rec, 5)
			misses = append(misses, m...)
			counts = append(counts, fmt.Sprintf("%d of the %s part", len(m), p.Part))
		}
	}
	return misses, counts
}

// onePart keeps the banks, events and questions of one part.
func (d *Dataset) onePart(part string) (*Dataset, error) {
	banks := map[string]bool{}
	out := &Dataset{Manifest: d.Manifest}
	for _, q := range d.Questions {
		if q.Part == part {
			banks[q.BankID] = true
			out.Questions = append(out.Questions, q)
		}
	}
	if len(out.Questions) == 0 {
		return nil, fmt.Errorf("eval: the dataset has no %s part", part)
	}
	for _, e := range d.Events {
		if banks[e.BankID] {
			out.Events = append(out.Events, e)
		}
	}
	out.Manifest.ByPart = map[string]int{part: len(out.Questions)}
	out.Manifest.Questions, out.Manifest.Events, out.Manifest.Banks = len(out.Questions), len(out.Events), len(banks)
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

// pass asks every question once with one recall configuration and scores
// each part. The recorder holds the results, for the list of misses.
func pass(ctx context.Context, d *Dataset, cfg BenchmarkConfig, recallerOf func(Variant) (Recaller, error), v Variant) (map[string]Report, *Recorder, error) {
	inner, err := recallerOf(v)
	if err != nil {
		return nil, nil, err
	}
	rec := NewRecorder(inner)
	reps, err := RunParts(ctx, d, rec, RunOptions{Name: v.Name, TokenBudget: cfg.MaxTokens, Concurrency: cfg.Concurrency})
	return reps, rec, err
}

// ChartName is the chart file of a part: the held-out part, the one that
// is reported, keeps the plain name.
func ChartName(part string) string {
	if part == PartHeldOut {
		return ChartPNG
	}
	return strings.TrimSuffix(ChartPNG, ".png") + "_" + part + ".png"
}

// barred reports whether a part is held to the quality bars: the
// LongMemEval-shaped parts are; the dialogue parts have no cross-lingual
// questions and no target yet.
func barred(part string) bool {
	return part == PartHeldOut || part == PartTuning || part == PartHeldOut2 || part == PartHeldOut3
}

func partTitle(part string) string {
	if part == PartHeldOut {
		return "Held-out part (reported and gated; never tuned against)"
	}
	if part == PartHeldOut2 {
		return "Second held-out part (written blind; reported, never tuned against)"
	}
	if part == PartHeldOut3 {
		return "Third held-out part (written blind; reported, never tuned against)"
	}
	if part == PartDialogue {
		return "Dialogue part (two named people, third-person questions; reported, never tuned against)"
	}
	if part == PartDialogueTuning {
		return "Dialogue tuning part (two named people, third-person questions; what dialogue recall work is debugged against)"
	}
	return "Tuning part (what recall work is measured and debugged against)"
}

// Markdown renders the whole run: each part's tables, its baselines, its
// bars, its evidence coverage and its ablation, then the notes.
func (o *Outcome) Markdown() string {
	var md strings.Builder
	for _, p := range o.Parts {
		fmt.Fprintf(&md, "# %s\n\n", partTitle(p.Part))
		md.WriteString(p.Main.Markdown())
		if len(p.Baselines) > 0 {
			md.WriteString("\n")
			md.WriteString(BaselinesMarkdown(p.Main, p.Baselines))
		}
		if len(p.Bars) > 0 {
			md.WriteString("\n")
			md.WriteString(BarsMarkdown(p.Bars))
		}
		md.WriteString("\n")
		md.WriteString(p.Coverage.Markdown())
		if len(p.Ablation) > 0 {
			md.WriteString("\n")
			md.WriteString(AblationMarkdown(p.Ablation))
		}
		md.WriteString("\n")
	}
	for _, n := range o.Notes {
		md.WriteString("Note: " + n + "\n\n")
	}
	return md.String()
}

func (o *Outcome) writeFiles(dir string) error {
	b, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", ReportJSON, err)
	}
	if err := os.WriteFile(filepath.Join(dir, ReportJSON), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", ReportJSON, err)
	}
	var md strings.Builder
	m := o.Manifest
	fmt.Fprintf(&md, "# memstream eval report\n\nDataset: %s seed %d, %d banks (%d delivered one event per message), %d sessions, %d events, %d turns, %d questions. Measured %s.\n\n",
		m.Generator, m.Seed, m.Banks, m.PerMessageBanks, m.Sessions, m.Events, m.Turns, m.Questions, o.MeasuredAt)
	if o.Target == TargetHindsight {
		fmt.Fprintf(&md, "Target: Hindsight; ingest: %s; %d units stored.\n\n", o.Ingest, o.Facts)
	} else {
		fmt.Fprintf(&md, "Ingest: %s; %d facts stored.\n\n", o.Ingest, o.Facts)
	}
	md.WriteString(o.Markdown())
	if err := os.WriteFile(filepath.Join(dir, ReportMD), []byte(md.String()), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", ReportMD, err)
	}
	for _, p := range o.Parts {
		if err := p.Main.WriteChart(filepath.Join(dir, ChartName(p.Part))); err != nil {
			return err
		}
	}
	return nil
}

// writeMisses writes one JSON line per missed question, so that a recall
// regression can be read question by question (jq, grep).
func writeMisses(path string, misses []Miss) error {
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

// storedTurns pages through every bank's memories and collects the source
// turn of each fact, for the evidence coverage, and counts the facts
// (world and experience; the list holds observations too).
func storedTurns(ctx context.Context, c *APIRecaller, banks []string) (map[Evidence]bool, int, error) {
	const pageSize = 1000
	out := map[Evidence]bool{}
	facts := 0
	for _, b := range banks {
		for offset := 0; ; offset += pageSize {
			var page struct {
				Items []struct {
					DocumentID string            `json:"document_id"`
					FactType   string            `json:"fact_type"`
					Metadata   map[string]string `json:"metadata"`
				} `json:"items"`
				Total int `json:"total"`
			}
			path := fmt.Sprintf("%s/memories/list?limit=%d&offset=%d", bankPath(b), pageSize, offset)
			if err := c.call(ctx, http.MethodGet, path, nil, &page); err != nil {
				return nil, 0, fmt.Errorf("eval: list memories of bank %s: %w", b, err)
			}
			for _, it := range page.Items {
				if it.FactType != "observation" {
					facts++
				}
				idx := TurnOf(it.Metadata)
				if idx == UnknownTurn || it.DocumentID == "" {
					continue
				}
				out[Evidence{SessionID: it.DocumentID, TurnIndex: idx}] = true
			}
			if len(page.Items) < pageSize || offset+pageSize >= page.Total {
				break
			}
		}
	}
	return out, facts, nil
}

// BankStats is the part of GET …/stats the runner waits on.
type BankStats struct {
	EventsIngested       int64 `json:"events_ingested"`
	EventsDeadLettered   int64 `json:"events_dead_lettered"`
	PendingConsolidation int64 `json:"pending_consolidation"`
}

// StatsFunc reads one bank's stats.
type StatsFunc func(ctx context.Context, bankID string) (BankStats, error)

// Stats reads a bank's stats through the API.
func (r *APIRecaller) Stats(ctx context.Context, bankID string) (BankStats, error) {
	var s BankStats
	err := r.call(ctx, http.MethodGet, bankPath(bankID)+"/stats", nil, &s)
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

// waitIngested polls bank stats until every produced event is stored
// or dead-lettered. It returns the number dead-lettered: those events'
// questions cannot be answered, so the caller reports them.
func waitIngested(ctx context.Context, statsOf StatsFunc, expected map[string]int, timeout time.Duration) (int64, error) {
	banks := sortedBanks(expected)
	deadline := time.Now().Add(timeout)
	for {
		var done, want, dead int64
		complete := true
		for _, b := range banks {
			s, err := statsOf(ctx, b)
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
			return dead, fmt.Errorf("eval: only %d of %d events stored after %s", done, want, timeout)
		}
		select {
		case <-ctx.Done():
			return dead, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// WaitConsolidated waits until no bank has facts pending consolidation. If
// the total does not move for stall, nothing is consolidating (this build
// may run no consolidation worker), and it returns a note instead of
// blocking for the whole timeout.
func WaitConsolidated(ctx context.Context, statsOf StatsFunc, banks []string, timeout, stall time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	last, lastChange := int64(-1), time.Now()
	for {
		var pending int64
		for _, b := range banks {
			s, err := statsOf(ctx, b)
			if err != nil {
				return "", fmt.Errorf("eval: stats of bank %s: %w", b, err)
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
