package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/memstream/memstream/consolidate"
)

// cmdExport writes knowledge pages: each mental model of a bank as
// markdown with YAML front matter, DIR/<bank>/<slug>.md.
func cmdExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "pages" {
		return errors.New("usage: memstream export pages --bank B --out DIR [--config F]")
	}
	fs := flag.NewFlagSet("export pages", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path, sets := commonFlags(fs)
	bank := fs.String("bank", "", "bank to export (required)")
	out := fs.String("out", "", "directory to write into; pages go to DIR/<bank>/<name>.md (required)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: memstream export pages --bank B --out DIR [--config F] [--set key=value]...\n\n"+
			"Writes each mental model of the bank as a markdown page with front matter (question, refreshed_at, sources). Flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *bank == "" || *out == "" {
		fs.Usage()
		return errors.New("export pages: --bank and --out are required")
	}
	_, _, st, closeStore, err := commandStore(ctx, *path, *sets, stderr)
	if err != nil {
		return err
	}
	defer closeStore()
	paths, err := consolidate.WritePages(ctx, st, *bank, *out)
	if err != nil {
		return err
	}
	for _, p := range paths {
		fmt.Fprintln(stdout, p)
	}
	fmt.Fprintf(stdout, "%d pages written for bank %s\n", len(paths), *bank)
	return nil
}
