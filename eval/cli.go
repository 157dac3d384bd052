package eval

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Usage is the help text of `memstream eval`.
const Usage = `Usage:
  memstream eval gen --out DIR [--seed N] [--size small|full|gate] [--part heldout|tuning|both|heldout-2|heldout-3|dialogue|dialogue-tuning|all]
  memstream eval run DIR [--api URL] [--part heldout|tuning|heldout-2|heldout-3|dialogue|dialogue-tuning] [--arms a,b] [--fusion rrf|interleave] [--ablation [--ablation-off a+b]]
  memstream eval run DIR --target hindsight --ingest retain (--api URL | --hindsight-bin BIN)

gen writes a deterministic LongMemEval-style dataset (events.jsonl,
questions.jsonl, manifest.json) with two parts: a tuning part, and a
held-out part with its own vocabulary that is reported and gated but never
tuned against. --part heldout-2 writes a second held-out part instead:
the same question types with a vocabulary of its own, written blind by a
writer who had seen no result, reported like the held-out part and never
tuned against; --part heldout-3 writes a third one, written blind the
same way with a vocabulary of its own. --part dialogue writes a part of
another shape (--part all: all six): chats between two named people, one event per message,
with third-person questions about either of them, reported like the
held-out part and never tuned against.
--part dialogue-tuning writes its tuning counterpart: the same shape with
its own vocabulary, whose misses are written like the tuning part's. run ingests
DIR/events.jsonl through Kafka (by default into
a private in-process memstream: embedded Kafka, a managed PostgreSQL on a
free port in a temporary directory, the HTTP API), waits until every event
is stored, asks every question through the recall API, asks the same
questions of two plain baselines over the raw turns (BM25, and dense top-k
with the configured embedder), scores each part on its own and writes
report.json, report.md, recall_by_type.png and the misses.jsonl of the
tuning and dialogue-tuning parts into DIR. With --target hindsight the same events are
retained into Hindsight 1.1.0 (its no-LLM chunks mode) and the same
questions asked of it.
`

// GenCommand runs `memstream eval gen [flags]`.
func GenCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Int64("seed", 1, "random seed; the same seed and size give byte-identical files")
	out := fs.String("out", "", "directory to write the dataset to (required)")
	size := fs.String("size", "small", "preset: small (about 60 questions per part, for tests), full (several hundred per part, for reports) or gate (the make test gate: small, held-out only)")
	part := fs.String("part", "both", "parts to generate: heldout, tuning, both (the default; neither heldout-2, heldout-3 nor a dialogue part), heldout-2, heldout-3, dialogue, dialogue-tuning, or all six")
	fs.Usage = func() {
		fmt.Fprint(stderr, Usage+"\nFlags of gen:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		fs.Usage()
		return errors.New("eval gen: --out is required")
	}
	cfg, err := Preset(*size, *part)
	if err != nil {
		return fmt.Errorf("eval gen: %w", err)
	}
	cfg.Seed = *seed
	d, err := Generate(cfg)
	if err != nil {
		return err
	}
	if err := d.Write(*out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%s): %s", *out, *size, d.Manifest.Summary())
	return nil
}
