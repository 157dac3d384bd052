package chunk

import (
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var t0 = time.Date(2026, 11, 18, 10, 0, 0, 0, time.UTC)

func TestSplitText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		max  int
		want []string
	}{
		{"fits", "hello world", 20, []string{"hello world"}},
		{"paragraphs", "aaaa bbbb\n\ncccc dddd", 12, []string{"aaaa bbbb\n\n", "cccc dddd"}},
		{"lines before sentences", "one. two.\nthree. four.", 12, []string{"one. two.\n", "three. four."}},
		{"sentences", "I moved. It was far. We love it.", 21, []string{"I moved. It was far. ", "We love it."}},
		{"no split inside decimals", "Pi is 3.14 ok. Yes it is.", 15, []string{"Pi is 3.14 ok. ", "Yes it is."}},
		{"clauses", "first part, second part, third", 14, []string{"first part, ", "second part, ", "third"}},
		{"spaces", "alpha beta gamma delta", 11, []string{"alpha beta ", "gamma delta"}},
		{"characters", "abcdefgh", 3, []string{"abc", "def", "gh"}},
		{"cjk sentences", "我搬到了上海。工作很忙！你呢？", 7, []string{"我搬到了上海。", "工作很忙！", "你呢？"}},
		{"cjk clauses", "今天天气很好，我们去爬山；然后吃饭", 7, []string{"今天天气很好，", "我们去爬山；", "然后吃饭"}},
		{"cjk no separators", "一二三四五六七八九十", 4, []string{"一二三四", "五六七八", "九十"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := SplitText(tt.in, tt.max)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("SplitText(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
		})
	}
}

func TestSplitPacksMessages(t *testing.T) {
	t.Parallel()
	s, err := New(Config{MaxRunes: 30})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{
		{Index: 0, Role: "user", Name: "Alice", Content: "I moved to Shanghai.", Timestamp: t0},
		{Index: 1, Role: "assistant", Content: "Nice!", Timestamp: t0.Add(time.Minute)},
		{Index: 2, Role: "user", Name: "Alice", Content: "   ", Timestamp: t0.Add(2 * time.Minute)},
		{Index: 3, Role: "user", Name: "Alice", Content: "My cat is called Mochi.", Timestamp: t0.Add(3 * time.Minute)},
		{Index: 4, Role: "user", Name: "Alice", Content: "我上周六去杭州爬山了，天气很好，风景也很美，下次还想去。", Timestamp: t0.Add(4 * time.Minute)},
	}
	got := s.Split(msgs)
	var texts []string
	for _, c := range got {
		texts = append(texts, c.Text)
	}
	want := []string{
		"I moved to Shanghai.\nNice!",
		"My cat is called Mochi.",
		"我上周六去杭州爬山了，天气很好，风景也很美，下次还想去。",
	}
	if !reflect.DeepEqual(texts, want) {
		t.Fatalf("texts = %q, want %q", texts, want)
	}
	if c := got[0]; c.Speaker != "Alice" || c.Role != "user" || !c.Timestamp.Equal(t0) || !reflect.DeepEqual(c.Messages, []int{0, 1}) {
		t.Errorf("chunk 0 metadata = %+v", c)
	}
	if p := got[0].Parts[1]; p.Role != "assistant" || p.MessageIndex != 1 || !p.Timestamp.Equal(t0.Add(time.Minute)) {
		t.Errorf("part metadata = %+v", p)
	}
	if got[2].Index != 2 || got[2].Messages[0] != 4 {
		t.Errorf("chunk 2 = %+v", got[2])
	}
}

func TestSplitLongMessage(t *testing.T) {
	t.Parallel()
	s, err := New(Config{MaxRunes: 10})
	if err != nil {
		t.Fatal(err)
	}
	got := s.Split([]Message{
		{Index: 7, Role: "user", Name: "Bob", Content: "今天下雨了。我没有出门。在家看书。", Timestamp: t0},
		{Index: 8, Role: "user", Name: "Bob", Content: "好。", Timestamp: t0},
	})
	var texts []string
	for _, c := range got {
		texts = append(texts, c.Text)
		if c.Speaker != "Bob" {
			t.Errorf("speaker lost: %+v", c)
		}
	}
	want := []string{"今天下雨了。", "我没有出门。", "在家看书。\n好。"}
	if !reflect.DeepEqual(texts, want) {
		t.Fatalf("texts = %q, want %q", texts, want)
	}
}

func TestNewRejectsBadMax(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{MaxRunes: -1}); err == nil || !strings.Contains(err.Error(), "max_runes") {
		t.Fatalf("err = %v", err)
	}
	s, err := New(Config{})
	if err != nil || s.max != DefaultMaxRunes {
		t.Fatalf("default: %v %v", s, err)
	}
}

func FuzzSplit(f *testing.F) {
	f.Add("I moved. It was far.\n\nWe love it, really.", "短消息", 7)
	f.Add("今天天气很好，我们去爬山；然后吃饭。", "", 3)
	f.Add("a\n\n\n\nb", "x y z", 1)
	f.Fuzz(func(t *testing.T, a, b string, max int) {
		if max < 1 || max > 200 {
			max = 1 + (max%200+200)%200
		}
		s, err := New(Config{MaxRunes: max})
		if err != nil {
			t.Fatal(err)
		}
		msgs := []Message{{Index: 0, Content: a}, {Index: 1, Content: b}, {Index: 2, Content: a + b}}
		got := s.Split(msgs)
		rebuilt := map[int]string{}
		for i, c := range got {
			if c.Index != i {
				t.Fatalf("index %d != %d", c.Index, i)
			}
			if n := utf8.RuneCountInString(c.Text); n > max {
				t.Fatalf("chunk %d has %d runes > %d", i, n, max)
			}
			var texts []string
			for _, p := range c.Parts {
				if p.Text == "" {
					t.Fatalf("empty part in %+v", c)
				}
				texts = append(texts, p.Text)
				rebuilt[p.MessageIndex] += p.Text
			}
			if c.Text != strings.Join(texts, "\n") {
				t.Fatalf("text %q is not its parts %q", c.Text, texts)
			}
		}
		for _, m := range msgs {
			want := m.Content
			if strings.TrimSpace(want) == "" {
				want = ""
			}
			if rebuilt[m.Index] != want {
				t.Fatalf("message %d rebuilt as %q, want %q", m.Index, rebuilt[m.Index], want)
			}
		}
	})
}

func BenchmarkSplit(b *testing.B) {
	s, _ := New(Config{})
	var msgs []Message
	for i := range 200 {
		msgs = append(msgs, Message{Index: i, Role: "user", Content: strings.Repeat("I moved to Shanghai last year, and I love it. 我上周六去杭州爬山了。", 5)})
	}
	for b.Loop() {
		s.Split(msgs)
	}
}
