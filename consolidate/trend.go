package consolidate

import "time"

// Trend labels (memory_units.trend).
const (
	TrendStale         = "STALE"
	TrendNew           = "NEW"
	TrendStrengthening = "STRENGTHENING"
	TrendWeakening     = "WEAKENING"
	TrendStable        = "STABLE"
)

// Trend windows: evidence younger than RecentWindow is recent; evidence
// between RecentWindow and OldWindow is the older baseline. Evidence older
// than OldWindow counts only as proof that the observation is not new.
const (
	RecentWindow = 30 * 24 * time.Hour
	OldWindow    = 90 * 24 * time.Hour
)

// Trend labels an observation from the times of its evidence, seen at now
// (an injected clock, so labels are reproducible):
//
//   - STALE: no evidence in the recent window (including no evidence).
//   - NEW: all evidence is recent.
//   - otherwise the recent density (per day over 30 days) is compared with
//     the older density (per day over the 60 days before): a ratio above
//     1.5 is STRENGTHENING, below 0.5 WEAKENING, else STABLE. With recent
//     evidence but none in the older window, only evidence beyond 90 days,
//     the observation is re-emerging and counts as STRENGTHENING.
//
// Evidence dated after now (clock skew, future-dated events) counts as
// recent. The boundaries are inclusive on the recent side: evidence
// exactly 30 days old is recent.
func Trend(evidence []time.Time, now time.Time) string {
	recent, older, ancient := 0, 0, 0
	for _, t := range evidence {
		age := now.Sub(t)
		switch {
		case age <= RecentWindow:
			recent++
		case age <= OldWindow:
			older++
		default:
			ancient++
		}
	}
	switch {
	case recent == 0:
		return TrendStale
	case older == 0 && ancient == 0:
		return TrendNew
	case older == 0:
		return TrendStrengthening
	}
	recentDensity := float64(recent) / RecentWindow.Hours()
	olderDensity := float64(older) / (OldWindow - RecentWindow).Hours()
	ratio := recentDensity / olderDensity
	switch {
	case ratio > 1.5:
		return TrendStrengthening
	case ratio < 0.5:
		return TrendWeakening
	default:
		return TrendStable
	}
}
