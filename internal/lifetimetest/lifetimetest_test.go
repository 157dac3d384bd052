package lifetimetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is a component whose Run and Stop can be made to misbehave.
type fake struct {
	started, stop, done chan struct{}
	stopOnce            sync.Once
	runErr              error
	stopEarly           bool // Stop returns at once and leaves Run running
}

func (f *fake) release() { f.stopOnce.Do(func() { close(f.stop) }) }

func newFake() *fake {
	return &fake{started: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
}

func (f *fake) Run(ctx context.Context) error {
	defer close(f.done)
	close(f.started)
	select {
	case <-f.stop:
	case <-ctx.Done():
	}
	return f.runErr
}

func (f *fake) Stop(ctx context.Context) error {
	if f.stopEarly {
		return nil
	}
	f.release()
	select {
	case <-f.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// recorder is a testing.TB that records a failure instead of failing.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatal(args ...any) {
	r.failed = fmt.Sprint(args...)
	panic(r)
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(r)
}

func check(t *testing.T, f *fake) (failed string) {
	r := &recorder{TB: t}
	defer func() {
		if p := recover(); p != nil && p != any(r) {
			panic(p)
		}
		failed = r.failed
		f.release()
		<-f.done // no goroutine outlives the test
	}()
	CheckStop(r, f, 5*time.Second, func() { <-f.started })
	return ""
}

func TestCheckStop(t *testing.T) {
	if got := check(t, newFake()); got != "" {
		t.Fatalf("a well-behaved component failed: %s", got)
	}
	bad := newFake()
	bad.runErr = errors.New("boom")
	if got := check(t, bad); got != "Run: boom" {
		t.Fatalf("Run's error: got %q", got)
	}
	early := newFake()
	early.stopEarly = true
	if got := check(t, early); got != "Stop returned and Run had not 1s later" {
		t.Fatalf("Stop before Run: got %q", got)
	}
}
