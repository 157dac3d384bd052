package eval

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
)

// UnknownTurn is the TurnIndex of a result whose source message is not
// known (for example an observation built from many turns). Such a result
// can still match at session level but never at turn level, because turn 0
// is a real turn.
const UnknownTurn = -1

// Retrieved is one ranked recall result, reduced to what scoring needs.
type Retrieved struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	// SessionID is the result's document_id: generated events use the
	// session id as document id.
	SessionID string `json:"session_id"`
	// TurnIndex is the message index inside the session, or UnknownTurn.
	TurnIndex int `json:"turn_index"`
	// Sources are the turns a result was derived from besides its own, for
	// example the evidence facts of a consolidated observation: the
	// observation carries what those turns said, so finding it finds them.
	Sources []Evidence `json:"sources,omitempty"`
	Score   float64    `json:"score"`
	// Tokens is the result's size in tokens; zero means "estimate it from
	// Text", so callers without a tokenizer still get a cost figure.
	Tokens int `json:"tokens"`
}

// Answer is what a recall returned for one question.
type Answer struct {
	QuestionID string
	Results    []Retrieved
	Latency    time.Duration
}

// ScoreOptions tunes the metrics that need a parameter.
type ScoreOptions struct {
	// Name labels the report, for example the recall arm under test.
	Name string
	// TokenBudget caps how many tokens of results, taken in rank order,
	// count as the answering context. Zero means all results.
	TokenBudget int
	// AbstentionPercentile picks the refusal threshold: an abstention
	// question is falsely answered when its top score exceeds this
	// percentile of the answerable questions' top scores. Default 10.
	AbstentionPercentile float64
}

// Retrieval holds LongMemEval's ranking metrics for one granularity, either
// per question (0 or 1 for the recall fields) or averaged.
type Retrieval struct {
	RecallAny1  float64 `json:"recall_any@1"`
	RecallAny5  float64 `json:"recall_any@5"`
	RecallAny10 float64 `json:"recall_any@10"`
	RecallAll10 float64 `json:"recall_all@10"`
	NDCG10      float64 `json:"ndcg@10"`
	MRR         float64 `json:"mrr"`
}

// QuestionResult is the score of one question; reports keep them so that a
// regression can be traced to the questions that moved.
type QuestionResult struct {
	ID              string    `json:"id"`
	BankID          string    `json:"bank_id"`
	Type            string    `json:"type"`
	Abstention      bool      `json:"abstention"`
	Turn            Retrieval `json:"turn"`
	Session         Retrieval `json:"session"`
	AnswerInContext bool      `json:"answer_in_context"`
	// UpdateCorrect is set for knowledge-update questions only.
	UpdateCorrect bool    `json:"update_correct,omitempty"`
	Results       int     `json:"results"`
	TopScore      float64 `json:"top_score"`
	// FalseAnswer is set for abstention questions that a confident result
	// would have answered.
	FalseAnswer bool    `json:"false_answer,omitempty"`
	Tokens      int     `json:"tokens"`
	LatencyMS   float64 `json:"latency_ms"`
}

// Metrics aggregates the question results of one type, or of all questions.
// Ranking and answer metrics average over answerable questions only, since
// an abstention question has no evidence to find.
type Metrics struct {
	Type                    string    `json:"type"`
	Questions               int       `json:"questions"`
	Answerable              int       `json:"answerable"`
	Turn                    Retrieval `json:"turn"`
	Session                 Retrieval `json:"session"`
	AnswerInContext         float64   `json:"answer_in_context"`
	KnowledgeUpdates        int       `json:"knowledge_updates"`
	KnowledgeUpdateAccuracy float64   `json:"knowledge_update_accuracy"`
	Abstentions             int       `json:"abstentions"`
	AbstentionFalseRate     float64   `json:"abstention_false_rate"`
	MeanTokens              float64   `json:"mean_tokens"`
	LatencyP50MS            float64   `json:"latency_p50_ms"`
	LatencyP95MS            float64   `json:"latency_p95_ms"`
}

// OverallType is the Metrics.Type of the all-questions aggregate.
const OverallType = "overall"

// Report is the JSON-serialisable result of one benchmark run.
type Report struct {
	Name                 string  `json:"name"`
	TokenBudget          int     `json:"token_budget"`
	AbstentionPercentile float64 `json:"abstention_percentile"`
	// AbstentionThreshold is the calibrated top-score threshold. With no
	// answerable question returning anything there is nothing to calibrate
	// on, so it is -math.MaxFloat64 (JSON has no -Inf) and every result to
	// an abstention question counts as an answer.
	AbstentionThreshold float64          `json:"abstention_threshold"`
	Overall             Metrics          `json:"overall"`
	ByType              []Metrics        `json:"by_type"`
	Questions           []QuestionResult `json:"questions"`
}

