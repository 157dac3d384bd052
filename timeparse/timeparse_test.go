package timeparse

import (
	"testing"
	"time"
	"unicode/utf8"
)

// ref is a Wednesday, so that "last", "this" and "next" weekdays differ.
var ref = time.Date(2026, 11, 18, 10, 30, 0, 0, time.UTC)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in          string
		text        string
		start, end  string
		granularity string
	}{
		{"I went out today", "today", "2026-11-18", "2026-11-19", Day},
		{"Yesterday was rough", "Yesterday", "2026-11-17", "2026-11-18", Day},
		{"see you tomorrow", "tomorrow", "2026-11-19", "2026-11-20", Day},
		{"the day before yesterday I flew", "the day before yesterday", "2026-11-16", "2026-11-17", Day},
		{"last Saturday we hiked", "last Saturday", "2026-11-14", "2026-11-15", Day},
		{"this Saturday is free", "this Saturday", "2026-11-21", "2026-11-22", Day},
		{"next Monday", "next Monday", "2026-11-23", "2026-11-24", Day},
		{"on Saturday we hiked", "Saturday", "2026-11-14", "2026-11-15", Day},
		{"on Wednesday", "Wednesday", "2026-11-11", "2026-11-12", Day},
		{"last week", "last week", "2026-11-09", "2026-11-16", Week},
		{"this week", "this week", "2026-11-16", "2026-11-23", Week},
		{"next week", "next week", "2026-11-23", "2026-11-30", Week},
		{"last weekend", "last weekend", "2026-11-14", "2026-11-16", Weekend},
		{"this weekend", "this weekend", "2026-11-21", "2026-11-23", Weekend},
		{"last month", "last month", "2026-10-01", "2026-11-01", Month},
		{"next month", "next month", "2026-12-01", "2027-01-01", Month},
		{"last year", "last year", "2025-01-01", "2026-01-01", Year},
		{"this year", "this year", "2026-01-01", "2027-01-01", Year},
		{"3 days ago", "3 days ago", "2026-11-15", "2026-11-16", Day},
		{"two weeks ago", "two weeks ago", "2026-11-02", "2026-11-09", Week},
		{"a month ago", "a month ago", "2026-10-01", "2026-11-01", Month},
		{"five years ago", "five years ago", "2021-01-01", "2022-01-01", Year},
		{"a couple of weeks ago", "a couple of weeks ago", "2026-11-02", "2026-11-09", Week},
		{"in 3 days", "in 3 days", "2026-11-21", "2026-11-22", Day},
		{"We met in March", "in March", "2026-03-01", "2026-04-01", Month},
		{"in December", "in December", "2025-12-01", "2026-01-01", Month},
		{"in March 2025", "March 2025", "2025-03-01", "2025-04-01", Month},
		{"on March 3 she left", "March 3", "2026-03-03", "2026-03-04", Day},
		{"March 3rd, 2026.", "March 3rd, 2026", "2026-03-03", "2026-03-04", Day},
		{"Dec 25 2025", "Dec 25 2025", "2025-12-25", "2025-12-26", Day},
		{"the 3rd of March", "3rd of March", "2026-03-03", "2026-03-04", Day},
		{"released 2026-03-14.", "2026-03-14", "2026-03-14", "2026-03-15", Day},
		{"earlier this year", "earlier this year", "2026-01-01", "2026-11-19", Year},
		{"last summer", "last summer", "2026-06-01", "2026-09-01", Season},
		{"next winter", "next winter", "2026-12-01", "2027-03-01", Season},
		{"in 2024", "in 2024", "2024-01-01", "2025-01-01", Year},
		{"last night", "last night", "2026-11-17", "2026-11-18", Day},

		{"今天天气好", "今天", "2026-11-18", "2026-11-19", Day},
		{"我昨天去了", "昨天", "2026-11-17", "2026-11-18", Day},
		{"前天", "前天", "2026-11-16", "2026-11-17", Day},
		{"大前天", "大前天", "2026-11-15", "2026-11-16", Day},
		{"明天见", "明天", "2026-11-19", "2026-11-20", Day},
		{"我上周六去爬山", "上周六", "2026-11-14", "2026-11-15", Day},
		{"上星期六", "上星期六", "2026-11-14", "2026-11-15", Day},
		{"上礼拜六", "上礼拜六", "2026-11-14", "2026-11-15", Day},
		{"下周一开会", "下周一", "2026-11-23", "2026-11-24", Day},
		{"这周很忙", "这周", "2026-11-16", "2026-11-23", Week},
		{"本周", "本周", "2026-11-16", "2026-11-23", Week},
		{"上周", "上周", "2026-11-09", "2026-11-16", Week},
		{"我们上周一起吃饭", "上周", "2026-11-09", "2026-11-16", Week},
		{"上个月", "上个月", "2026-10-01", "2026-11-01", Month},
		{"这个月", "这个月", "2026-11-01", "2026-12-01", Month},
		{"去年", "去年", "2025-01-01", "2026-01-01", Year},
		{"今年", "今年", "2026-01-01", "2027-01-01", Year},
		{"前年", "前年", "2024-01-01", "2025-01-01", Year},
		{"三天前", "三天前", "2026-11-15", "2026-11-16", Day},
		{"两周前", "两周前", "2026-11-02", "2026-11-09", Week},
		{"三个月前", "三个月前", "2026-08-01", "2026-09-01", Month},
		{"二十三天前", "二十三天前", "2026-10-26", "2026-10-27", Day},
		{"2026年3月", "2026年3月", "2026-03-01", "2026-04-01", Month},
		{"3月", "3月", "2026-03-01", "2026-04-01", Month},
		{"十二月", "十二月", "2025-12-01", "2026-01-01", Month},
		{"3月5日", "3月5日", "2026-03-05", "2026-03-06", Day},
		{"3月5号", "3月5号", "2026-03-05", "2026-03-06", Day},
		{"2025年12月31日", "2025年12月31日", "2025-12-31", "2026-01-01", Day},
		{"上个周末", "上个周末", "2026-11-14", "2026-11-16", Weekend},
		{"周末去哪", "周末", "2026-11-14", "2026-11-16", Weekend},
		{"周六", "周六", "2026-11-14", "2026-11-15", Day},
		{"去年夏天", "去年夏天", "2025-06-01", "2025-09-01", Season},
		{"去年3月", "去年3月", "2025-03-01", "2025-04-01", Month},
		{"2020年前", "2020年", "2020-01-01", "2021-01-01", Year},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got := Parse(tt.in, ref)
			if len(got) != 1 {
				t.Fatalf("Parse(%q) = %d spans %+v, want 1", tt.in, len(got), got)
			}
			s := got[0]
			if s.Text != tt.text || s.Granularity != tt.granularity ||
				s.Start.Format(time.DateOnly) != tt.start || s.End.Format(time.DateOnly) != tt.end {
				t.Errorf("Parse(%q) = %q %s %s..%s, want %q %s %s..%s", tt.in,
					s.Text, s.Granularity, s.Start.Format(time.DateOnly), s.End.Format(time.DateOnly),
					tt.text, tt.granularity, tt.start, tt.end)
			}
			if tt.in[s.Offset:s.Offset+len(s.Text)] != s.Text {
				t.Errorf("offset %d does not point at %q", s.Offset, s.Text)
			}
		})
	}
}

