package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memstream/memstream/consolidate"
	"github.com/memstream/memstream/store"
)

// ConsolidateConfig is what `memstream bench consolidate` runs: the ingest
// benchmark's synthetic events through the full pipeline with
// consolidation off (the ingest rate), then the consolidation worker on the
// backlog they left (the consolidation rate, and the backlog every
// second), then, with SustainEvents, more events ingested while the worker
// runs (the backlog under sustained load). Offline providers throughout.
type ConsolidateConfig struct {
	Ingest IngestConfig
	// Workers and BatchSize are consolidation.workers and
	// consolidation.batch_size.
	Workers, BatchSize int
	// SustainEvents are ingested, as fast as the pipeline takes them,
	// while the worker runs (0 skips the phase).
	SustainEvents int
	// CPUProfile, when set, receives a CPU profile of the drain phase.
	CPUProfile string
}

// ConsolidateResult is the JSON line of `memstream bench consolidate`.
type ConsolidateResult struct {
	Bench  string `json:"bench"`
	Events int    `json:"events"`
	Facts  int64  `json:"facts"`
	// IngestSeconds and IngestFactsPerS are phase 1: the pipeline with no
	// consolidation running, from the first record to the last commit.
	IngestSeconds   float64 `json:"ingest_seconds"`
	IngestFactsPerS float64 `json:"ingest_facts_per_s"`
	// DrainSeconds and ConsolidatedPerS are phase 2: the worker from start
	// until the backlog of phase 1 is empty.
	DrainSeconds     float64 `json:"drain_seconds"`
	ConsolidatedPerS float64 `json:"consolidated_facts_per_s"`
	// RatioToIngest is ConsolidatedPerS / IngestFactsPerS: at 1 or above
	// the worker keeps up with the pipeline's top speed.
	RatioToIngest float64 `json:"ratio_to_ingest"`
	// Backlog is the unconsolidated facts once per second during phase 2.
	Backlog []int64 `json:"backlog"`
	// Outcome is what the worker wrote, from its metrics.
	Outcome consolidate.Result `json:"outcome"`
	// Sustained is phase 3, when run.
	Sustained *SustainedResult `json:"sustained,omitempty"`
	// PhaseSeconds sums memstream_consolidation_phase_seconds over phase 2
	// (summed over workers): where the drain's time went.
	PhaseSeconds map[string]float64 `json:"phase_seconds"`
	Workers      int                `json:"workers"`
	BatchSize    int                `json:"batch_size"`
	Lanes        int                `json:"lanes"`
	// Embedder is the embedding provider of both phases.
	Embedder   string `json:"embedder"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	// LoadAvg is /proc/loadavg's 1-minute figure at the start and the end:
	// the machine is shared, and the load moves every absolute number.
	LoadAvg  [2]string `json:"loadavg_1m"`
	Postgres string    `json:"postgres"`
}

// SustainedResult is ingest and consolidation running at once.
type SustainedResult struct {
	Events          int     `json:"events"`
	Facts           int64   `json:"facts"`
	IngestSeconds   float64 `json:"ingest_seconds"`
	IngestFactsPerS float64 `json:"ingest_facts_per_s"`
	// MaxBacklog is the largest backlog seen; DrainedAfterS the time from
	// the start of the phase until the backlog was empty again.
	MaxBacklog    int64   `json:"max_backlog"`
	DrainedAfterS float64 `json:"drained_after_s"`
	Backlog       []int64 `json:"backlog"`
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// RunConsolidate runs the consolidation benchmark: one JSON line to
// stdout, progress and a summary to stderr.
func RunConsolidate(ctx context.Context, deps IngestDeps, c ConsolidateConfig, stdout, stderr io.Writer) error {
	res := ConsolidateResult{Bench: "consolidate", Events: c.Ingest.Events, Workers: c.Workers, BatchSize: c.BatchSize,
		Lanes: c.Ingest.Lanes, GOMAXPROCS: runtime.GOMAXPROCS(0)}
	res.LoadAvg[0] = loadAvg()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	env, err := openBenchEnv(ctx, deps, c.Ingest.DatabaseURL, c.Ingest.Dim, stderr, log)
	if err != nil {
		return err
	}
	defer env.close()
	res.Postgres = env.pgMajor
	if len(c.Ingest.Embedders) > 0 {
		env.provider = c.Ingest.Embedders[0]
	}
	res.Embedder = env.provider
	if res.Embedder == "" {
		res.Embedder = env.cfg.Embed.Provider
	}
	t0 := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	rig, err := startRig(ctx, env, c.Ingest, nil, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	defer rig.stop()

	// Phase 1: ingest with nothing consolidating, as bench ingest does.
	evs := genEvents(c.Ingest.Events, c.Ingest.Banks, c.Ingest.Seed, "", t0)
	fmt.Fprintf(stderr, "bench consolidate: phase 1: ingesting %d events, consolidation off\n", len(evs))
	if _, err := rig.produce(ctx, evs); err != nil {
		return err
	}
	rig.run(ctx)
	if err := rig.waitDone(ctx, int64(len(evs)), "ingest", stderr); err != nil {
		return err
	}
	res.IngestSeconds = rig.sinceFirst()
	backlog, err := env.st.ConsolidationBacklog(ctx)
	if err != nil {
		return err
	}
	res.Facts = backlog.Facts
	res.IngestFactsPerS = float64(res.Facts) / res.IngestSeconds

	// Phase 2: the worker drains what phase 1 left.
	emb, err := deps.NewEmbedder(env.provider, c.Ingest.Dim)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	w, err := consolidate.New(consolidate.Deps{Store: env.st, Embedder: emb, Logger: log, Registerer: reg},
		consolidate.Config{Workers: c.Workers, BatchSize: c.BatchSize, PollInterval: 50 * time.Millisecond})
	if err != nil {
		return err
	}
	if c.CPUProfile != "" {
		pf, err := os.Create(c.CPUProfile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "bench consolidate: phase 2: draining %d facts with %d workers × batch %d\n", res.Facts, c.Workers, c.BatchSize)
	wctx, stopWorker := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() {
		stopWorker()
		<-done
	}()
	start := time.Now()
	res.Backlog, err = sampleBacklog(ctx, env.st, stderr, "drain", func(int64) bool { return false })
	if err != nil {
		return err
	}
	res.DrainSeconds = time.Since(start).Seconds()
	if c.CPUProfile != "" {
		pprof.StopCPUProfile()
	}
	res.ConsolidatedPerS = float64(res.Facts) / res.DrainSeconds
	res.RatioToIngest = res.ConsolidatedPerS / res.IngestFactsPerS
	res.PhaseSeconds = histogramSums(reg, "memstream_consolidation_phase_seconds", "phase")
	res.Outcome = outcome(reg)

	// Phase 3: more events while the worker runs.
	if c.SustainEvents > 0 {
		s := &SustainedResult{Events: c.SustainEvents}
		more := genEvents(c.SustainEvents, c.Ingest.Banks, c.Ingest.Seed+1, "s-", t0.Add(benchSpan))
		fmt.Fprintf(stderr, "bench consolidate: phase 3: ingesting %d more events while consolidating\n", len(more))
		before := rig.clock.done.Load() + rig.clock.dead.Load()
		factsBefore := rig.clock.facts.Load()
		start := time.Now()
		if _, err := rig.produce(ctx, more); err != nil {
			return err
		}
		ingested := make(chan error, 1)
		go func() {
			err := rig.waitDone(ctx, before+int64(len(more)), "sustained ingest", io.Discard)
			s.IngestSeconds = time.Since(start).Seconds()
			ingested <- err
		}()
		var ingestDone bool
		s.Backlog, err = sampleBacklog(ctx, env.st, stderr, "sustained", func(n int64) bool {
			if !ingestDone {
				select {
				case err := <-ingested:
					ingestDone = err == nil
				default:
				}
			}
			// Keep sampling while the pipeline still writes.
			return !ingestDone
		})
		if err != nil {
			return err
		}
		s.DrainedAfterS = time.Since(start).Seconds()
		s.Facts = rig.clock.facts.Load() - factsBefore
		if s.IngestSeconds > 0 {
			s.IngestFactsPerS = float64(s.Facts) / s.IngestSeconds
		}
		for _, b := range s.Backlog {
			s.MaxBacklog = max(s.MaxBacklog, b)
		}
		res.Sustained = s
	}
	res.LoadAvg[1] = loadAvg()

	b, _ := json.Marshal(res)
	fmt.Fprintln(stdout, string(b))
	fmt.Fprintf(stderr, `
consolidation (offline providers, %d workers × batch %d, %d pipeline lanes, GOMAXPROCS %d, load %s → %s)
  ingest        %d facts in %.1fs → %.0f facts/s (consolidation off)
  consolidate   %d facts in %.1fs → %.0f facts/s, ratio to ingest %.2f
  outcome       %d observations created, %d updated, %d invalidated, %d merged; %d evidence rows
`, res.Workers, res.BatchSize, res.Lanes, res.GOMAXPROCS, res.LoadAvg[0], res.LoadAvg[1], res.Facts, res.IngestSeconds, res.IngestFactsPerS,
		res.Facts, res.DrainSeconds, res.ConsolidatedPerS, res.RatioToIngest, res.Outcome.Created, res.Outcome.Updated,
		res.Outcome.Invalidated, res.Outcome.Merged, res.Outcome.Evidence)
	if s := res.Sustained; s != nil {
		fmt.Fprintf(stderr, "  sustained     %d more facts at %.0f facts/s while consolidating: backlog peaked at %d, empty %.1fs after the phase began\n",
			s.Facts, s.IngestFactsPerS, s.MaxBacklog, s.DrainedAfterS)
	}
	return nil
}

// sampleBacklog reads the backlog once a second until it is empty and
// more returns false.
func sampleBacklog(ctx context.Context, st *store.Store, stderr io.Writer, label string, more func(int64) bool) ([]int64, error) {
	var series []int64
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		b, err := st.ConsolidationBacklog(ctx)
		if err != nil {
			return series, err
		}
		series = append(series, b.Facts)
		if len(series)%5 == 1 {
			fmt.Fprintf(stderr, "  %s: %4.0fs backlog %d\n", label, time.Since(start).Seconds(), b.Facts)
		}
		if b.Facts == 0 && !more(b.Facts) {
			return series, nil
		}
		select {
		case <-ctx.Done():
			return series, ctx.Err()
		case <-tick.C:
		}
	}
}

// outcome reads what the worker wrote from its metrics.
func outcome(reg *prometheus.Registry) consolidate.Result {
	changes := counterSums(reg, "memstream_consolidation_observation_changes_total", "action")
	facts := counterSums(reg, "memstream_consolidation_facts_total", "outcome")
	return consolidate.Result{Facts: int(facts["applied"]), Created: int(changes["create"]), Updated: int(changes["update"]),
		Invalidated: int(changes["invalidate"]), Merged: int(changes["merge"]), Evidence: int(changes["evidence"])}
}

// counterSums reads a counter vector by one label.
func counterSums(reg *prometheus.Registry, name, label string) map[string]float64 {
	out := map[string]float64{}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// histogramSums reads the sample sums of a histogram vector by one label.
func histogramSums(reg *prometheus.Registry, name, label string) map[string]float64 {
	out := map[string]float64{}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					out[l.GetValue()] = m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	return out
}
