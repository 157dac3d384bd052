package consolidate

import (
	"testing"
	"time"
)

func TestTrend(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	ago := func(ds ...time.Duration) []time.Time {
		out := make([]time.Time, len(ds))
		for i, d := range ds {
			out[i] = now.Add(-d)
		}
		return out
	}
	rep := func(n int, d time.Duration) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = d
		}
		return out
	}
	cat := func(parts ...[]time.Duration) []time.Duration {
		var out []time.Duration
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	cases := []struct {
		name string
		ev   []time.Time
		want string
	}{
		{"no evidence", nil, TrendStale},
		{"newest just beyond recent window", ago(30*day+time.Second, 40*day), TrendStale},
		{"only ancient evidence", ago(200 * day), TrendStale},
		{"newest exactly at recent boundary is recent", ago(30 * day), TrendNew},
		{"only recent", ago(0, 5*day, 29*day), TrendNew},
		{"future-dated counts as recent", ago(-day), TrendNew},
		{"recent plus only ancient: re-emerging", ago(day, 90*day+time.Second), TrendStrengthening},
		{"evidence exactly 90 days old is older, not ancient", ago(day, day, 90*day), TrendStrengthening},
		// ratio = 2*recent/older
		{"ratio just above 1.5 (3 recent, 3 older: 2.0)", ago(cat(rep(3, day), rep(3, 45*day))...), TrendStrengthening},
		{"ratio exactly 1.5 is stable (3 recent, 4 older)", ago(cat(rep(3, day), rep(4, 45*day))...), TrendStable},
		{"ratio 1.0 is stable", ago(cat(rep(2, day), rep(4, 45*day))...), TrendStable},
		{"ratio exactly 0.5 is stable (1 recent, 4 older)", ago(cat(rep(1, day), rep(4, 45*day))...), TrendStable},
		{"ratio just below 0.5 (1 recent, 5 older: 0.4)", ago(cat(rep(1, day), rep(5, 45*day))...), TrendWeakening},
		{"ancient evidence does not dilute the ratio", ago(cat(rep(1, day), rep(5, 45*day), rep(50, 400*day))...), TrendWeakening},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Trend(c.ev, now); got != c.want {
				t.Errorf("Trend = %s, want %s", got, c.want)
			}
		})
	}
}
