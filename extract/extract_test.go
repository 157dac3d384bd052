package extract

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memstream/memstream/chunk"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var ts = time.Date(2026, 11, 18, 10, 0, 0, 0, time.UTC) // a Wednesday

type conversation struct {
	Context  string   `json:"context"`
	Tags     []string `json:"tags"`
	Messages []struct {
		Role      string    `json:"role"`
		Name      string    `json:"name"`
		Content   string    `json:"content"`
		Timestamp time.Time `json:"timestamp"`
	} `json:"messages"`
}

// TestGolden runs each testdata/*.json conversation through the chunker and
// the offline extractor and compares the facts with testdata/*.golden.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var conv conversation
			if err := json.Unmarshal(raw, &conv); err != nil {
				t.Fatal(err)
			}
			var msgs []chunk.Message
			for i, m := range conv.Messages {
				tm := m.Timestamp
				if tm.IsZero() {
					tm = ts
				}
				msgs = append(msgs, chunk.Message{Index: i, Role: m.Role, Name: m.Name, Content: m.Content, Timestamp: tm})
			}
			sp, err := chunk.New(chunk.Config{MaxRunes: 200})
			if err != nil {
				t.Fatal(err)
			}
			var in []Input
			for _, c := range sp.Split(msgs) {
				in = append(in, Input{Parts: c.Parts, Context: conv.Context, Tags: conv.Tags})
			}
			out, err := offline(t, OfflineConfig{}).Extract(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			for i, facts := range out {
				if err := ValidateChunk(facts); err != nil {
					t.Errorf("chunk %d: %v", i, err)
				}
			}
			got, err := json.MarshalIndent(out, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("facts differ from %s (run with -update and review the diff):\n%s", golden, got)
			}
		})
	}
}

