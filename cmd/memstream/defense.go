package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/defense/rescan"
	"github.com/memstream/memstream/embed"
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
	gate, err := newGate(ctx, cfg, st, nil, nil)
	if err != nil {
		return err
	}
	var emb rescan.Embedder
	if !*dry {
		e, err := embed.FromConfig(cfg.Embed)
		if err != nil {
			return err
		}
		emb = e
	}
	pol, _ := json.Marshal(policy)
	fmt.Fprintf(stderr, "rescanning bank %s with policy %s%s\n", *bank, pol, map[bool]string{true: " (dry run: nothing is written)"}[*dry])
	start := time.Now()
	last := time.Time{}
	rep, err := rescan.Run(ctx, rescan.Deps{Store: st, Gate: gate, Embedder: emb}, rescan.Config{
		BankID: *bank, Policy: policy, DryRun: *dry, BatchSize: *batch,
		Progress: func(p rescan.Progress) {
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
	rep.WriteSummary(stderr, time.Since(start))
	return nil
}
