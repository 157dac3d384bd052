// Package wait holds the waiting primitives the ingest and background
// loops share: a sleep that ends with its context, jittered backoff, and a
// broadcast that wakes every waiter at once.
package wait

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Sleep waits d, or until ctx ends; it reports whether the full d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Jitter spreads a backoff over [d/2, 3d/2), so that retries of many
// callers do not arrive together.
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d/2 + time.Duration(rand.Int64N(int64(d)))
}

// Broadcast wakes every waiter at once: a waiter takes C, checks its
// condition, then waits on the channel. The zero value is ready to use.
type Broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

// C returns the channel the next Fire closes.
func (b *Broadcast) C() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

// Fire wakes everyone waiting on a channel from C.
func (b *Broadcast) Fire() {
	b.mu.Lock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
	b.mu.Unlock()
}
