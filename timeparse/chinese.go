package timeparse

import (
	"strings"
	"time"
	"unicode/utf8"
)

// cnLiteral is a fixed Chinese expression with a day, month or year offset.
type cnLiteral struct {
	lit  string
	unit string
	off  int
}

// cnLiterals are tried longest first at each position, so 大前天 wins over
// 前天 and 上上个月 over 上个月.
var cnLiterals = []cnLiteral{
	{"大前天", Day, -3}, {"大后天", Day, 3}, {"大前年", Year, -3},
	{"上上个月", Month, -2},
	{"上个月", Month, -1}, {"下个月", Month, 1}, {"这个月", Month, 0},
	{"前天", Day, -2}, {"昨天", Day, -1}, {"昨日", Day, -1}, {"昨晚", Day, -1},
	{"今天", Day, 0}, {"今日", Day, 0}, {"今晚", Day, 0}, {"今早", Day, 0},
	{"明天", Day, 1}, {"明日", Day, 1}, {"后天", Day, 2},
	{"前年", Year, -2}, {"去年", Year, -1}, {"今年", Year, 0}, {"明年", Year, 1}, {"后年", Year, 2},
	{"上月", Month, -1}, {"下月", Month, 1}, {"本月", Month, 0}, {"这月", Month, 0},
}

// cnFirst indexes cnLiterals by first rune so that most positions cost one
// map look-up.
var cnFirst = func() map[rune][]cnLiteral {
	m := make(map[rune][]cnLiteral)
	for _, l := range cnLiterals {
		r, _ := utf8.DecodeRuneInString(l.lit)
		m[r] = append(m[r], l)
	}
	return m
}()

var cnDigits = map[rune]int{
	'零': 0, '〇': 0, '一': 1, '二': 2, '两': 2, '三': 3, '四': 4, '五': 5,
	'六': 6, '七': 7, '八': 8, '九': 9,
}

// cnNumber reads ASCII digits (up to four) or a Chinese numeral up to 99 at
// the start of s, returning the value and its length in bytes.
func cnNumber(s string) (int, int, bool) {
	i, n := 0, 0
	for i < len(s) && i < 4 && s[i] >= '0' && s[i] <= '9' {
		n = n*10 + int(s[i]-'0')
		i++
	}
	if i > 0 {
		if i < len(s) && s[i] >= '0' && s[i] <= '9' {
			return 0, 0, false
		}
		return n, i, true
	}
	// Chinese: [d]十[d] or d.
	val, tens, seen := 0, false, false
	cur := -1
	for i < len(s) {
		r, sz := utf8.DecodeRuneInString(s[i:])
		if r == '十' {
			if tens {
				break
			}
			tens = true
			if cur < 0 {
				cur = 1
			}
			val = cur * 10
			cur = -1
		} else if d, ok := cnDigits[r]; ok {
			if cur >= 0 {
				break
			}
			cur = d
		} else {
			break
		}
		seen = true
		i += sz
	}
	if !seen {
		return 0, 0, false
	}
	if cur >= 0 {
		val += cur
	}
	return val, i, true
}

var cnWeekday = map[rune]time.Weekday{
	'一': time.Monday, '二': time.Tuesday, '三': time.Wednesday, '四': time.Thursday,
	'五': time.Friday, '六': time.Saturday, '日': time.Sunday, '天': time.Sunday,
}

// cnNotWeekday lists characters that, after 周一, make 一 part of a word
// (一起 "together", 一直 "always") rather than Monday.
var cnNotWeekday = "起直样下些点定般次切共"

var cnSeasons = []struct {
	lit string
	s   int
}{
	{"春天", spring}, {"春季", spring}, {"夏天", summer}, {"夏季", summer},
	{"秋天", autumn}, {"秋季", autumn}, {"冬天", winter}, {"冬季", winter},
}

func cnSeason(s string) (int, int, bool) {
	for _, c := range cnSeasons {
		if strings.HasPrefix(s, c.lit) {
			return c.s, len(c.lit), true
		}
	}
	return 0, 0, false
}

