package eval

import (
	"math"
	"strings"
	"testing"
	"time"
)

// fixture is a tiny run whose every number is worked out by hand in
// TestScoreMatchesHandComputedValues.
func fixture() ([]Question, []Answer) {
	qs := []Question{
		{ID: "q1", BankID: "b", Type: TypeSingleSessionUser, GoldAnswers: []string{"Biscuit"},
			Evidence: []Evidence{{"s1", 2}}},
		{ID: "q2", BankID: "b", Type: TypeMultiSession, GoldAnswers: []string{"Lisbon", "Osaka"}, RequireAll: true,
			Evidence: []Evidence{{"s1", 4}, {"s3", 1}}},
		{ID: "q3", BankID: "b", Type: TypeKnowledgeUpdate, GoldAnswers: []string{"FitHub"}, OldValue: "Crunch",
			Evidence: []Evidence{{"s5", 2}}},
		{ID: "q4", BankID: "b", Type: TypeAbstention, Abstention: true, AbsentTerm: "bassoon"},
		{ID: "q5", BankID: "b", Type: TypeAbstention, Abstention: true, AbsentTerm: "Netflix"},
		{ID: "q6", BankID: "b", Type: TypeTemporalReasoning, GoldAnswers: []string{"kayaking"},
			Evidence: []Evidence{{"s6", 1}}},
	}
	ms := time.Millisecond
	as := []Answer{
		{QuestionID: "q1", Latency: 10 * ms, Results: []Retrieved{
			{Text: "the weather was rainy", SessionID: "s2", TurnIndex: 0, Score: 0.9, Tokens: 5},
			{Text: "We adopted BISCUIT", SessionID: "s1", TurnIndex: 2, Score: 0.8, Tokens: 5},
			{Text: "another fact from s1", SessionID: "s1", TurnIndex: 3, Score: 0.7, Tokens: 5},
		}},
		{QuestionID: "q2", Latency: 20 * ms, Results: []Retrieved{
			{Text: "work trip to Osaka", SessionID: "s3", TurnIndex: 1, Score: 0.95, Tokens: 4},
			{Text: "Osaka meetings", SessionID: "s3", TurnIndex: 1, Score: 0.9, Tokens: 4},
			{Text: "nothing useful", SessionID: "s4", TurnIndex: 0, Score: 0.5, Tokens: 4},
		}},
		{QuestionID: "q3", Latency: 30 * ms, Results: []Retrieved{
			{Text: "my gym is Crunch", SessionID: "s2", TurnIndex: 1, Score: 0.7, Tokens: 6},
			{Text: "I train at FitHub now", SessionID: "s5", TurnIndex: 2, Score: 0.6, Tokens: 6},
		}},
		{QuestionID: "q4", Latency: 40 * ms, Results: []Retrieved{
			{Text: "x", SessionID: "s1", TurnIndex: 0, Score: 0.75},
		}},
		{QuestionID: "q5", Latency: 50 * ms},
		{QuestionID: "q6", Latency: 60 * ms, Results: []Retrieved{
			{Text: "went kayaking on Saturday", SessionID: "s6", TurnIndex: UnknownTurn, Score: 0.4, Tokens: 3},
		}},
	}
	return qs, as
}

func scoreFixture(t *testing.T, opts ScoreOptions) Report {
	t.Helper()
	qs, as := fixture()
	r, err := Score(qs, as, opts)
	if err != nil {
		t.Fatalf("Score: %v", err)
	}
	return r
}

