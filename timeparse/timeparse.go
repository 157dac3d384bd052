package timeparse

import (
	"sort"
	"time"
)

// Granularities name the unit a span covers. The temporal retriever uses
// them to decide how far to widen a match; the extractor stores them with a
// fact's occurrence range.
const (
	Day     = "day"
	Week    = "week"
	Weekend = "weekend"
	Month   = "month"
	Season  = "season"
	Year    = "year"
)

// Span is one time expression found in a text, resolved to the half-open
// range [Start, End) in the reference time's location.
type Span struct {
	// Start is the first instant the expression covers.
	Start time.Time
	// End is the first instant after the expression; it is exclusive so
	// that adjacent spans ("yesterday", "today") never overlap.
	End time.Time
	// Text is the expression exactly as written, so callers can quote it.
	Text string
	// Offset is the byte offset of Text in the parsed text.
	Offset int
	// Granularity is the unit the span covers: day, week, weekend, month,
	// season or year.
	Granularity string
}

// Parse returns the time expressions of text, resolved against ref, in order
// of their offsets and without overlaps (the longest expression wins). It
// never fails: text without time expressions yields nil.
func Parse(text string, ref time.Time) []Span {
	if text == "" {
		return nil
	}
	ascii, nonASCII := false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c >= 0x80 {
			nonASCII = true
		} else if isAlnum(c) {
			ascii = true
		}
		if ascii && nonASCII {
			break
		}
	}
	var spans []Span
	if ascii {
		spans = parseEnglish(text, ref, spans)
	}
	if nonASCII {
		spans = parseChinese(text, ref, spans)
	}
	if len(spans) < 2 {
		return spans
	}
	sort.SliceStable(spans, func(i, j int) bool {
		if spans[i].Offset != spans[j].Offset {
			return spans[i].Offset < spans[j].Offset
		}
		return len(spans[i].Text) > len(spans[j].Text)
	})
	out := spans[:0]
	end := -1
	for _, s := range spans {
		if s.Offset < end {
			continue
		}
		out = append(out, s)
		end = s.Offset + len(s.Text)
	}
	return out
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// day returns midnight of t's calendar day in t's location.
func day(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

// dayRange covers the day that is off days away from ref's day.
func dayRange(ref time.Time, off int) (time.Time, time.Time) {
	s := day(ref).AddDate(0, 0, off)
	return s, s.AddDate(0, 0, 1)
}

// weekStart is the Monday that starts t's week.
func weekStart(t time.Time) time.Time {
	d := day(t)
	back := (int(d.Weekday()) + 6) % 7
	return d.AddDate(0, 0, -back)
}

func weekRange(ref time.Time, off int) (time.Time, time.Time) {
	s := weekStart(ref).AddDate(0, 0, 7*off)
	return s, s.AddDate(0, 0, 7)
}

// weekendRange covers Saturday and Sunday of the week off weeks from ref's.
func weekendRange(ref time.Time, off int) (time.Time, time.Time) {
	s := weekStart(ref).AddDate(0, 0, 7*off+5)
	return s, s.AddDate(0, 0, 2)
}

func monthRange(y int, m time.Month, loc *time.Location) (time.Time, time.Time) {
	s := time.Date(y, m, 1, 0, 0, 0, 0, loc)
	return s, s.AddDate(0, 1, 0)
}

// monthOff covers the month off months from ref's month.
func monthOff(ref time.Time, off int) (time.Time, time.Time) {
	s := time.Date(ref.Year(), ref.Month(), 1, 0, 0, 0, 0, ref.Location()).AddDate(0, off, 0)
	return s, s.AddDate(0, 1, 0)
}

func yearRange(y int, loc *time.Location) (time.Time, time.Time) {
	s := time.Date(y, 1, 1, 0, 0, 0, 0, loc)
	return s, s.AddDate(1, 0, 0)
}

// recentMonth is the most recent month m not after ref's month.
func recentMonth(ref time.Time, m time.Month) (time.Time, time.Time) {
	y := ref.Year()
	if m > ref.Month() {
		y--
	}
	return monthRange(y, m, ref.Location())
}

// validDate reports whether y-m-d exists, so that "February 30" is ignored
// rather than silently normalised into March.
func validDate(y int, m time.Month, d int) bool {
	if m < 1 || m > 12 || d < 1 || d > 31 || y < 1 || y > 9999 {
		return false
	}
	t := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return t.Day() == d
}

// nearestPastWeekday is the closest day strictly before ref's day that falls
// on wd.
func nearestPastWeekday(ref time.Time, wd time.Weekday) (time.Time, time.Time) {
	back := (int(ref.Weekday()) - int(wd) + 7) % 7
	if back == 0 {
		back = 7
	}
	return dayRange(ref, -back)
}

// nearestFutureWeekday is the closest day strictly after ref's day that falls
// on wd.
func nearestFutureWeekday(ref time.Time, wd time.Weekday) (time.Time, time.Time) {
	fwd := (int(wd) - int(ref.Weekday()) + 7) % 7
	if fwd == 0 {
		fwd = 7
	}
	return dayRange(ref, fwd)
}

// weekdayInWeek is weekday wd of the week off weeks from ref's week, with
// Sunday as the last day of the week.
func weekdayInWeek(ref time.Time, off int, wd time.Weekday) (time.Time, time.Time) {
	idx := (int(wd) + 6) % 7
	s := weekStart(ref).AddDate(0, 0, 7*off+idx)
	return s, s.AddDate(0, 0, 1)
}

// recentWeekend is the weekend whose Saturday is the latest one on or before
// ref's day: a bare "周末" in chat is usually the one just past or current.
func recentWeekend(ref time.Time) (time.Time, time.Time) {
	d := day(ref)
	back := (int(d.Weekday()) - int(time.Saturday) + 7) % 7
	s := d.AddDate(0, 0, -back)
	return s, s.AddDate(0, 0, 2)
}

// Seasons, indexed so that seasonFirstMonth works for each.
const (
	spring = iota
	summer
	autumn
	winter
)

var seasonFirstMonth = [4]time.Month{time.March, time.June, time.September, time.December}

// seasonOf returns the season of year y (winter of y starts in December of y).
func seasonOf(y, s int, loc *time.Location) (time.Time, time.Time) {
	st := time.Date(y, seasonFirstMonth[s], 1, 0, 0, 0, 0, loc)
	return st, st.AddDate(0, 3, 0)
}

// seasonRel resolves last (-1), this (0), next (+1) or bare (2) seasons.
func seasonRel(ref time.Time, s, rel int) (time.Time, time.Time) {
	loc := ref.Location()
	y := ref.Year()
	switch rel {
	case -1: // the most recent one that has ended
		for {
			st, en := seasonOf(y, s, loc)
			if !en.After(ref) {
				return st, en
			}
			y--
		}
	case 1: // the first one that starts after ref
		y -= 1
		for {
			st, en := seasonOf(y, s, loc)
			if st.After(ref) {
				return st, en
			}
			y++
		}
	case 0:
		if s == winter && ref.Month() <= time.February {
			y--
		}
		return seasonOf(y, s, loc)
	default: // the most recent one that has started
		for {
			st, en := seasonOf(y, s, loc)
			if !st.After(ref) {
				return st, en
			}
			y--
		}
	}
}

// partial covers the part of ref's unit before (earlier) or after (later)
// ref's day; ref's own day counts as earlier, since "earlier today" things
// are already in memory.
func partial(ref time.Time, unit string, later bool) (time.Time, time.Time) {
	var s, e time.Time
	switch unit {
	case Week:
		s, e = weekRange(ref, 0)
	case Month:
		s, e = monthOff(ref, 0)
	default:
		s, e = yearRange(ref.Year(), ref.Location())
	}
	cut := day(ref).AddDate(0, 0, 1)
	if later {
		if !cut.Before(e) {
			return cut, cut.AddDate(0, 0, 1)
		}
		return cut, e
	}
	return s, cut
}

// ago shifts ref by n units (negative n for the past) and covers the whole
// unit it lands in.
func ago(ref time.Time, n int, unit string) (time.Time, time.Time) {
	switch unit {
	case Day:
		return dayRange(ref, n)
	case Week:
		return weekRange(ref, n)
	case Month:
		return monthOff(ref, n)
	default:
		return yearRange(ref.Year()+n, ref.Location())
	}
}

// maxCount bounds "N units ago" so that absurd inputs cannot push dates out
// of the representable range.
const maxCount = 1000
