// Package lifetimetest checks a component's Run(ctx)/Stop(ctx) pair the
// same way in every package's tests: Stop ends a Run in progress, Run
// returns nil, and Stop does not return before Run has.
package lifetimetest

import (
	"context"
	"testing"
	"time"
)

// Component has the project's lifetime convention (docs/DESIGN.md).
type Component interface {
	Run(ctx context.Context) error
	Stop(ctx context.Context) error
}

// returnGrace is how long after Stop returns Run may take to return.
const returnGrace = time.Second

// CheckStop starts c.Run in a goroutine, calls running (which returns once
// Run is doing its work, or fails t), then calls c.Stop bounded by
// timeout. It fails t if Stop errs, if Run had not returned when Stop
// did, or if Run returned an error.
func CheckStop(t testing.TB, c Component, timeout time.Duration, running func()) {
	t.Helper()
	ran := make(chan error, 1)
	go func() { ran <- c.Run(context.Background()) }()
	running()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	// Run's own return comes a moment after its deferred end has released
	// Stop, so it gets a grace period, not an instant.
	select {
	case err := <-ran:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(returnGrace):
		t.Fatalf("Stop returned and Run had not %v later", returnGrace)
	}
}
