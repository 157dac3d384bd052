package main

import (
	"context"
	"io"

	"github.com/memstream/memstream/internal/bench"
)

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return bench.Command(ctx, bench.CommandDeps{BasePolicy: basePolicy}, args, stdout, stderr)
}
