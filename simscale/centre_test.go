package simscale

import (
	"context"
	"math"
	"testing"

	"github.com/memstream/memstream/embed"
)

func TestCentredSubtractsTheQueryMean(t *testing.T) {
	l, err := embed.NewHash(384)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Measure(context.Background(), docQuery{l}, "hash")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.QueryMean) != 384 || dot(s.QueryMean, s.QueryMean) == 0 {
		t.Fatalf("query mean has %d dims and squared norm %v, want a non-zero vector of 384", len(s.QueryMean), dot(s.QueryMean, s.QueryMean))
	}
	qs, _ := l.EmbedQueries(context.Background(), []string{"Where do I keep the spare keys?"})
	q := qs[0]
	keep := append([]float32(nil), q...)
	c := s.Centred(q)
	for i := range c {
		if c[i] != q[i]-s.QueryMean[i] {
			t.Fatalf("dimension %d: %v, want %v − %v", i, c[i], q[i], s.QueryMean[i])
		}
		if q[i] != keep[i] {
			t.Fatal("Centred modified its argument")
		}
	}
	if got := s.Centred(q[:10]); len(got) != 10 || &got[0] != &q[0] {
		t.Error("a vector of another dimension was not returned unchanged")
	}
	if got := (Scale{}).Centred(q); &got[0] != &q[0] {
		t.Error("a scale without a mean changed the query")
	}
	d := s.Query(q)
	want := s.Centred(s.Declarative(q))
	for i := range d {
		if d[i] != want[i] {
			t.Fatal("Query is not Centred(Declarative(q))")
		}
	}
}

// Questions of a bank (a user asking for tips, an assistant asking
// back) sit near every question, also without the form direction; with
// the mean question taken off the query they fall further below the
// statement that answers it. The texts are written for this test, not
// taken from the probe set, the evaluation or the form's test.
func TestCentredQueryRanksAnswersAboveOtherQuestions(t *testing.T) {
	ctx := context.Background()
	l, s := measuredLocal(t)
	cases := []struct{ query, answer string }{
		{"Who do I work for at the moment?", "Tom: Signed the contract with the harbour authority, I start there in May."},
		{"Where am I based right now?", "Rui: We finally unpacked the last boxes in the new flat in Leeds."},
		{"What instrument is my son learning?", "Ana: Our boy takes trumpet lessons on Mondays."},
		{"Which team do I support?", "Jo: Been a Celtic fan since I was six."},
		{"How do I get to work these days?", "Lee: I've been cycling to the office since the trains got worse."},
		{"What do I do on Sunday mornings?", "Kofi: Sunday mornings are for the farmers' market and a long run."},
		{"我妈妈住在哪里？", "丽丽: 我妈妈去年搬到了苏州。"},
		{"Who looks after my cat when I travel?", "Mina: The neighbour's daughter feeds Pixel whenever I'm away."},
	}
	others := []string{"Did you get any sleep in the end?", "What did the doctor say?", "Mia: Is it normal for a cat to sneeze a lot?",
		"Sam: How long should I rest a steak before cutting it?", "Anything exciting on this weekend?", "How did the interview go?",
		"Ben: Which is better for a beginner, a road bike or a hybrid?", "你周末有什么打算吗？", "Was the traffic bad again?",
		"Zoe: Can I freeze cooked rice?"}
	gv, _ := l.EmbedDocuments(ctx, others)
	var declSum, centSum float64
	better := 0
	for _, c := range cases {
		q, _ := l.EmbedQueries(ctx, []string{c.query})
		a, _ := l.EmbedDocuments(ctx, []string{c.answer})
		// z is how far the answer stands above the questions,
		// in their own spread, so that the two query vectors' cosine
		// scales compare.
		z := func(v []float32) float64 {
			var sum, sq float64
			for _, o := range gv {
				c := cosine(v, o)
				sum += c
				sq += c * c
			}
			n := float64(len(gv))
			mean := sum / n
			return (cosine(v, a[0]) - mean) / math.Sqrt(sq/n-mean*mean)
		}
		decl, cent := z(s.Declarative(q[0])), z(s.Query(q[0]))
		t.Logf("%q: the answer %.2f standard deviations above the questions without the form, %.2f also centred", c.query, decl, cent)
		declSum += decl
		centSum += cent
		if cent > decl {
			better++
		}
	}
	t.Logf("mean: %.2f without the form, %.2f also centred; centred higher in %d of %d", declSum/float64(len(cases)), centSum/float64(len(cases)), better, len(cases))
	if centSum <= declSum || 2*better <= len(cases) {
		t.Errorf("the answers stand %.2f above the questions centred, %.2f without; centred higher in %d of %d; want higher on average and in most", centSum/float64(len(cases)), declSum/float64(len(cases)), better, len(cases))
	}
}