// Score computes a report from the answers to a dataset's questions. Every
// question needs exactly one answer: a silently missing answer would
// inflate the averages.
func Score(questions []Question, answers []Answer, opts ScoreOptions) (Report, error) {
	if opts.AbstentionPercentile == 0 {
		opts.AbstentionPercentile = 10
	}
	if opts.AbstentionPercentile < 0 || opts.AbstentionPercentile > 100 {
		return Report{}, fmt.Errorf("eval: ScoreOptions.AbstentionPercentile %v is outside 0..100", opts.AbstentionPercentile)
	}
	byID := make(map[string]*Answer, len(answers))
	for i := range answers {
		if _, dup := byID[answers[i].QuestionID]; dup {
			return Report{}, fmt.Errorf("eval: two answers for question %s", answers[i].QuestionID)
		}
		byID[answers[i].QuestionID] = &answers[i]
	}
	rep := Report{Name: opts.Name, TokenBudget: opts.TokenBudget, AbstentionPercentile: opts.AbstentionPercentile}
	var answerableTop []float64
	for _, q := range questions {
		a, ok := byID[q.ID]
		if !ok {
			return Report{}, fmt.Errorf("eval: no answer for question %s", q.ID)
		}
		res := scoreQuestion(q, a, opts.TokenBudget)
		if !q.Abstention && res.Results > 0 {
			answerableTop = append(answerableTop, res.TopScore)
		}
		rep.Questions = append(rep.Questions, res)
	}
	if len(byID) != len(questions) {
		return Report{}, fmt.Errorf("eval: %d answers for %d questions", len(byID), len(questions))
	}
	rep.AbstentionThreshold = -math.MaxFloat64
	if len(answerableTop) > 0 {
		rep.AbstentionThreshold = percentile(answerableTop, opts.AbstentionPercentile)
	}
	for i := range rep.Questions {
		r := &rep.Questions[i]
		r.FalseAnswer = r.Abstention && r.Results > 0 && r.TopScore > rep.AbstentionThreshold
	}
	rep.Overall = aggregate(OverallType, rep.Questions)
	for _, t := range Types {
		var group []QuestionResult
		for _, r := range rep.Questions {
			if r.Type == t {
				group = append(group, r)
			}
		}
		if len(group) > 0 {
			rep.ByType = append(rep.ByType, aggregate(t, group))
		}
	}
	return rep, nil
}

func scoreQuestion(q Question, a *Answer, budget int) QuestionResult {
	res := QuestionResult{
		ID: q.ID, BankID: q.BankID, Type: q.Type, Abstention: q.Abstention,
		Results:   len(a.Results),
		LatencyMS: float64(a.Latency) / float64(time.Millisecond),
	}
	for _, r := range a.Results {
		res.Tokens += tokensOf(r)
	}
	if len(a.Results) > 0 {
		res.TopScore = a.Results[0].Score
	}
	if q.Abstention {
		return res
	}
	turnEv := make([]string, 0, len(q.Evidence))
	sessEv := make([]string, 0, len(q.Evidence))
	for _, e := range q.Evidence {
		turnEv = appendUnique(turnEv, turnKey(e.SessionID, e.TurnIndex))
		sessEv = appendUnique(sessEv, e.SessionID)
	}
	turnHits := make([][]string, len(a.Results))
	sessHits := make([][]string, len(a.Results))
	for i, r := range a.Results {
		if r.TurnIndex >= 0 {
			turnHits[i] = append(turnHits[i], turnKey(r.SessionID, r.TurnIndex))
		}
		sessHits[i] = append(sessHits[i], r.SessionID)
		for _, s := range r.Sources {
			if s.TurnIndex >= 0 {
				turnHits[i] = append(turnHits[i], turnKey(s.SessionID, s.TurnIndex))
			}
			sessHits[i] = append(sessHits[i], s.SessionID)
		}
	}
	res.Turn = retrievalMulti(turnEv, turnHits)
	res.Session = retrievalMulti(sessEv, sessHits)
	res.AnswerInContext = answerInContext(q, a.Results, budget)
	if q.Type == TypeKnowledgeUpdate && len(q.GoldAnswers) > 0 {
		res.UpdateCorrect = updateCorrect(q.GoldAnswers[0], q.OldValue, a.Results)
	}
	return res
}

func turnKey(session string, turn int) string { return fmt.Sprintf("%s#%d", session, turn) }

