package recall

import (
	"context"
	"sync"
	"time"
)

// clockCache remembers each bank's event clock for a few seconds: recency
// decays over months, so a clock a few seconds old changes no ranking,
// and recall then costs no extra round trip.
type clockCache struct {
	src BankClock
	ttl time.Duration
	mu  sync.Mutex
	at  map[string]clockEntry
}

type clockEntry struct {
	t, fetched time.Time
}

// now is the time a request without a query time is answered at: the
// bank's latest event, held at the wall clock if it is ahead of it (a
// future-dated event must not make the present look old), or the wall
// clock when the bank has no events or the clock cannot be read.
func (c *clockCache) now(ctx context.Context, bankID string) time.Time {
	wall := time.Now()
	if c.src == nil {
		return wall
	}
	c.mu.Lock()
	e, ok := c.at[bankID]
	c.mu.Unlock()
	if !ok || wall.Sub(e.fetched) > c.ttl {
		t, err := c.src.BankClock(ctx, bankID)
		if err != nil {
			return wall
		}
		e = clockEntry{t: t, fetched: wall}
		c.mu.Lock()
		c.at[bankID] = e
		c.mu.Unlock()
	}
	if e.t.IsZero() || e.t.After(wall) {
		return wall
	}
	return e.t
}
