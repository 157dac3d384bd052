package lifetime

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestNamedPrefixesTheError(t *testing.T) {
	boom := errors.New("boom")
	err := Named("pipeline", func(context.Context) error { return boom }, context.Background())()
	if !errors.Is(err, boom) || err.Error() != "pipeline: boom" {
		t.Errorf("got %v; want pipeline: boom, wrapping the cause", err)
	}
	if err := Named("x", func(context.Context) error { return nil }, context.Background())(); err != nil {
		t.Errorf("a clean return became %v", err)
	}
}

func TestInterruptStopsWithTheDeadlineAndLogsAFailure(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	type key struct{}
	deadline := context.WithValue(context.Background(), key{}, "shutdown")
	var got context.Context
	Interrupt("http", func(ctx context.Context) error { got = ctx; return context.DeadlineExceeded }, func() context.Context { return deadline }, log)(nil)
	if got != deadline {
		t.Error("stop did not get the shutdown context")
	}
	if !strings.Contains(buf.String(), "http did not stop within the shutdown deadline") {
		t.Errorf("log %q lacks the warning", buf.String())
	}
}