// cnWeekUnit matches 周, 星期 or 礼拜 (with an optional leading 个).
func cnWeekUnit(s string) int {
	n := 0
	if strings.HasPrefix(s, "个") {
		n = len("个")
	}
	for _, u := range []string{"周", "星期", "礼拜"} {
		if strings.HasPrefix(s[n:], u) {
			return n + len(u)
		}
	}
	return 0
}

func parseChinese(text string, ref time.Time, out []Span) []Span {
	for i := 0; i < len(text); {
		r, sz := utf8.DecodeRuneInString(text[i:])
		if r < 0x80 && !(r >= '0' && r <= '9') {
			i += sz
			continue
		}
		if r >= '0' && r <= '9' && i > 0 && text[i-1] >= '0' && text[i-1] <= '9' {
			i += sz
			continue
		}
		s, e, g, n, ok := matchChinese(text[i:], ref)
		if !ok {
			i += sz
			continue
		}
		out = append(out, Span{Start: s, End: e, Text: text[i : i+n], Offset: i, Granularity: g})
		i += n
	}
	return out
}

// matchChinese tries every Chinese rule at the start of s and returns the
// range, its granularity and the length matched in bytes.
func matchChinese(s string, ref time.Time) (st, en time.Time, g string, n int, ok bool) {
	r, _ := utf8.DecodeRuneInString(s)
	loc := ref.Location()
	for _, l := range cnFirst[r] {
		if !strings.HasPrefix(s, l.lit) {
			continue
		}
		n = len(l.lit)
		switch l.unit {
		case Day:
			st, en = dayRange(ref, l.off)
			return st, en, Day, n, true
		case Month:
			st, en = monthOff(ref, l.off)
			return st, en, Month, n, true
		}
		y := ref.Year() + l.off
		// 去年夏天, 去年3月, 去年3月5日 narrow the year.
		if sn, k, ok := cnSeason(s[n:]); ok {
			st, en = seasonOf(y, sn, loc)
			return st, en, Season, n + k, true
		}
		if st, en, g, k, ok := cnMonthDay(s[n:], y, ref, false); ok {
			return st, en, g, n + k, true
		}
		st, en = yearRange(y, loc)
		return st, en, Year, n, true
	}
	// Week forms: 上上周, 上周六, 这个周末, 下礼拜, 本星期.
	off, k := 0, 0
	switch {
	case strings.HasPrefix(s, "上上"):
		off, k = -2, len("上上")
	case strings.HasPrefix(s, "上"):
		off, k = -1, len("上")
	case strings.HasPrefix(s, "这"), strings.HasPrefix(s, "本"):
		off, k = 0, len("这")
	case strings.HasPrefix(s, "下"):
		off, k = 1, len("下")
	}
	if k > 0 {
		if u := cnWeekUnit(s[k:]); u > 0 {
			n = k + u
			if st, en, g, w, ok := cnWeekTail(s[n:], ref, off); ok {
				return st, en, g, n + w, true
			}
			st, en = weekRange(ref, off)
			return st, en, Week, n, true
		}
		return st, en, "", 0, false
	}
	// Bare 周六, 星期天, 周末: the nearest past one.
	if u := cnWeekUnit(s); u > 0 && !strings.HasPrefix(s, "个") {
		if strings.HasPrefix(s[u:], "末") {
			st, en = recentWeekend(ref)
			return st, en, Weekend, u + len("末"), true
		}
		if wr, w := utf8.DecodeRuneInString(s[u:]); w > 0 {
			if wd, ok := cnWeekday[wr]; ok && !cnOneWord(s[u:], wr) {
				st, en = nearestPastWeekday(ref, wd)
				return st, en, Day, u + w, true
			}
		}
		return st, en, "", 0, false
	}
	if sn, k, ok := cnSeason(s); ok {
		st, en = seasonRel(ref, sn, 2)
		return st, en, Season, k, true
	}
	// Numbers: 三天前, 两周后, 3个月前, 2026年3月5日, 3月5号.
	num, k, ok := cnNumber(s)
	if !ok {
		return st, en, "", 0, false
	}
	// 2026年前 is "before 2026", not 2026 years ago: a four-digit count of
	// years is a year.
	if unit, u := cnCountUnit(s[k:]); u > 0 && num > 0 && num <= maxCount && !(k == 4 && unit == Year) {
		rest := s[k+u:]
		for _, d := range []struct {
			lit  string
			sign int
		}{{"以前", -1}, {"之前", -1}, {"前", -1}, {"以后", 1}, {"之后", 1}, {"后", 1}} {
			if strings.HasPrefix(rest, d.lit) {
				st, en = ago(ref, d.sign*num, unit)
				return st, en, unit, k + u + len(d.lit), true
			}
		}
	}
	if strings.HasPrefix(s[k:], "年") && k == 4 && num >= 1000 {
		n = k + len("年")
		if st, en, g, m, ok := cnMonthDay(s[n:], num, ref, false); ok {
			return st, en, g, n + m, true
		}
		st, en = yearRange(num, loc)
		return st, en, Year, n, true
	}
	return cnMonthDay(s, ref.Year(), ref, true)
}

