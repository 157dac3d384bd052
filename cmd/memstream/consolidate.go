package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/consolidate"
	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/simscale"
	"github.com/memstream/memstream/store"
)

// newAdjudicator picks the consolidation adjudicator for llm.provider;
// its calls go through hc (nil: a client of its own).
func newAdjudicator(cfg config.Config, hc *http.Client) (consolidate.Adjudicator, error) {
	if cfg.LLM.Provider == "openai" {
		deps := consolidate.OpenAIDeps{HTTPClient: hc}
		a, err := consolidate.NewOpenAI(deps, consolidate.OpenAIConfig{BaseURL: cfg.LLM.BaseURL, APIKey: cfg.LLM.APIKey,
			Model: cfg.LLM.Model, Timeout: cfg.LLM.Timeout, Concurrency: cfg.Consolidation.AdjudicateConcurrency})
		if err != nil {
			return nil, fmt.Errorf("consolidation: %w", err)
		}
		return a, nil
	}
	return consolidate.NewOffline(consolidate.OfflineConfig{})
}

// newConsolidationWorker builds the worker role from the configuration:
// the same constructor serves `serve --roles worker` and the on-demand
// `consolidate` command. rec ranks observations for mental models (nil: a
// plain similarity query); hc is how it reaches the LLM; reg may be nil.
func newConsolidationWorker(cfg config.Config, st *store.Store, emb consolidate.Embedder, scale simscale.Scale, rec consolidate.ObservationRecaller,
	hc *http.Client, reg prometheus.Registerer, log *slog.Logger, progress func(string, consolidate.Result)) (*consolidate.Worker, error) {
	adj, err := newAdjudicator(cfg, hc)
	if err != nil {
		return nil, err
	}
	c := cfg.Consolidation
	return consolidate.New(consolidate.Deps{Store: st, Embedder: emb, Adjudicator: adj, Recaller: rec, Logger: log.With("component", "consolidate"),
		Registerer: reg, Progress: progress, Scale: scale}, consolidate.Config{Workers: c.Workers, BatchSize: c.BatchSize,
		PollInterval: c.PollInterval, RatePerSecond: c.RatePerSecond, MentalModelMinInterval: c.MentalModelMinInterval,
		MaxDrain: c.MaxDrain, JobRetention: c.JobRetention, FailedJobRetention: c.FailedJobRetention})
}

// cmdConsolidate drains one bank's consolidation backlog now, with the
// configured provider and rate limit, printing progress and a summary.
func cmdConsolidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("consolidate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path, sets := commonFlags(fs)
	bank := fs.String("bank", "", "bank to consolidate (required)")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: memstream consolidate --bank B [--json] [--config F] [--set key=value]...\n\n"+
			"Consolidates the bank's pending facts into observations now, then refreshes its trends and mental models. Flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bank == "" {
		fs.Usage()
		return errors.New("consolidate: --bank is required")
	}
	cfg, log, st, closeStore, err := commandStore(ctx, *path, *sets, stderr)
	if err != nil {
		return err
	}
	defer closeStore()
	emb, err := embed.FromConfig(cfg.Embed)
	if err != nil {
		return err
	}
	pending, err := st.BankBacklog(ctx, *bank)
	if err != nil {
		return err
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "bank %s: %d facts pending consolidation\n", *bank, pending)
	}
	start := time.Now()
	progress := func(b string, r consolidate.Result) {
		if !*asJSON {
			fmt.Fprintf(stdout, "  %d/%d facts: %d created, %d updated, %d invalidated, %d merged\n",
				r.Facts, pending, r.Created, r.Updated, r.Invalidated, r.Merged)
		}
	}
	scale, err := simscale.Load(ctx, st, emb, embed.Key(cfg.Embed))
	if err != nil {
		return err
	}
	rec, err := recall.New(recall.Deps{Store: st, Embedder: emb, Clock: st, Logger: log}, recall.Config{Scale: scale})
	if err != nil {
		return err
	}
	w, err := newConsolidationWorker(cfg, st, emb, scale, rec, nil, nil, log, progress)
	if err != nil {
		return err
	}
	res, err := w.DrainBank(ctx, *bank)
	if err != nil {
		return fmt.Errorf("consolidate bank %s: %w", *bank, err)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(struct {
			Bank    string  `json:"bank_id"`
			Seconds float64 `json:"seconds"`
			consolidate.Result
		}{*bank, time.Since(start).Seconds(), res})
	}
	res.WriteSummary(stdout, *bank, time.Since(start))
	return nil
}