func extractOne(t *testing.T, role, name, text string) []Fact {
	t.Helper()
	out, err := offline(t, OfflineConfig{}).Extract(context.Background(), []Input{{
		Parts: []chunk.Part{{MessageIndex: 3, Role: role, Name: name, Timestamp: ts, Text: text}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateChunk(out[0]); err != nil {
		t.Fatal(err)
	}
	return out[0]
}

func TestClassification(t *testing.T) {
	t.Parallel()
	tests := []struct {
		role, name, in string
		text, typ      string
	}{
		{"user", "Alice", "I moved to Shanghai.", "Alice: I moved to Shanghai.", Experience},
		{"user", "Alice", "My cat is called Mochi.", "Alice: My cat is called Mochi.", Experience},
		{"user", "Alice", "We love hiking.", "Alice: We love hiking.", Experience},
		{"user", "Alice", "The Eiffel Tower is in Paris.", "The Eiffel Tower is in Paris.", World},
		{"user", "Alice", "Can you recommend a book?", "Alice: Can you recommend a book?", World},
		{"user", "", "I like tea.", "User: I like tea.", Experience},
		{"user", "Alice", "Went hiking with Bob.", "Alice: Went hiking with Bob.", Experience},
		{"assistant", "", "I booked the flight for you.", "Assistant: I booked the flight for you.", Experience},
		{"assistant", "", "Booked the flight.", "Assistant: Booked the flight.", Experience},
		{"assistant", "", "Water boils at 100 degrees.", "Water boils at 100 degrees.", World},
		{"user", "张伟", "我搬到了上海。", "张伟: 我搬到了上海。", Experience},
		{"user", "张伟", "我们明天去北京。", "张伟: 我们明天去北京。", Experience},
		{"user", "张伟", "上海的冬天很冷。", "上海的冬天很冷。", World},
		{"assistant", "", "已经帮你订好了。", "Assistant: 已经帮你订好了。", Experience},
		{"user", "Alice", "The US economy grew.", "The US economy grew.", World},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			facts := extractOne(t, tt.role, tt.name, tt.in)
			if len(facts) != 1 {
				t.Fatalf("got %d facts %+v", len(facts), facts)
			}
			f := facts[0]
			if f.Text != tt.text || f.FactType != tt.typ {
				t.Errorf("got %q %s, want %q %s", f.Text, f.FactType, tt.text, tt.typ)
			}
			if !f.MentionedAt.Equal(ts) || f.MessageIndex != 3 {
				t.Errorf("mentioned_at %v message %d", f.MentionedAt, f.MessageIndex)
			}
		})
	}
}

func TestContentFreeDropped(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"hi", "Hi!", "thanks!", "Thank you so much!", "ok", "OK.", "Hi Alice!", "好的", "谢谢！", "好的，谢谢！", "嗯嗯", "哈哈哈", "👍", "...", "That sounds exciting!", "Glad to help.", "听起来很不错！"} {
		if facts := extractOne(t, "user", "Alice", in); len(facts) != 0 {
			t.Errorf("%q gave %+v", in, facts)
		}
	}
}

func TestSegment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"Dr. Smith is here. He left.", []string{"Dr. Smith is here.", "He left."}},
		{"Use tools, e.g. hammers. Done!", []string{"Use tools, e.g. hammers.", "Done!"}},
		{"J. K. Rowling wrote it. Wow!!", []string{"J. K. Rowling wrote it.", "Wow!!"}},
		{"It costs 3.5 dollars. Ok?", []string{"It costs 3.5 dollars.", "Ok?"}},
		{"He works at Acme Inc. She does not.", []string{"He works at Acme Inc.", "She does not."}},
		{"我搬家了。你呢？好的！", []string{"我搬家了。", "你呢？", "好的！"}},
		{"line one\nline two", []string{"line one", "line two"}},
		{"He said \"go.\" Then left.", []string{"He said \"go.\"", "Then left."}},
	}
	for _, tt := range tests {
		if got := segment(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("segment(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEntities(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []Entity
	}{
		{"Bob Smith moved to New York.", []Entity{{"Bob Smith", KindOther}, {"New York", KindPlace}}},
		{"Yesterday my friend Carol visited.", []Entity{{"Carol", KindPerson}}},
		{"Shanghai is huge.", []Entity{{"Shanghai", KindPlace}}},
		{"Paris is nice.", []Entity{{"Paris", KindPlace}}},
		{"Tom is nice.", nil},
		{"Ask Dr. Chen at Stanford University.", []Entity{{"Dr. Chen", KindPerson}, {"Stanford University", KindOrg}}},
		{"He joined Acme Inc last year.", []Entity{{"Acme Inc", KindOrg}}},
		{"Follow @jane_doe, not bob@example.com.", []Entity{{"@jane_doe", KindHandle}}},
		{"We watched \"The Matrix\" and “Inception”.", []Entity{{"The Matrix", KindTitle}, {"Inception", KindTitle}}},
		{"我读了《三体》。", []Entity{{"三体", KindTitle}}},
		// A quotation is a title only when it is written as one: a
		// capitalised name, not a clause quoted as an example.
		{"And \"could be moved\" is passive again.", nil},
		{"Say \"The team shipped the feature\", not \"the feature was shipped\".", nil},
		{"Changed the greeting to \"Hi Bob,\" as you asked.", []Entity{{"Bob", KindOther}}},
		{"She loved \"Harry Potter and the Goblet of Fire\".", []Entity{{"Harry Potter and the Goblet of Fire", KindTitle}}},
		// A possessive is not part of the name.
		{"Next Friday is my sister Emma's birthday.", []Entity{{"Emma", KindPerson}}},
		{"We met at O'Brien's pub with Jean-Luc.", []Entity{{"O'Brien", KindOther}, {"Jean-Luc", KindOther}}},
		{"我和李明去了北京。", []Entity{{"李明", KindPerson}, {"北京", KindPlace}}},
		{"张伟说他喜欢杭州。", []Entity{{"张伟", KindPerson}, {"杭州", KindPlace}}},
		{"老张和小王来了。", []Entity{{"老张", KindPerson}, {"小王", KindPerson}}},
		{"王老师住在浦东新区。", []Entity{{"王老师", KindPerson}, {"浦东新区", KindPlace}}},
		{"他在上海市工作。", []Entity{{"上海", KindPlace}}},
		{"她在清华大学读书，后来去了腾讯公司。", []Entity{{"清华大学", KindOrg}, {"腾讯公司", KindOrg}}},
		{"我去超市买了很多东西，谢谢你。", nil},
		{"我们一起去城市公园。", nil},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			f := entityFinder{known: map[string]string{}}
			if got := f.find(tt.in, nil); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("find(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestKnownEntities(t *testing.T) {
	t.Parallel()
	o := offline(t, OfflineConfig{KnownEntities: []Entity{{"Tom", KindPerson}}})
	out, err := o.Extract(context.Background(), []Input{{Parts: []chunk.Part{
		{MessageIndex: 0, Role: "user", Name: "Alice", Timestamp: ts, Text: "Tom is nice. Alice is tired."},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]Entity{{{"Tom", KindPerson}}, {{"Alice", KindPerson}}}
	for i, f := range out[0] {
		if !reflect.DeepEqual(f.Entities, want[i]) {
			t.Errorf("fact %d entities %v, want %v", i, f.Entities, want[i])
		}
	}
}

func TestCausal(t *testing.T) {
	t.Parallel()
	type link struct{ cause, effect string }
	tests := []struct {
		in   string
		want []string // fact texts, in order
		link *link
		prev bool
	}{
		{"I was late because the train broke down.", []string{"Alice: I was late", "the train broke down."}, &link{"the train broke down.", "Alice: I was late"}, false},
		{"Because it rained, we stayed in.", []string{"it rained", "Alice: we stayed in."}, &link{"it rained", "Alice: we stayed in."}, false},
		{"The flight was cancelled due to the storm.", []string{"The flight was cancelled", "the storm."}, &link{"the storm.", "The flight was cancelled"}, false},
		{"It was sunny, so we went to the beach.", []string{"It was sunny", "Alice: we went to the beach."}, &link{"It was sunny", "Alice: we went to the beach."}, false},
		{"I have lived here since March.", []string{"Alice: I have lived here since March."}, nil, false},
		{"I saved money, so that I can travel.", []string{"Alice: I saved money, so that I can travel."}, nil, false},
		{"因为下雨，所以我们没去。", []string{"下雨", "Alice: 所以我们没去。"}, nil, false},
		{"我今天迟到了，因为地铁坏了。", []string{"Alice: 我今天迟到了", "地铁坏了。"}, &link{"地铁坏了。", "Alice: 我今天迟到了"}, false},
		{"天气很冷，所以我穿了大衣。", []string{"天气很冷", "Alice: 我穿了大衣。"}, &link{"天气很冷", "Alice: 我穿了大衣。"}, false},
		{"暴雨导致航班取消。", []string{"暴雨", "航班取消。"}, &link{"暴雨", "航班取消。"}, false},
		{"The train broke down. Therefore I was late.", []string{"The train broke down.", "Alice: Therefore I was late."}, &link{"The train broke down.", "Alice: Therefore I was late."}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			facts := extractOne(t, "user", "Alice", tt.in)
			var texts []string
			for _, f := range facts {
				texts = append(texts, f.Text)
			}
			if tt.want[0] == "下雨" {
				// 因为Y，所以X keeps the effect without its cue word.
				tt.want[1] = "Alice: 我们没去。"
				tt.link = &link{"下雨", "Alice: 我们没去。"}
			}
			if !reflect.DeepEqual(texts, tt.want) {
				t.Fatalf("texts = %q, want %q", texts, tt.want)
			}
			if tt.link == nil {
				for _, f := range facts {
					if len(f.Causal) != 0 {
						t.Errorf("unexpected causal link %+v", f)
					}
				}
				return
			}
			idx := map[string]int{}
			for i, f := range facts {
				idx[f.Text] = i
			}
			c, e := idx[tt.link.cause], idx[tt.link.effect]
			if !reflect.DeepEqual(facts[c].Causal, []Causal{{e, Causes}}) || !reflect.DeepEqual(facts[e].Causal, []Causal{{c, CausedBy}}) {
				t.Errorf("links: cause %+v effect %+v", facts[c].Causal, facts[e].Causal)
			}
		})
	}
}

func TestTimes(t *testing.T) {
	t.Parallel()
	facts := extractOne(t, "user", "Alice", "I was sick yesterday because it rained. 我上周六去了杭州。No date here.")
	want := []string{"2026-11-17", "2026-11-17", "2026-11-14", ""}
	if len(facts) != len(want) {
		t.Fatalf("got %d facts", len(facts))
	}
	for i, f := range facts {
		got := ""
		if f.OccurredStart != nil {
			got = f.OccurredStart.Format(time.DateOnly)
		}
		if got != want[i] {
			t.Errorf("fact %d %q occurred %q, want %q", i, f.Text, got, want[i])
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	s, e := ts, ts.Add(time.Hour)
	good := Fact{Text: "x", FactType: World, MentionedAt: ts}
	tests := []struct {
		name string
		mod  func(*Fact)
		ok   bool
	}{
		{"good", func(*Fact) {}, true},
		{"empty text", func(f *Fact) { f.Text = " " }, false},
		{"bad type", func(f *Fact) { f.FactType = "observation" }, false},
		{"no mentioned_at", func(f *Fact) { f.MentionedAt = time.Time{} }, false},
		{"half range", func(f *Fact) { f.OccurredStart = &s }, false},
		{"reversed range", func(f *Fact) { f.OccurredStart, f.OccurredEnd = &e, &s }, false},
		{"range", func(f *Fact) { f.OccurredStart, f.OccurredEnd = &s, &e }, true},
		{"bad kind", func(f *Fact) { f.Entities = []Entity{{"A", "thing"}} }, false},
		{"bad relation", func(f *Fact) { f.Causal = []Causal{{0, "implies"}} }, false},
	}
	for _, tt := range tests {
		f := good
		tt.mod(&f)
		if err := f.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
	if err := ValidateChunk([]Fact{{Text: "x", FactType: World, MentionedAt: ts, Causal: []Causal{{0, Causes}}}}); err == nil {
		t.Error("self link accepted")
	}
}

func TestExtractCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := offline(t, OfflineConfig{}).Extract(ctx, []Input{{}}); err == nil {
		t.Fatal("no error after cancel")
	}
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	o := offline(t, OfflineConfig{KnownEntities: []Entity{{"Acme", KindOrg}, {"Bob", KindPerson}, {"Carol", KindPerson}}})
	in := []Input{{Parts: []chunk.Part{{Role: "user", Name: "Alice", Timestamp: ts, Text: "Bob and Carol joined Acme. 张伟和李明去了上海市。"}}}}
	a, _ := o.Extract(context.Background(), in)
	for range 20 {
		b, _ := o.Extract(context.Background(), in)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("not deterministic: %+v vs %+v", a, b)
		}
	}
}

func FuzzOffline(f *testing.F) {
	f.Add("I was late because the train broke down. So I missed it.", "Alice")
	f.Add("因为下雨，所以我们没去。张伟和老王在上海市。", "张伟")
	f.Add("\"\" @ 《》 Dr. . 因为，", "")
	o := offline(f, OfflineConfig{})
	f.Fuzz(func(t *testing.T, text, name string) {
		out, err := o.Extract(context.Background(), []Input{{Parts: []chunk.Part{
			{MessageIndex: 1, Role: "user", Name: name, Timestamp: ts, Text: text},
			{MessageIndex: 2, Role: "assistant", Timestamp: ts, Text: text},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateChunk(out[0]); err != nil && strings.TrimSpace(name) == name {
			t.Fatalf("%v: %+v", err, out[0])
		}
	})
}

func BenchmarkOffline(b *testing.B) {
	sentences := []string{
		"I moved to Shanghai last March because my company opened an office there.",
		"My friend Bob Smith works at Acme Inc. and loves \"Deep Work\".",
		"Thanks, that sounds great!",
		"Can you remind me about the dentist appointment on 2026-03-14?",
		"我上周六和老王去杭州爬山了，因为天气很好。",
		"同事李明在阿里巴巴公司工作，三天前推荐了《三体》。",
		"好的，谢谢！",
		"The Eiffel Tower is in Paris, and it is very tall.",
	}
	var parts []chunk.Part
	for i, s := range sentences {
		parts = append(parts, chunk.Part{MessageIndex: i, Role: "user", Name: "Alice", Timestamp: ts, Text: s})
	}
	in := []Input{{Parts: parts, Tags: []string{"t"}}}
	o := offline(b, OfflineConfig{})
	ctx := context.Background()
	for b.Loop() {
		if _, err := o.Extract(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(sentences))/b.Elapsed().Seconds(), "sentences/s")
}

// offline is NewOffline for a test.
func offline(t testing.TB, cfg OfflineConfig) *Offline {
	t.Helper()
	o, err := NewOffline(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// An assistant fact quotes the user turn it answers in its context and in
// its embedded text; the event's context label is stored and shown with
// it but never embedded, so a label every item carries adds nothing to
// the vectors.
func TestEmbeddingTextKeepsTheReplyNotTheLabel(t *testing.T) {
	ts := time.Date(2025, 3, 1, 18, 0, 0, 0, time.UTC)
	o := offline(t, OfflineConfig{})
	out, err := o.Extract(context.Background(), []Input{{Context: "chat conversation", Parts: []chunk.Part{
		{MessageIndex: 0, Role: "user", Name: "Rui", Timestamp: ts, Text: "Which wine goes with lamb for the dinner party?"},
		{MessageIndex: 1, Role: "assistant", Name: "Assistant", Timestamp: ts.Add(time.Minute), Text: "A Syrah would stand up nicely to the lamb."},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	var user, answer *Fact
	for i := range out[0] {
		switch out[0][i].MessageIndex {
		case 0:
			user = &out[0][i]
		case 1:
			answer = &out[0][i]
		}
	}
	if user == nil || answer == nil {
		t.Fatalf("facts %+v: want one from each message", out[0])
	}
	const reply = "In reply to Rui: Which wine goes with lamb for the dinner party?"
	if answer.ReplyTo != reply {
		t.Errorf("reply_to %q, want %q", answer.ReplyTo, reply)
	}
	if answer.Context != "chat conversation\n"+reply {
		t.Errorf("context %q: want the label, then the reply quote", answer.Context)
	}
	if got := answer.EmbeddingText(); got != reply+"\n"+answer.Text {
		t.Errorf("answer embedded as %q: want the reply quote and the text, without the label", got)
	}
	if user.Context != "chat conversation" || user.ReplyTo != "" || user.EmbeddingText() != user.Text {
		t.Errorf("question: context %q, reply_to %q, embedded as %q: want the label stored, the text alone embedded", user.Context, user.ReplyTo, user.EmbeddingText())
	}
}