const (
	ndcgRank2   = 0.6309297535714575 // 1/log2(3): one hit at rank 2 of one item
	ndcgHalfOf2 = 0.6131471927654584 // 1/(1+1/log2(3)): one hit at rank 1 of two items
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestScoreMatchesHandComputedValues(t *testing.T) {
	t.Parallel()
	r := scoreFixture(t, ScoreOptions{Name: "fixture", TokenBudget: 12, AbstentionPercentile: 50})

	perQuestion := []struct {
		id            string
		turn, session Retrieval
		aic           bool
	}{
		// Evidence at rank 2; the later s1 result repeats the session and
		// must not count twice.
		{"q1", Retrieval{0, 1, 1, 1, ndcgRank2, 0.5}, Retrieval{0, 1, 1, 1, ndcgRank2, 0.5}, true},
		// One of two evidence turns at rank 1, repeated at rank 2: recall_all
		// fails and the duplicate adds no gain. Lisbon is missing, so the
		// require-all answer is not in context.
		{"q2", Retrieval{1, 1, 1, 0, ndcgHalfOf2, 1}, Retrieval{1, 1, 1, 0, ndcgHalfOf2, 1}, false},
		{"q3", Retrieval{0, 1, 1, 1, ndcgRank2, 0.5}, Retrieval{0, 1, 1, 1, ndcgRank2, 0.5}, true},
		// The result has no turn index: a session hit, never a turn hit.
		{"q6", Retrieval{}, Retrieval{1, 1, 1, 1, 1, 1}, true},
	}
	for _, want := range perQuestion {
		var got QuestionResult
		for _, q := range r.Questions {
			if q.ID == want.id {
				got = q
			}
		}
		if !retrievalNear(got.Turn, want.turn) {
			t.Errorf("%s turn = %+v, want %+v", want.id, got.Turn, want.turn)
		}
		if !retrievalNear(got.Session, want.session) {
			t.Errorf("%s session = %+v, want %+v", want.id, got.Session, want.session)
		}
		if got.AnswerInContext != want.aic {
			t.Errorf("%s answer in context = %v, want %v", want.id, got.AnswerInContext, want.aic)
		}
	}

	o := r.Overall
	checks := []struct {
		name      string
		got, want float64
	}{
		{"questions", float64(o.Questions), 6},
		{"answerable", float64(o.Answerable), 4},
		{"turn recall_any@1", o.Turn.RecallAny1, 1.0 / 4},
		{"turn recall_any@5", o.Turn.RecallAny5, 3.0 / 4},
		{"turn recall_any@10", o.Turn.RecallAny10, 3.0 / 4},
		{"turn recall_all@10", o.Turn.RecallAll10, 2.0 / 4},
		{"turn ndcg@10", o.Turn.NDCG10, (2*ndcgRank2 + ndcgHalfOf2) / 4},
		{"turn mrr", o.Turn.MRR, (0.5 + 1 + 0.5 + 0) / 4},
		{"session recall_any@1", o.Session.RecallAny1, 2.0 / 4},
		{"session recall_all@10", o.Session.RecallAll10, 3.0 / 4},
		{"session ndcg@10", o.Session.NDCG10, (2*ndcgRank2 + ndcgHalfOf2 + 1) / 4},
		{"session mrr", o.Session.MRR, 3.0 / 4},
		{"answer in context", o.AnswerInContext, 3.0 / 4},
		// Old value Crunch ranks above FitHub.
		{"knowledge updates", float64(o.KnowledgeUpdates), 1},
		{"update accuracy", o.KnowledgeUpdateAccuracy, 0},
		// Answerable top scores 0.4 0.7 0.9 0.95: p50 by nearest rank is
		// 0.7. q4 tops 0.75 and answers falsely; q5 returned nothing.
		{"abstention threshold", r.AbstentionThreshold, 0.7},
		{"abstentions", float64(o.Abstentions), 2},
		{"abstention false rate", o.AbstentionFalseRate, 0.5},
		// 15 + 12 + 12 + 1 ("x" estimated) + 0 + 3 tokens over 6 queries.
		{"mean tokens", o.MeanTokens, 43.0 / 6},
		{"latency p50", o.LatencyP50MS, 30},
		{"latency p95", o.LatencyP95MS, 60},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}

	if len(r.ByType) != 5 {
		t.Fatalf("ByType has %d rows, want 5 (one per type present)", len(r.ByType))
	}
	ms, _ := r.byType(TypeMultiSession)
	if ms.Questions != 1 || ms.Turn.RecallAll10 != 0 || !near(ms.Turn.NDCG10, ndcgHalfOf2) || ms.LatencyP95MS != 20 {
		t.Errorf("multi-session row = %+v", ms)
	}
	ab, _ := r.byType(TypeAbstention)
	if ab.Answerable != 0 || ab.AbstentionFalseRate != 0.5 || ab.Turn != (Retrieval{}) {
		t.Errorf("abstention row = %+v", ab)
	}
}

func retrievalNear(a, b Retrieval) bool {
	return near(a.RecallAny1, b.RecallAny1) && near(a.RecallAny5, b.RecallAny5) && near(a.RecallAny10, b.RecallAny10) &&
		near(a.RecallAll10, b.RecallAll10) && near(a.NDCG10, b.NDCG10) && near(a.MRR, b.MRR)
}

func TestTokenBudgetLimitsTheContext(t *testing.T) {
	t.Parallel()
	// With 5 tokens only q1's first, irrelevant result fits.
	r := scoreFixture(t, ScoreOptions{TokenBudget: 5})
	if r.Questions[0].AnswerInContext {
		t.Error("q1 answer in context with a 5-token budget")
	}
	// Without a budget every result counts.
	r = scoreFixture(t, ScoreOptions{})
	if !r.Questions[0].AnswerInContext || r.AbstentionPercentile != 10 || r.AbstentionThreshold != 0.4 {
		t.Errorf("unbudgeted: aic %v, percentile %v, threshold %v", r.Questions[0].AnswerInContext, r.AbstentionPercentile, r.AbstentionThreshold)
	}
}

func TestRetrievalRanking(t *testing.T) {
	t.Parallel()
	ev := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, string(rune('a'+i)))
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		evidence []string
		hits     []string
		want     Retrieval
	}{
		{"nothing found", ev(2), []string{"x", "", "y"}, Retrieval{}},
		{"all found in order", ev(2), []string{"a", "b"}, Retrieval{1, 1, 1, 1, 1, 1}},
		// The ideal DCG is capped at 10 items: 12 evidence items filling the
		// top 10 is a perfect ranking, yet not all of them were found.
		{"ideal capped at ten", ev(12), ev(12)[:10], Retrieval{1, 1, 1, 0, 1, 1}},
		// A hit beyond rank 10 counts for MRR only.
		{"late hit", ev(1), []string{"", "", "", "", "", "", "", "", "", "", "a"}, Retrieval{0, 0, 0, 0, 0, 1.0 / 11}},
	} {
		if got := retrieval(tc.evidence, tc.hits); !retrievalNear(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestUpdateCorrect(t *testing.T) {
	t.Parallel()
	rs := func(texts ...string) []Retrieved {
		var out []Retrieved
		for _, s := range texts {
			out = append(out, Retrieved{Text: s})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		results []Retrieved
		want    bool
	}{
		{"new first", rs("at fithub", "at crunch"), true},
		{"old first", rs("at crunch", "at fithub"), false},
		{"old absent", rs("x", "FitHub"), true},
		{"new absent", rs("crunch"), false},
		{"both in one fact", rs("moved from Crunch to FitHub"), true},
		{"nothing", nil, false},
	} {
		if got := updateCorrect("FitHub", "Crunch", tc.results); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestScoreRejectsMismatchedAnswers(t *testing.T) {
	t.Parallel()
	qs, as := fixture()
	if _, err := Score(qs, as[:5], ScoreOptions{}); err == nil || !strings.Contains(err.Error(), "q6") {
		t.Errorf("missing answer: err = %v", err)
	}
	if _, err := Score(qs, append(as, Answer{QuestionID: "q1"}), ScoreOptions{}); err == nil {
		t.Error("duplicate answer accepted")
	}
	if _, err := Score(qs, append(as, Answer{QuestionID: "zz"}), ScoreOptions{}); err == nil {
		t.Error("answer to an unknown question accepted")
	}
}

func TestTokenEstimate(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]int{"": 0, "abcd": 1, "abcde": 2, "老张搬到杭州": 6, "张伟 moved": 2 + 2} {
		if got := tokensOf(Retrieved{Text: text}); got != want {
			t.Errorf("tokensOf(%q) = %d, want %d", text, got, want)
		}
	}
}

// An observation built from both evidence turns of a multi-session
// question finds both at its rank, but gains DCG only once there.
func TestScoreCountsObservationSources(t *testing.T) {
	qs := []Question{{ID: "m", BankID: "b", Type: TypeMultiSession, GoldAnswers: []string{"Seoul", "Dublin"},
		Evidence: []Evidence{{"s1", 2}, {"s2", 3}}}}
	as := []Answer{{QuestionID: "m", Results: []Retrieved{
		{Text: "unrelated", SessionID: "s9", TurnIndex: 0, Tokens: 3},
		{Text: "Travels for work to Seoul and Dublin", TurnIndex: UnknownTurn, Tokens: 8,
			Sources: []Evidence{{"s1", 2}, {"s2", 3}, {"s7", UnknownTurn}}},
		{Text: "The client visit in Seoul", SessionID: "s1", TurnIndex: 2, Tokens: 5},
	}}}
	rep, err := Score(qs, as, ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := rep.Questions[0]
	// Both items at rank 2: DCG = 1/log2(3); ideal = 1 + 1/log2(3).
	want := Retrieval{RecallAny1: 0, RecallAny5: 1, RecallAny10: 1, RecallAll10: 1,
		NDCG10: (1 / math.Log2(3)) / (1 + 1/math.Log2(3)), MRR: 0.5}
	if !retrievalNear(got.Turn, want) {
		t.Errorf("turn = %+v, want %+v", got.Turn, want)
	}
	if !retrievalNear(got.Session, want) {
		t.Errorf("session = %+v, want %+v", got.Session, want)
	}
	if !got.AnswerInContext {
		t.Error("both cities are in the observation's text")
	}
}
