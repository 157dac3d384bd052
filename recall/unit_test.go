package recall

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/goleak"

	"github.com/memstream/memstream/simscale"
	"github.com/memstream/memstream/timeparse"
)

// Recall starts goroutines per arm and for the embedding; none may outlive
// it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func cand(n byte, score float64) Candidate { return Candidate{ID: uuid.UUID{n}, Score: score} }

func TestFuseRRF(t *testing.T) {
	arms := []ArmTrace{
		{Arm: ArmSemantic, Candidates: []Candidate{cand(1, .9), cand(2, .8), cand(3, .7)}},
		{Arm: ArmKeyword, Candidates: []Candidate{cand(3, 5), cand(4, 2)}},
	}
	got := fuse(FusionRRF, arms, 60, nil)
	// 3 is second-ish in both lists: 1/63 + 1/61 beats 1's lone 1/61.
	order := []byte{}
	for _, f := range got {
		order = append(order, f.ID[0])
	}
	if !slices.Equal(order, []byte{3, 1, 2, 4}) {
		t.Fatalf("rrf order = %v, want [3 1 2 4]", order)
	}
	if got[0].Rel != 1 || got[0].Semantic != .7 || got[0].Keyword != 5 {
		t.Errorf("top = %+v", got[0])
	}
	want1 := (1.0 / 61) / (1.0/63 + 1.0/61)
	if math.Abs(got[1].Rel-want1) > 1e-12 {
		t.Errorf("rel of 1 = %g, want %g", got[1].Rel, want1)
	}
}

func TestFuseWeightedRRF(t *testing.T) {
	arms := []ArmTrace{
		{Arm: ArmSemantic, Candidates: []Candidate{cand(1, .9), cand(2, .8)}},
		{Arm: ArmKeyword, Candidates: []Candidate{cand(3, 5)}},
	}
	order := func(w map[string]float64) []byte {
		var o []byte
		for _, f := range fuse(FusionRRF, arms, 60, w) {
			o = append(o, f.ID[0])
		}
		return o
	}
	// Equal weights: the arms' tops 1 and 3 tie at 1/61 (ids break it),
	// above 2's 1/62.
	if got := order(nil); !slices.Equal(got, []byte{1, 3, 2}) {
		t.Fatalf("equal weights: %v, want [1 3 2]", got)
	}
	// A keyword rank worth half: 3's 0.5/61 falls below 2's 1/62.
	if got := order(map[string]float64{ArmKeyword: 0.5}); !slices.Equal(got, []byte{1, 2, 3}) {
		t.Fatalf("keyword weight 0.5: %v, want [1 2 3]", got)
	}
	if got := order(map[string]float64{ArmKeyword: 0}); got[len(got)-1] != 3 {
		t.Fatalf("keyword weight 0: %v, want 3 last", got)
	}
}

func TestArmWeightsValidated(t *testing.T) {
	for _, w := range []map[string]float64{{"vector": 1}, {ArmKeyword: -1}, {ArmGraph: math.NaN()}} {
		if err := (Config{ArmWeights: w}).WithDefaults().validate(); err == nil {
			t.Errorf("weights %v accepted", w)
		}
	}
	if err := (Config{}).WithDefaults().validate(); err != nil {
		t.Errorf("defaults rejected: %v", err)
	}
}

func TestFuseInterleave(t *testing.T) {
	arms := []ArmTrace{
		{Arm: ArmSemantic, Candidates: []Candidate{cand(1, .9), cand(2, .8), cand(3, .7)}},
		{Arm: ArmKeyword, Candidates: []Candidate{cand(1, 5), cand(4, 2)}},
		{Arm: ArmTemporal, Candidates: []Candidate{cand(5, 1)}},
	}
	var order []byte
	for _, f := range fuse(FusionInterleave, arms, 60, nil) {
		order = append(order, f.ID[0])
	}
	// round 1: 1 (semantic), 1 again (skipped), 5; round 2: 2, 4; round 3: 3
	if !slices.Equal(order, []byte{1, 5, 2, 4, 3}) {
		t.Fatalf("interleave order = %v, want [1 5 2 4 3]", order)
	}
}

func TestRecencyIsPeriodAware(t *testing.T) {
	now := time.Date(2025, 6, 11, 12, 0, 0, 0, time.UTC)
	half := 90 * 24 * time.Hour
	plain := &query{Request: Request{QueryTime: now}}
	if got := recency(now, plain, half); got != 1 {
		t.Errorf("fresh fact recency = %g, want 1", got)
	}
	if got := recency(now.Add(-half), plain, half); math.Abs(got-(recencyFloor+(1-recencyFloor)/2)) > 1e-9 {
		t.Errorf("one half-life recency = %g", got)
	}
	old := time.Date(2019, 3, 10, 0, 0, 0, 0, time.UTC)
	inMarch := &query{Request: Request{QueryTime: now}, windows: timeparse.Parse("in March 2019", now)}
	if len(inMarch.windows) == 0 {
		t.Fatal("timeparse found no window in 'in March 2019'")
	}
	if got := recency(old, inMarch, half); got != 1 {
		t.Errorf("fact inside the named period decayed: %g", got)
	}
	if a, b := recency(old.AddDate(0, 2, 0), inMarch, half), recency(old.AddDate(0, 0, 30), inMarch, half); !(a < b && b < 1) {
		t.Errorf("outside the period, farther should decay more: %g vs %g", a, b)
	}
	if got := recency(old, plain, -1); got != 1 {
		t.Errorf("disabled recency = %g", got)
	}
}

