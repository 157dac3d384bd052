package recall

import (
	"context"
	"errors"
	"testing"
	"time"
)

type fakeClock struct {
	t     time.Time
	err   error
	calls int
}

func (f *fakeClock) BankClock(context.Context, string) (time.Time, error) {
	f.calls++
	return f.t, f.err
}

func TestClockCacheUsesTheBankEventClock(t *testing.T) {
	past := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	src := &fakeClock{t: past}
	c := &clockCache{src: src, ttl: time.Hour, at: map[string]clockEntry{}}
	if got := c.now(context.Background(), "b"); !got.Equal(past) {
		t.Errorf("now = %v, want the bank's latest event %v", got, past)
	}
	c.now(context.Background(), "b")
	if src.calls != 1 {
		t.Errorf("clock read %d times within the TTL, want once", src.calls)
	}
	// A future-dated bank, an empty bank and a failing read all answer
	// with the wall clock.
	for _, f := range []*fakeClock{{t: time.Now().Add(48 * time.Hour)}, {}, {err: errors.New("down")}} {
		c := &clockCache{src: f, ttl: time.Hour, at: map[string]clockEntry{}}
		if got := c.now(context.Background(), "b"); time.Since(got) > time.Minute || time.Until(got) > time.Minute {
			t.Errorf("clock %+v: now = %v, want the wall clock", f, got)
		}
	}
	if got := (&clockCache{}).now(context.Background(), "b"); time.Since(got) > time.Minute {
		t.Errorf("no clock configured: now = %v, want the wall clock", got)
	}
}