// cnOneWord reports whether weekday rune wr starts a word like 一起.
func cnOneWord(s string, wr rune) bool {
	if wr != '一' {
		return false
	}
	next, _ := utf8.DecodeRuneInString(s[len("一"):])
	return strings.ContainsRune(cnNotWeekday, next)
}

// cnWeekTail reads what follows a week prefix: 末 (weekend) or a weekday.
func cnWeekTail(s string, ref time.Time, off int) (st, en time.Time, g string, n int, ok bool) {
	if strings.HasPrefix(s, "末") {
		st, en = weekendRange(ref, off)
		return st, en, Weekend, len("末"), true
	}
	wr, w := utf8.DecodeRuneInString(s)
	if wd, ok := cnWeekday[wr]; ok && !cnOneWord(s, wr) {
		st, en = weekdayInWeek(ref, off, wd)
		return st, en, Day, w, true
	}
	return st, en, "", 0, false
}

// cnCountUnit reads the unit after a count: 天, 周, 个星期, 个月, 年.
func cnCountUnit(s string) (string, int) {
	for _, u := range []struct {
		lit, unit string
	}{
		{"天", Day}, {"日", Day}, {"个星期", Week}, {"个礼拜", Week}, {"星期", Week},
		{"礼拜", Week}, {"周", Week}, {"个月", Month}, {"年", Year},
	} {
		if strings.HasPrefix(s, u.lit) {
			return u.unit, len(u.lit)
		}
	}
	return "", 0
}

// cnMonthDay reads M月[份][D日|D号] in year y. With recent set (no explicit
// year) a bare month is the most recent one not after ref.
func cnMonthDay(s string, y int, ref time.Time, recent bool) (st, en time.Time, g string, n int, ok bool) {
	m, k, ok := cnNumber(s)
	if !ok || m < 1 || m > 12 || !strings.HasPrefix(s[k:], "月") {
		return st, en, "", 0, false
	}
	n = k + len("月")
	if d, dk, ok := cnNumber(s[n:]); ok {
		rest := s[n+dk:]
		if strings.HasPrefix(rest, "日") || strings.HasPrefix(rest, "号") {
			if !validDate(y, time.Month(m), d) {
				return st, en, "", 0, false
			}
			st = time.Date(y, time.Month(m), d, 0, 0, 0, 0, ref.Location())
			return st, st.AddDate(0, 0, 1), Day, n + dk + len("日"), true
		}
	}
	if strings.HasPrefix(s[n:], "份") {
		n += len("份")
	}
	if recent {
		st, en = recentMonth(ref, time.Month(m))
	} else {
		st, en = monthRange(y, time.Month(m), ref.Location())
	}
	return st, en, Month, n, true
}
