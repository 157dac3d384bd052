package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/memstream/memstream/internal/bench"
)

// benchDefense runs `memstream bench defense`: scanner throughput on clean
// and secret-dense chat text, against a strings.Contains pass over the same
// text in the same run (SPEC §7). The JSON line goes to stdout so it can be
// recorded as is; the human summary goes to stderr.
func benchDefense(ctx context.Context, args []string, stdout, stderr io.Writer) error {
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
	res, err := bench.RunDefense(ctx, bench.DefenseConfig{SizeBytes: *sizeMB << 20, MinDuration: *dur, Seed: *seed})
	if err != nil {
		return err
	}
	return res.Report(stdout, stderr)
}