// TestScoreIgnoresProofAndTrend: the proof-count boost and the trend
// factor did not help on the held-out part and were removed, so four
// equally relevant results score alike whatever their proof counts and
// trends; recency still orders an old and a new fact, unless switched off.
func TestScoreIgnoresProofAndTrend(t *testing.T) {
	now := time.Date(2025, 6, 11, 12, 0, 0, 0, time.UTC)
	mk := func(n byte, proof int, trend string, age time.Duration) hydrated {
		return hydrated{Result: Result{ID: uuid.UUID{n}, MentionedAt: now.Add(-age), ProofCount: proof, Trend: trend}, sim: .5}
	}
	fs := []fused{{ID: uuid.UUID{1}, Rel: 1}, {ID: uuid.UUID{2}, Rel: 1}, {ID: uuid.UUID{3}, Rel: 1}, {ID: uuid.UUID{4}, Rel: 1}}
	hs := []hydrated{mk(1, 1, "STALE", 0), mk(2, 1, "", 0), mk(3, 1, "STRENGTHENING", 0), mk(4, 10, "", 0)}
	scoreResults(hs, fs, &query{Request: Request{QueryTime: now}}, Config{}.WithDefaults())
	for _, h := range hs[1:] {
		if h.Scores.Final != hs[0].Scores.Final {
			t.Errorf("result %d scores %v, result %d %v: proof count or trend still counts", h.ID[0], h.Scores.Final, hs[0].ID[0], hs[0].Scores.Final)
		}
	}
	aged := []hydrated{mk(1, 1, "", 400*24*time.Hour), mk(2, 1, "", 0)}
	scoreResults(aged, fs[:2], &query{Request: Request{QueryTime: now}}, Config{}.WithDefaults())
	if aged[0].ID[0] != 2 {
		t.Errorf("recency did not put the new fact first: %v", aged[0].ID)
	}
	flat := []hydrated{mk(1, 1, "", 400*24*time.Hour), mk(2, 1, "", 0)}
	scoreResults(flat, fs[:2], &query{Request: Request{QueryTime: now}, off: map[string]bool{HeuristicRecency: true}}, Config{}.WithDefaults())
	if flat[0].Scores.Final != flat[1].Scores.Final {
		t.Errorf("recency switched off still scores by age: %v vs %v", flat[0].Scores.Final, flat[1].Scores.Final)
	}
}

func TestKeywordTerms(t *testing.T) {
	for _, c := range []struct {
		q    string
		want []string
	}{
		{"status of order A-7731-QX", []string{"status", "order", "7731", "qx", "a-7731-qx"}},
		{"what did I do last Saturday", []string{"last", "saturday"}},
		// 哪了 holds the particle 了 and is dropped
		{"张伟去哪了", []string{"张伟", "伟去", "去哪"}},
		{"robert'); DROP TABLE x;--", []string{"robert", "drop", "table"}},
	} {
		got := keywordTerms(c.q)
		if !slices.Equal(got, c.want) {
			t.Errorf("keywordTerms(%q) = %q, want %q", c.q, got, c.want)
		}
	}
}

func TestPickTerms(t *testing.T) {
	stats := []termStat{{"the", 90, 100}, {"qx", 1, 100}, {"nope", 0, 100}, {"order", 30, 100}}
	terms, idfs, _ := pickTerms(stats, 0.5, 20)
	if !slices.Equal(terms, []string{"qx", "order"}) {
		t.Fatalf("terms = %v", terms)
	}
	if idfs[0] <= idfs[1] {
		t.Errorf("rare term should weigh more: %v", idfs)
	}
	// All common: keep the rarest rather than nothing.
	terms, _, _ = pickTerms([]termStat{{"a", 80, 100}, {"b", 60, 100}}, 0.5, 20)
	if !slices.Equal(terms, []string{"b"}) {
		t.Errorf("all-common terms = %v, want [b]", terms)
	}
	// Tiny bank: nothing is "common".
	terms, _, _ = pickTerms([]termStat{{"a", 3, 4}}, 0.5, 20)
	if !slices.Equal(terms, []string{"a"}) {
		t.Errorf("tiny bank terms = %v", terms)
	}
}

func TestQueryNames(t *testing.T) {
	has := func(ns []nameCandidate, s string) bool {
		return slices.ContainsFunc(ns, func(n nameCandidate) bool { return n.text == s })
	}
	ns := queryNames("Where did Zhang Wei move? Ask 老张去哪了")
	for _, want := range []string{"Zhang", "Zhang Wei", "Wei", "move", "老张", "老张去哪"} {
		if !has(ns, want) {
			t.Errorf("queryNames misses %q", want)
		}
	}
	for _, bad := range []string{"Where did Zhang", "did", "move Ask", "老"} {
		if has(ns, bad) {
			t.Errorf("queryNames has %q", bad)
		}
	}
}