func TestParseNone(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"", "I may go", "the march of progress was slow", "February 30", "2026-02-30",
		"我们一起吃饭", "一周一次", "3个苹果", "Call me at 12345", "hello world",
	} {
		if got := Parse(in, ref); len(got) != 0 {
			t.Errorf("Parse(%q) = %+v, want none", in, got)
		}
	}
}

func TestParseSeveral(t *testing.T) {
	t.Parallel()
	got := Parse("Yesterday I booked a trip for next Friday; 上周六我们去了上海, 3月5号回来.", ref)
	want := []string{"Yesterday", "next Friday", "上周六", "3月5号"}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %v", got, want)
	}
	for i, w := range want {
		if got[i].Text != w {
			t.Errorf("span %d = %q, want %q", i, got[i].Text, w)
		}
	}
}

func TestParseLocation(t *testing.T) {
	t.Parallel()
	loc := time.FixedZone("UTC+8", 8*3600)
	// 23:30 UTC on the 17th is already the 18th in UTC+8.
	r := time.Date(2026, 11, 17, 23, 30, 0, 0, time.UTC).In(loc)
	got := Parse("today", r)
	if len(got) != 1 || got[0].Start.Format(time.DateOnly) != "2026-11-18" || got[0].Start.Location() != loc {
		t.Fatalf("got %+v", got)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"last Saturday", "三天前", "2026-03-14", "March 3rd, 2026", "上个周末", "in 9999 years", "二十二十月", "99999 days ago"} {
		f.Add(s)
	}
	grans := map[string]bool{Day: true, Week: true, Weekend: true, Month: true, Season: true, Year: true}
	f.Fuzz(func(t *testing.T, s string) {
		spans := Parse(s, ref)
		prevEnd := 0
		for _, sp := range spans {
			if !sp.Start.Before(sp.End) {
				t.Fatalf("empty span %+v", sp)
			}
			if sp.Offset < prevEnd || sp.Offset+len(sp.Text) > len(s) || s[sp.Offset:sp.Offset+len(sp.Text)] != sp.Text {
				t.Fatalf("bad offset %+v in %q", sp, s)
			}
			if sp.Text == "" || !utf8.ValidString(sp.Text) && utf8.ValidString(s) {
				t.Fatalf("bad text %+v", sp)
			}
			if !grans[sp.Granularity] {
				t.Fatalf("bad granularity %+v", sp)
			}
			if sp.Start.Year() < 1 || sp.End.Year() > 20000 {
				t.Fatalf("out of range %+v", sp)
			}
			prevEnd = sp.Offset + len(sp.Text)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	in := []string{
		"I moved to Shanghai last March because my company opened an office there.",
		"Thanks, that sounds great!",
		"我上周六和老张去杭州爬山了，因为天气很好。",
		"Can you remind me about the dentist appointment on 2026-03-14?",
	}
	var n int
	for b.Loop() {
		for _, s := range in {
			n += len(Parse(s, ref))
		}
	}
	b.ReportMetric(float64(b.N*len(in))/b.Elapsed().Seconds(), "sentences/s")
}
