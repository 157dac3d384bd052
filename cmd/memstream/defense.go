package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/store"
)

const defenseUsage = `Usage: memstream defense rescan --bank B [--dry-run] [--batch-size N] [--config F] [--set key=value]...

Applies the bank's current defense policy (its stored policy over the
configured default) to what is already stored: facts (text, context, tags,
metadata), chunks, observation evidence and history, mental models,
documents, entities and aliases. Findings are redacted in place; a fact the
policy now blocks is invalidated with reason "blocked_by_policy: <labels>";
an entity or alias named after a secret is removed. Redacted facts get a new
embedding and search text. --dry-run counts findings per label and the rows
that would change, and writes nothing.`

func cmdDefense(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "rescan" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintln(stdout, defenseUsage)
			return nil
		}
		fmt.Fprintln(stderr, defenseUsage)
		return errors.New("defense: the only subcommand is rescan")
	}
	fs := flag.NewFlagSet("defense rescan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path, sets := commonFlags(fs)
	bank := fs.String("bank", "", "bank to rescan (required)")
	dry := fs.Bool("dry-run", false, "count findings per label and rows that would change; write nothing")
	batch := fs.Int("batch-size", 256, "rows per transaction")
	fs.Usage = func() {
		fmt.Fprintln(stderr, defenseUsage+"\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *bank == "" {
		fs.Usage()
		return errors.New("defense rescan: --bank is required")
	}
	if *batch <= 0 {
		return fmt.Errorf("defense rescan: --batch-size must be positive, got %d", *batch)
	}
	cfg, _, st, closeStore, err := commandStore(ctx, *path, *sets, stderr)
	if err != nil {
		return err
	}
	defer closeStore()

	b, err := st.GetBank(ctx, *bank)
	if err != nil {
		return fmt.Errorf("defense rescan: %w", err)
	}
	policy, err := defense.MergePolicy(basePolicy(cfg), b.DefensePolicy)
	if err != nil {
		return fmt.Errorf("defense rescan bank %s: stored policy: %w", *bank, err)
	}
	gate, err := rescanGate(ctx, cfg, st)
	if err != nil {
		return err
	}
	var emb store.TextEmbedder
	if !*dry {
		e, err := newEmbedder(cfg)
		if err != nil {
			return err
		}
		emb = e
	}
	pol, _ := json.Marshal(policy)
	fmt.Fprintf(stderr, "rescanning bank %s with policy %s%s\n", *bank, pol, map[bool]string{true: " (dry run: nothing is written)"}[*dry])
	start := time.Now()
	last := time.Time{}
	rep, err := st.RescanDefense(ctx, gate, emb, store.RescanConfig{
		BankID: *bank, Policy: policy, DryRun: *dry, BatchSize: *batch,
		Progress: func(p store.RescanProgress) {
			// Throttled: a large bank reports a few lines a second, not
			// one per batch.
			if time.Since(last) < 500*time.Millisecond {
				return
			}
			last = time.Now()
			fmt.Fprintf(stderr, "  %-22s %8d scanned %8d changed\n", p.Target, p.Scanned, p.Changed)
		},
	})
	if err != nil {
		return err
	}
	line, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, string(line))
	printRescanSummary(stderr, rep, time.Since(start))
	return nil
}

// rescanGate builds the gate with the same fingerprint salt the ingest
// path uses, so a rescan's audit rows match the fingerprints of findings
// in new events.
func rescanGate(ctx context.Context, cfg config.Config, st *store.Store) (*defense.Gate, error) {
	salt := cfg.Defense.AuditSalt
	if salt == "" {
		var raw [32]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return nil, err
		}
		var err error
		if salt, err = st.AuditSalt(ctx, hex.EncodeToString(raw[:])); err != nil {
			return nil, err
		}
	}
	return defense.NewGate(defense.GateConfig{FingerprintSalt: []byte(salt),
		Scanner: defense.ScannerConfig{EnableEmail: cfg.Defense.EnableEmail, EnablePhone: cfg.Defense.EnablePhone}}, nil, nil)
}

func printRescanSummary(w io.Writer, rep store.RescanReport, took time.Duration) {
	verb := "changed"
	if rep.DryRun {
		verb = "would change"
	}
	fmt.Fprintf(w, "bank %s rescanned in %s\n", rep.BankID, took.Round(time.Millisecond))
	targets := make([]string, 0, len(rep.Scanned))
	for t := range rep.Scanned {
		targets = append(targets, t)
	}
	sort.Strings(targets)
	for _, t := range targets {
		fmt.Fprintf(w, "  %-22s %8d scanned %8d %s\n", t, rep.Scanned[t], rep.Changed[t], verb)
	}
	labels := make([]string, 0, len(rep.Findings))
	for l := range rep.Findings {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	if len(labels) == 0 {
		fmt.Fprintln(w, "  no findings")
	}
	for _, l := range labels {
		fmt.Fprintf(w, "  finding %-30s %6d\n", l, rep.Findings[l])
	}
	fmt.Fprintf(w, "  facts invalidated (blocked): %d, re-embedded: %d, search_aux rebuilt: %d, audit rows: %d, conflicts: %d\n",
		rep.Invalidated, rep.Reembedded, rep.AuxRebuilt, rep.AuditRows, rep.Conflicts)
	if rep.Conflicts > 0 {
		fmt.Fprintln(w, "  some rows changed while they were being rescanned; run the rescan again to cover them")
	}
}
