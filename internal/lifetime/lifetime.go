// Package lifetime gives a component the Run(ctx)/Stop(ctx) pair of the
// project's lifetime convention: Run works until its context ends or Stop
// is called, and Stop asks Run to finish and waits for it, bounded by
// Stop's own context. A component that already shuts down gracefully when
// Run's context ends gets Stop from a Stopper without changing how it
// shuts down.
package lifetime

import (
	"context"
	"sync"
)

// Stopper ties one Run to its Stop. The zero value is ready to use; a
// Stopper serves one Run.
type Stopper struct {
	mu      sync.Mutex
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// Begin starts Run: it returns the context Run works on, cancelled when
// ctx ends or Stop is called, and end, which Run must call (defer) when it
// returns. ok is false when Stop came first: Run should return at once
// (calling end is still harmless).
func (s *Stopper) Begin(ctx context.Context) (runCtx context.Context, end func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	runCtx, cancel := context.WithCancel(ctx)
	if s.stopped || s.done != nil {
		cancel()
		return runCtx, func() {}, false
	}
	s.cancel, s.done = cancel, make(chan struct{})
	done := s.done
	return runCtx, func() { cancel(); close(done) }, true
}

// Stop cancels Run's context and waits until Run has returned, or until
// ctx ends, whichever is first; then it returns ctx's error. Stop before
// Run makes Run return at once; Stop without a Run, or a second Stop,
// returns nil at once or waits for the same Run.
func (s *Stopper) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.stopped = true
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