func appendUnique(xs []string, x string) []string {
	if slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

// retrieval scores ranked hits against evidence items, one item per rank.
func retrieval(evidence, hits []string) Retrieval {
	multi := make([][]string, len(hits))
	for i, h := range hits {
		if h != "" {
			multi[i] = []string{h}
		}
	}
	return retrievalMulti(evidence, multi)
}

// retrievalMulti scores ranked hits against evidence items. A rank may
// stand for several items: an observation carries every turn it was built
// from. A hit counts only the first time it finds an evidence item:
// memstream may return several facts from one turn, and counting them all
// would push NDCG above 1. For the same reason a rank gains at most 1 in
// DCG however many new items it finds, while recall_all counts them all.
func retrievalMulti(evidence []string, hits [][]string) Retrieval {
	var out Retrieval
	if len(evidence) == 0 {
		return out
	}
	found := map[string]bool{}
	var dcg float64
	for i, keys := range hits {
		fresh := false
		for _, h := range keys {
			if h == "" || found[h] || !slices.Contains(evidence, h) {
				continue
			}
			found[h] = true
			fresh = true
		}
		if !fresh {
			continue
		}
		if out.MRR == 0 {
			out.MRR = 1 / float64(i+1)
		}
		if i < 10 {
			dcg += 1 / math.Log2(float64(i+2))
		}
		if i < 1 {
			out.RecallAny1 = 1
		}
		if i < 5 {
			out.RecallAny5 = 1
		}
		if i < 10 {
			out.RecallAny10 = 1
			if len(found) == len(evidence) {
				out.RecallAll10 = 1
			}
		}
	}
	var ideal float64
	for i := range min(len(evidence), 10) {
		ideal += 1 / math.Log2(float64(i+2))
	}
	out.NDCG10 = dcg / ideal
	return out
}

// contextTexts is the lower-cased prefix of results that fits the budget,
// the part an answering model would actually see.
func contextTexts(results []Retrieved, budget int) string {
	var b strings.Builder
	used := 0
	for _, r := range results {
		t := tokensOf(r)
		if budget > 0 && used+t > budget {
			break
		}
		used += t
		b.WriteString(strings.ToLower(r.Text))
		b.WriteByte('\n')
	}
	return b.String()
}

func answerInContext(q Question, results []Retrieved, budget int) bool {
	ctx := contextTexts(results, budget)
	hits := 0
	for _, g := range q.GoldAnswers {
		if g != "" && strings.Contains(ctx, strings.ToLower(g)) {
			hits++
		}
	}
	if q.RequireAll {
		return hits == len(q.GoldAnswers) && hits > 0
	}
	return hits > 0
}

// updateCorrect reports whether recall puts the current value first. A
// result holding both values (a fact like "moved from X to Y") counts as
// correct, since it carries the update itself.
func updateCorrect(cur, old string, results []Retrieved) bool {
	first := func(v string) int {
		if v == "" {
			return -1
		}
		v = strings.ToLower(v)
		for i, r := range results {
			if strings.Contains(strings.ToLower(r.Text), v) {
				return i
			}
		}
		return -1
	}
	n, o := first(cur), first(old)
	return n >= 0 && (o < 0 || n <= o)
}

// tokensOf estimates tokens when the recall API did not report them: about
// four characters per token for Latin text, one per Han character.
func tokensOf(r Retrieved) int {
	if r.Tokens > 0 {
		return r.Tokens
	}
	han, other := 0, 0
	for _, c := range r.Text {
		if unicode.Is(unicode.Han, c) {
			han++
		} else {
			other++
		}
	}
	return han + (other+3)/4
}

// percentile is the nearest-rank percentile, chosen because it is easy to
// check by hand and always returns an observed value.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank-1, 0), len(s)-1)]
}

func aggregate(typ string, rs []QuestionResult) Metrics {
	m := Metrics{Type: typ, Questions: len(rs)}
	var lat []float64
	var tokens float64
	var ku, kuOK, abst, abstFalse, aic float64
	for _, r := range rs {
		lat = append(lat, r.LatencyMS)
		tokens += float64(r.Tokens)
		if r.Abstention {
			abst++
			if r.FalseAnswer {
				abstFalse++
			}
			continue
		}
		m.Answerable++
		addRetrieval(&m.Turn, r.Turn)
		addRetrieval(&m.Session, r.Session)
		if r.AnswerInContext {
			aic++
		}
		if r.Type == TypeKnowledgeUpdate {
			ku++
			if r.UpdateCorrect {
				kuOK++
			}
		}
	}
	if m.Answerable > 0 {
		n := float64(m.Answerable)
		m.Turn = scaleRetrieval(m.Turn, n)
		m.Session = scaleRetrieval(m.Session, n)
		m.AnswerInContext = aic / n
	}
	m.KnowledgeUpdates = int(ku)
	if ku > 0 {
		m.KnowledgeUpdateAccuracy = kuOK / ku
	}
	m.Abstentions = int(abst)
	if abst > 0 {
		m.AbstentionFalseRate = abstFalse / abst
	}
	if len(rs) > 0 {
		m.MeanTokens = tokens / float64(len(rs))
	}
	m.LatencyP50MS = percentile(lat, 50)
	m.LatencyP95MS = percentile(lat, 95)
	return m
}

func addRetrieval(sum *Retrieval, r Retrieval) {
	sum.RecallAny1 += r.RecallAny1
	sum.RecallAny5 += r.RecallAny5
	sum.RecallAny10 += r.RecallAny10
	sum.RecallAll10 += r.RecallAll10
	sum.NDCG10 += r.NDCG10
	sum.MRR += r.MRR
}

func scaleRetrieval(r Retrieval, n float64) Retrieval {
	return Retrieval{r.RecallAny1 / n, r.RecallAny5 / n, r.RecallAny10 / n, r.RecallAll10 / n, r.NDCG10 / n, r.MRR / n}
}
