package main

import (
	"context"
	"fmt"
	"io"
)

const benchUsage = `Usage: memstream bench ingest|consolidate|recall|defense|reflect|compare|fake-openai [flags]

Each benchmark prints one JSON line. Speeds come with the ratio to a
baseline measured in the same run on the same data (SPEC §7).`

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, benchUsage)
		return fmt.Errorf("bench: name a benchmark")
	}
	switch args[0] {
	case "ingest":
		return benchIngest(ctx, args[1:], stdout, stderr)
	case "recall":
		return benchRecall(ctx, args[1:], stdout, stderr)
	case "defense":
		return benchDefense(ctx, args[1:], stdout, stderr)
	case "reflect":
		return benchReflect(ctx, args[1:], stdout, stderr)
	case "consolidate":
		return benchConsolidate(ctx, args[1:], stdout, stderr)
	case "compare":
		return benchCompare(ctx, args[1:], stdout, stderr)
	case "fake-openai":
		return benchFakeOpenAI(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, benchUsage)
		return nil
	}
	fmt.Fprintln(stderr, benchUsage)
	return fmt.Errorf("bench: unknown benchmark %q", args[0])
}
