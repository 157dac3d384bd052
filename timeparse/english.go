package timeparse

import (
	"time"
)

// token is a run of ASCII letters and digits. s is lower-cased and shares
// offsets with the original text, so spans can be cut from the original.
type token struct {
	s          string
	start, end int
}

func tokenize(text string) []token {
	lower := asciiLower(text)
	toks := make([]token, 0, 16)
	for i := 0; i < len(lower); {
		if !isAlnum(lower[i]) {
			i++
			continue
		}
		j := i
		for j < len(lower) && isAlnum(lower[j]) {
			j++
		}
		toks = append(toks, token{s: lower[i:j], start: i, end: j})
		i = j
	}
	return toks
}

// asciiLower lower-cases ASCII letters only, keeping byte offsets intact,
// and copies only when it has to.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

var weekdays = map[string]time.Weekday{
	"monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
	"sunday": time.Sunday,
}

var monthsFull = map[string]time.Month{
	"january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6,
	"july": 7, "august": 8, "september": 9, "october": 10, "november": 11,
	"december": 12,
}

// monthsAbbr are only accepted next to a day or year: "mar" or "jan" alone
// are too ambiguous.
var monthsAbbr = map[string]time.Month{
	"jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8,
	"sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}

var seasons = map[string]int{
	"spring": spring, "summer": summer, "autumn": autumn, "fall": autumn, "winter": winter,
}

var numberWords = map[string]int{
	"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
	"six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
	"twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
	"sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
	"twenty": 20, "thirty": 30, "several": 3,
}

var units = map[string]string{
	"day": Day, "days": Day, "week": Week, "weeks": Week, "month": Month,
	"months": Month, "year": Year, "years": Year,
}

var relWords = map[string]int{"last": -1, "this": 0, "next": 1}

func digits(s string) (int, bool) {
	if len(s) == 0 || len(s) > 4 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// dayNumber accepts "3", "3rd", "21st" as a day of the month.
func dayNumber(s string) (int, bool) {
	if len(s) > 2 {
		switch s[len(s)-2:] {
		case "st", "nd", "rd", "th":
			s = s[:len(s)-2]
		}
	}
	if len(s) > 2 {
		return 0, false
	}
	n, ok := digits(s)
	return n, ok && n >= 1 && n <= 31
}

func yearNumber(s string) (int, bool) {
	if len(s) != 4 {
		return 0, false
	}
	n, ok := digits(s)
	return n, ok && n >= 1000 && n <= 2999
}

type enParser struct {
	text string
	toks []token
	ref  time.Time
}

// near reports whether tokens a and b are separated only by a little
// whitespace or punctuation that can sit inside a date ("March 3rd, 2026").
func (p *enParser) near(a, b int) bool {
	if b >= len(p.toks) {
		return false
	}
	gap := p.text[p.toks[a].end:p.toks[b].start]
	if len(gap) > 3 {
		return false
	}
	for i := 0; i < len(gap); i++ {
		switch gap[i] {
		case ' ', ',', '.', '\t':
		default:
			return false
		}
	}
	return true
}

// is reports whether token i exists, is near token i-1, and equals w.
func (p *enParser) is(i int, w string) bool {
	return i < len(p.toks) && (i == 0 || p.near(i-1, i)) && p.toks[i].s == w
}

func (p *enParser) tok(i int) string {
	if i < len(p.toks) && (i == 0 || p.near(i-1, i)) {
		return p.toks[i].s
	}
	return ""
}

func parseEnglish(text string, ref time.Time, out []Span) []Span {
	p := enParser{text: text, toks: tokenize(text), ref: ref}
	for i := 0; i < len(p.toks); {
		s, e, g, last, ok := p.match(i)
		if !ok {
			i++
			continue
		}
		start, end := p.toks[i].start, p.toks[last].end
		out = append(out, Span{Start: s, End: e, Text: text[start:end], Offset: start, Granularity: g})
		i = last + 1
	}
	return out
}

// match tries every English rule at token i and returns the range, the
// granularity and the index of the last token consumed.
func (p *enParser) match(i int) (s, e time.Time, g string, last int, ok bool) {
	ref := p.ref
	t := p.toks[i].s
	switch t {
	case "today", "tonight":
		s, e = dayRange(ref, 0)
		return s, e, Day, i, true
	case "yesterday":
		s, e = dayRange(ref, -1)
		return s, e, Day, i, true
	case "tomorrow":
		s, e = dayRange(ref, 1)
		return s, e, Day, i, true
	case "the", "day":
		j := i
		if t == "the" {
			j++
			if !p.is(j, "day") {
				break
			}
		}
		if p.is(j+1, "before") && p.is(j+2, "yesterday") {
			s, e = dayRange(ref, -2)
			return s, e, Day, j + 2, true
		}
		if p.is(j+1, "after") && p.is(j+2, "tomorrow") {
			s, e = dayRange(ref, 2)
			return s, e, Day, j + 2, true
		}
	case "earlier", "later":
		if p.is(i+1, "this") {
			if u, ok := units[p.tok(i+2)]; ok && u != Day {
				s, e = partial(ref, u, t == "later")
				return s, e, u, i + 2, true
			}
		}
	case "last", "this", "next":
		rel := relWords[t]
		n := p.tok(i + 1)
		if t == "last" && n == "night" {
			s, e = dayRange(ref, -1)
			return s, e, Day, i + 1, true
		}
		if t == "this" && (n == "morning" || n == "afternoon" || n == "evening") {
			s, e = dayRange(ref, 0)
			return s, e, Day, i + 1, true
		}
		if wd, ok := weekdays[n]; ok {
			switch rel {
			case -1:
				s, e = nearestPastWeekday(ref, wd)
			case 0:
				s, e = weekdayInWeek(ref, 0, wd)
			default:
				s, e = nearestFutureWeekday(ref, wd)
			}
			return s, e, Day, i + 1, true
		}
		switch n {
		case "week":
			s, e = weekRange(ref, rel)
			return s, e, Week, i + 1, true
		case "weekend":
			s, e = weekendRange(ref, rel)
			return s, e, Weekend, i + 1, true
		case "month":
			s, e = monthOff(ref, rel)
			return s, e, Month, i + 1, true
		case "year":
			s, e = yearRange(ref.Year()+rel, ref.Location())
			return s, e, Year, i + 1, true
		}
		if sn, ok := seasons[n]; ok {
			s, e = seasonRel(ref, sn, rel)
			return s, e, Season, i + 1, true
		}
		if m, ok := monthsFull[n]; ok {
			y := ref.Year()
			switch {
			case rel < 0 && m >= ref.Month():
				y--
			case rel > 0 && m <= ref.Month():
				y++
			}
			s, e = monthRange(y, m, ref.Location())
			return s, e, Month, i + 1, true
		}
	case "in", "during", "since", "until", "by", "throughout", "early", "late", "mid":
		j := i + 1
		if p.is(j, "the") {
			j++
		}
		n := p.tok(j)
		if m, ok := monthsFull[n]; ok && j == i+1 {
			if _, _, _, l, ok := p.monthDay(j); ok && l > j {
				break // a full date follows: let the date rule take it
			}
			s, e = recentMonth(ref, m)
			return s, e, Month, j, true
		}
		if sn, ok := seasons[n]; ok {
			s, e = seasonRel(ref, sn, 2)
			return s, e, Season, j, true
		}
		if y, ok := yearNumber(n); ok && j == i+1 && !p.followedByDash(j) {
			s, e = yearRange(y, ref.Location())
			return s, e, Year, j, true
		}
		if t == "in" && j == i+1 {
			if c, last, ok := p.count(j); ok {
				if u, ok := units[p.tok(last+1)]; ok {
					s, e = ago(ref, c, u)
					return s, e, u, last + 1, true
				}
			}
		}
	}
	if c, last, ok := p.count(i); ok {
		if u, ok := units[p.tok(last+1)]; ok && p.is(last+2, "ago") {
			s, e = ago(ref, -c, u)
			return s, e, u, last + 2, true
		}
	}
	if wd, ok := weekdays[t]; ok {
		s, e = nearestPastWeekday(ref, wd)
		return s, e, Day, i, true
	}
	if s, e, g, last, ok = p.monthDay(i); ok {
		return s, e, g, last, true
	}
	if s, e, last, ok = p.dayMonth(i); ok {
		return s, e, Day, last, true
	}
	if s, e, last, ok = p.iso(i); ok {
		return s, e, Day, last, true
	}
	return s, e, "", 0, false
}

// count reads a quantity at token i: a number, a number word, "a couple of"
// or "a few". It returns the count and the last token used.
func (p *enParser) count(i int) (int, int, bool) {
	t := p.tok(i)
	if t == "a" {
		if p.is(i+1, "couple") && p.is(i+2, "of") {
			return 2, i + 2, true
		}
		if p.is(i+1, "few") {
			return 3, i + 1, true
		}
	}
	if t == "few" {
		return 3, i, true
	}
	if n, ok := numberWords[t]; ok {
		return n, i, true
	}
	if n, ok := digits(t); ok && n > 0 && n <= maxCount {
		return n, i, true
	}
	return 0, 0, false
}

// monthDay matches "March 3", "March 3rd, 2026", "Mar 3 2026" and
// "March 2025".
func (p *enParser) monthDay(i int) (s, e time.Time, g string, last int, ok bool) {
	t := p.toks[i].s
	m, full := monthsFull[t]
	if !full {
		if m, ok = monthsAbbr[t]; !ok {
			return
		}
	}
	n := p.tok(i + 1)
	if d, ok := dayNumber(n); ok {
		y := p.ref.Year()
		last = i + 1
		if yy, ok := yearNumber(p.tok(i + 2)); ok {
			y, last = yy, i+2
		}
		if !validDate(y, m, d) {
			return s, e, "", 0, false
		}
		s = time.Date(y, m, d, 0, 0, 0, 0, p.ref.Location())
		return s, s.AddDate(0, 0, 1), Day, last, true
	}
	if y, ok := yearNumber(n); ok {
		s, e = monthRange(y, m, p.ref.Location())
		return s, e, Month, i + 1, true
	}
	return s, e, "", 0, false
}

// dayMonth matches "3 March", "3rd of March 2026".
func (p *enParser) dayMonth(i int) (s, e time.Time, last int, ok bool) {
	d, ok := dayNumber(p.toks[i].s)
	if !ok {
		return s, e, 0, false
	}
	j := i + 1
	if p.is(j, "of") {
		j++
	}
	m, ok := monthsFull[p.tok(j)]
	if !ok {
		if m, ok = monthsAbbr[p.tok(j)]; !ok {
			return s, e, 0, false
		}
	}
	y, last := p.ref.Year(), j
	if yy, ok := yearNumber(p.tok(j + 1)); ok {
		y, last = yy, j+1
	}
	if !validDate(y, m, d) {
		return s, e, 0, false
	}
	s = time.Date(y, m, d, 0, 0, 0, 0, p.ref.Location())
	return s, s.AddDate(0, 0, 1), last, true
}

func (p *enParser) followedByDash(i int) bool {
	end := p.toks[i].end
	return end < len(p.text) && (p.text[end] == '-' || p.text[end] == '/')
}

// iso matches 2026-03-14 and 2026/03/14.
func (p *enParser) iso(i int) (s, e time.Time, last int, ok bool) {
	if i+2 >= len(p.toks) {
		return s, e, 0, false
	}
	y, ok := yearNumber(p.toks[i].s)
	if !ok {
		return s, e, 0, false
	}
	a, b, c := p.toks[i], p.toks[i+1], p.toks[i+2]
	sep := p.text[a.end]
	if a.end+1 != b.start || (sep != '-' && sep != '/') || b.end+1 != c.start || p.text[b.end] != sep {
		return s, e, 0, false
	}
	if len(b.s) > 2 || len(c.s) > 2 {
		return s, e, 0, false
	}
	m, ok1 := digits(b.s)
	d, ok2 := digits(c.s)
	if !ok1 || !ok2 || !validDate(y, time.Month(m), d) {
		return s, e, 0, false
	}
	s = time.Date(y, time.Month(m), d, 0, 0, 0, 0, p.ref.Location())
	return s, s.AddDate(0, 0, 1), i + 2, true
}
