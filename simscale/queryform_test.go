package simscale

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/embed"
)

// measuredLocal loads the default local model and measures its scale,
// or skips when its weights are not installed (unless
// MEMSTREAM_REQUIRE_MODEL=1).
func measuredLocal(t *testing.T) (embed.Embedder, Scale) {
	t.Helper()
	dir, err := embed.FindModelDir("")
	if err != nil {
		if os.Getenv("MEMSTREAM_REQUIRE_MODEL") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	c := config.Default().Embed
	c.ModelDir, c.CacheSize = filepath.Dir(dir), 0
	l, err := embed.FromConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Measure(context.Background(), l, "local")
	if err != nil {
		t.Fatal(err)
	}
	return l, s
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestDeclarativeRemovesTheQueryForm(t *testing.T) {
	l, err := embed.NewHash(384)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Measure(context.Background(), docQuery{l}, "hash")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.QueryForm) != 384 || math.Abs(dot(s.QueryForm, s.QueryForm)-1) > 1e-5 {
		t.Fatalf("query form has %d dims and squared norm %v, want a unit vector of 384", len(s.QueryForm), dot(s.QueryForm, s.QueryForm))
	}
	qs, _ := l.EmbedQueries(context.Background(), []string{"Where do I keep the spare keys?"})
	q := qs[0]
	before := dot(q, s.QueryForm)
	d := s.Declarative(q)
	if math.Abs(dot(d, s.QueryForm)) > 1e-5 || before == 0 {
		t.Errorf("component along the form %v before, %v after; want non-zero, then 0", before, dot(d, s.QueryForm))
	}
	if dot(q, s.QueryForm) != before {
		t.Error("Declarative modified its argument")
	}
	if got := s.Declarative(q[:10]); len(got) != 10 || &got[0] != &q[0] {
		t.Error("a vector of another dimension was not returned unchanged")
	}
	if got := (Scale{}).Declarative(q); &got[0] != &q[0] {
		t.Error("a scale without a form changed the query")
	}
}

// With a sentence-similarity model a question is closer to unrelated
// questions than to its own answer; without the interrogative form the
// answer wins. The texts are not the probe set's.
func TestDeclarativeQueryFindsStatementsOverQuestions(t *testing.T) {
	ctx := context.Background()
	l, s := measuredLocal(t)
	cases := []struct{ query, answer string }{
		{"Where does my brother work these days?", "Tom: My brother has a job at the harbour office now."},
		{"What instrument is my son learning?", "Ana: Our boy takes trumpet lessons on Mondays."},
		{"我妈妈住在哪里？", "丽丽: 我妈妈去年搬到了苏州。"},
		{"Where am I based right now?", "Rui: We finally unpacked the last boxes in the new flat in Leeds."},
		{"Who looks after my cat when I travel?", "Mina: The neighbour's daughter feeds Pixel whenever I'm away."},
		{"What do I do on Sunday mornings?", "Kofi: Sunday mornings are for the farmers' market and a long run."},
		{"Which team do I support?", "Jo: Been a Celtic fan since I was six."},
		{"How do I get to work these days?", "Lee: I've been cycling to the office since the trains got worse."},
	}
	questions := []string{"Any idea how to get red wine out of a carpet?", "What's the quickest way to defrost a freezer?",
		"Can you tell me how long to boil an egg?", "有什么好看的电影推荐吗？", "How do I make my laptop battery last longer?",
		"What's a polite way to decline a wedding invitation?", "Is it worth learning to touch-type?", "Why does my bread never rise?"}
	qv, _ := l.EmbedDocuments(ctx, questions)
	var rawSum, declSum int
	for _, c := range cases {
		q, _ := l.EmbedQueries(ctx, []string{c.query})
		a, _ := l.EmbedDocuments(ctx, []string{c.answer})
		rank := func(v []float32) int {
			r := 0
			for _, o := range qv {
				if cosine(v, o) >= cosine(v, a[0]) {
					r++
				}
			}
			return r
		}
		raw, decl := rank(q[0]), rank(s.Declarative(q[0]))
		t.Logf("%q: %d unrelated questions above the answer as asked, %d without the form", c.query, raw, decl)
		if decl > raw {
			t.Errorf("%q: more unrelated questions above its answer without the query form (%d) than with it (%d)", c.query, decl, raw)
		}
		rawSum += raw
		declSum += decl
	}
	// Measured: 26 as asked, 3 without the form.
	if rawSum == 0 || 4*declSum > rawSum {
		t.Errorf("unrelated questions above the answers: %d as asked, %d without the form; want at most a quarter", rawSum, declSum)
	}
}