func TestMatchTerms(t *testing.T) {
	cases := []struct {
		name  string
		terms []string
		dfs   []int64
		want  []string
		mode  string
	}{
		{"rare terms ORed, rarest first", []string{"maria", "a-7731-qx", "order"}, []int64{900, 1, 600}, []string{"a-7731-qx", "order"}, matchOr},
		{"all fit", []string{"chess", "pottery"}, []int64{300, 200}, []string{"pottery", "chess"}, matchOr},
		{"every term over budget: AND", []string{"maria", "lopez"}, []int64{3000, 2500}, []string{"maria", "lopez"}, matchAnd},
		{"one common term alone", []string{"user"}, []int64{2000}, []string{"user"}, matchOr},
	}
	for _, c := range cases {
		got, mode := matchTerms(c.terms, c.dfs, 1000)
		if !slices.Equal(got, c.want) || mode != c.mode {
			t.Errorf("%s: matchTerms = %v %s, want %v %s", c.name, got, mode, c.want, c.mode)
		}
	}
}

func TestStatCacheExpires(t *testing.T) {
	c, err := newStatCache(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c.putDF("b1", "maria", 42, t0)
	c.putBankSize("b1", 1000, t0)
	if df, ok := c.df("b1", "maria", t0.Add(30*time.Second)); !ok || df != 42 {
		t.Errorf("fresh df = %d %v, want 42 true", df, ok)
	}
	if _, ok := c.df("b2", "maria", t0); ok {
		t.Error("df of another bank served from the cache")
	}
	if n, ok := c.bankSize("b1", t0); !ok || n != 1000 {
		t.Errorf("bank size = %d %v", n, ok)
	}
	if _, ok := c.df("b1", "maria", t0.Add(2*time.Minute)); ok {
		t.Error("stale df served")
	}
	off, err := newStatCache(-1)
	if err != nil {
		t.Fatal(err)
	}
	off.putDF("b1", "maria", 42, t0)
	if _, ok := off.df("b1", "maria", t0); ok {
		t.Error("disabled cache served a value")
	}
}

func TestDiversifyPushesDuplicatesDown(t *testing.T) {
	mk := func(name string, final float64, vec ...float32) hydrated {
		h := hydrated{vec: vec}
		h.Text = name
		h.Scores.Final = final
		return h
	}
	hs := []hydrated{
		mk("a", 1.0, 1, 0, 0),
		mk("a-again", 0.95, 0.99, 0.01, 0),
		mk("b", 0.9, 0, 1, 0),
		mk("no-vector", 0.85),
		mk("c", 0.5, 0, 0, 1),
	}
	texts := func(hs []hydrated) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h.Text)
		}
		return out
	}
	got := slices.Clone(hs)
	diversify(got, 0.5, simscale.Scale{})
	if want := []string{"a", "b", "no-vector", "c", "a-again"}; !slices.Equal(texts(got), want) {
		t.Errorf("diversify(0.5) = %v, want %v", texts(got), want)
	}
	// A small weight only breaks near-ties: the order stays.
	got = slices.Clone(hs)
	diversify(got, 0.01, simscale.Scale{})
	if want := texts(hs); !slices.Equal(texts(got), want) {
		t.Errorf("diversify(0.01) = %v, want the score order %v", texts(got), want)
	}
}

func TestFuseRRFTiesShareMeanRank(t *testing.T) {
	// The graph arm returns three facts with one weight (the user's own
	// entity links them all) and then a weaker one. The tied three share
	// rank (1+2+3)/3 = 2, whatever their id order.
	arms := []ArmTrace{{Arm: ArmGraph, Candidates: []Candidate{cand(9, .4), cand(1, .4), cand(5, .4+1e-12), cand(2, .1)}}}
	got := fuse(FusionRRF, arms, 60, nil)
	rel := map[byte]float64{}
	for _, f := range got {
		rel[f.ID[0]] = f.Rel
	}
	if rel[9] != rel[1] || rel[1] != rel[5] {
		t.Errorf("tied candidates got different values: %v", rel)
	}
	// scaled by the best: (1/62)/(1/62) for the tie, (1/64)/(1/62) for 2
	if want := 62.0 / 64; rel[9] != 1 || math.Abs(rel[2]-want) > 1e-12 {
		t.Errorf("rel = %v, want ties 1 and 2 at %g", rel, want)
	}
	// The next tie group starts after the first: a two-way tie at ranks
	// 2–3 shares 2.5, below the untied first.
	arms = []ArmTrace{{Arm: ArmKeyword, Candidates: []Candidate{cand(1, 3), cand(2, 2), cand(3, 2)}}}
	got = fuse(FusionRRF, arms, 60, nil)
	if want := (1 / 62.5) / (1.0 / 61); math.Abs(got[1].Rel-want) > 1e-12 || got[1].Rel != got[2].Rel {
		t.Errorf("second group = %v, %v, want both %g", got[1].Rel, got[2].Rel, want)
	}
}
