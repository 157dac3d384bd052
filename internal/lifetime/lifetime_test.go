package lifetime

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// component is what a user of Stopper looks like.
type component struct {
	life    Stopper
	started chan struct{}
	linger  time.Duration // how long Run takes to finish after its context ends
}

func (c *component) Run(ctx context.Context) error {
	ctx, end, ok := c.life.Begin(ctx)
	defer end()
	if !ok {
		return nil
	}
	close(c.started)
	<-ctx.Done()
	time.Sleep(c.linger)
	return nil
}

func (c *component) Stop(ctx context.Context) error { return c.life.Stop(ctx) }

func TestStopWaitsForRun(t *testing.T) {
	c := &component{started: make(chan struct{}), linger: 50 * time.Millisecond}
	ran := make(chan error, 1)
	go func() { ran <- c.Run(context.Background()) }()
	<-c.started
	t0 := time.Now()
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if time.Since(t0) < c.linger {
		t.Fatal("Stop did not wait for Run to finish")
	}
	// Run returns just after its deferred end released Stop.
	select {
	case <-ran:
	case <-time.After(time.Second):
		t.Fatal("Run had not returned a second after Stop did")
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestStopIsBoundedByItsContext(t *testing.T) {
	c := &component{started: make(chan struct{}), linger: time.Second}
	ran := make(chan error, 1)
	go func() { ran <- c.Run(context.Background()) }()
	<-c.started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := c.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop past its deadline: %v, want DeadlineExceeded", err)
	}
	<-ran
}

func TestStopBeforeRun(t *testing.T) {
	c := &component{started: make(chan struct{})}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background()) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run after Stop did not return")
	}
	select {
	case <-c.started:
		t.Fatal("Run after Stop started working")
	default:
	}
}

func TestRunEndsWithItsContext(t *testing.T) {
	c := &component{started: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()
	<-c.started
	cancel()
	<-ran
	if err := c.Stop(context.Background()); err != nil {
		t.Fatalf("Stop after Run returned: %v", err)
	}
}

func TestOneRunPerStopper(t *testing.T) {
	c := &component{started: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()
	<-c.started
	_, end, ok := c.life.Begin(context.Background())
	end()
	if ok {
		t.Fatal("a second Begin on a running Stopper succeeded")
	}
	cancel()
	<-ran
}
