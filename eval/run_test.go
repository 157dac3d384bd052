package eval

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"go.uber.org/goleak"
)

// Run starts goroutines; none may outlive it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type turnRef struct {
	session string
	index   int
	text    string
}

func turnsByBank(d *Dataset) map[string][]turnRef {
	out := map[string][]turnRef{}
	for _, e := range d.Events {
		for i, m := range e.Messages {
			out[e.BankID] = append(out[e.BankID], turnRef{e.DocumentID, i, m.Content})
		}
	}
	return out
}

// keywordRecaller is a stand-in for memstream: it ranks a bank's turns by
// how many query words they share, which is enough to drive Run end to end
// and to produce imperfect, realistic-looking scores.
type keywordRecaller struct{ turns map[string][]turnRef }

func words(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Han, r)
	}) {
		if hasHan(f) {
			for _, r := range f { // one token per character is crude but enough
				out = append(out, string(r))
			}
		} else if len(f) > 3 {
			out = append(out, f)
		}
	}
	return out
}

func hasHan(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.Is(unicode.Han, r) }) >= 0
}

func (k keywordRecaller) Recall(_ context.Context, bank, query string, _ time.Time) ([]Retrieved, time.Duration, error) {
	q := words(query)
	var out []Retrieved
	for _, t := range k.turns[bank] {
		score := 0.0
		for _, w := range words(t.text) {
			if slices.Contains(q, w) {
				score++
			}
		}
		if score > 0 {
			out = append(out, Retrieved{ID: turnKey(t.session, t.index), Text: t.text, SessionID: t.session, TurnIndex: t.index, Score: score})
		}
	}
	slices.SortStableFunc(out, func(a, b Retrieved) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	out = out[:min(len(out), 10)]
	return out, time.Duration(len(out)+1) * time.Millisecond, nil
}

// oracleRecaller returns exactly the labelled evidence first, so every
// ranking metric must come out perfect: it checks that the generator's
// labels, the runner and the scorer agree with each other.
type oracleRecaller struct {
	d     *Dataset
	turns map[string][]turnRef
	byKey map[string]Question
}

func newOracle(t *testing.T, d *Dataset) oracleRecaller {
	o := oracleRecaller{d: d, turns: turnsByBank(d), byKey: map[string]Question{}}
	for _, q := range d.Questions {
		key := q.BankID + "\x00" + q.Question
		if _, dup := o.byKey[key]; dup {
			t.Fatalf("bank %s asks %q twice", q.BankID, q.Question)
		}
		o.byKey[key] = q
	}
	return o
}

func (o oracleRecaller) Recall(_ context.Context, bank, query string, _ time.Time) ([]Retrieved, time.Duration, error) {
	q := o.byKey[bank+"\x00"+query]
	if q.Abstention {
		return nil, time.Millisecond, nil
	}
	var out []Retrieved
	for _, ev := range q.Evidence {
		m, _ := o.d.Turn(ev)
		out = append(out, Retrieved{Text: m.Content, SessionID: ev.SessionID, TurnIndex: ev.TurnIndex})
	}
	for _, t := range o.turns[bank][:2] {
		out = append(out, Retrieved{Text: t.text, SessionID: t.session, TurnIndex: t.index})
	}
	for i := range out {
		out[i].Score = float64(len(out) - i)
	}
	return out, 2 * time.Millisecond, nil
}

func TestRunWithOracleIsPerfect(t *testing.T) {
	t.Parallel()
	d := generate(t, Small())
	r, err := Run(context.Background(), d, newOracle(t, d), RunOptions{Name: "oracle", Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	perfect := Retrieval{1, 1, 1, 1, 1, 1}
	for _, m := range append(r.ByType, r.Overall) {
		if m.Answerable == 0 {
			continue
		}
		if !retrievalNear(m.Turn, perfect) || !retrievalNear(m.Session, perfect) {
			t.Errorf("%s: oracle scored turn %+v session %+v", m.Type, m.Turn, m.Session)
		}
		if m.AnswerInContext != 1 {
			t.Errorf("%s: oracle answer-in-context %v", m.Type, m.AnswerInContext)
		}
	}
	o := r.Overall
	if o.Questions != len(d.Questions) || o.KnowledgeUpdateAccuracy != 1 || o.Abstentions == 0 || o.AbstentionFalseRate != 0 || o.LatencyP95MS != 2 {
		t.Errorf("overall = %+v", o)
	}
	if len(r.ByType) != len(Types) {
		t.Errorf("%d type rows, want %d", len(r.ByType), len(Types))
	}
}

func TestRunWithKeywordRecaller(t *testing.T) {
	t.Parallel()
	d := generate(t, Small())
	r, err := Run(context.Background(), d, keywordRecaller{turnsByBank(d)}, RunOptions{Name: "keyword", TokenBudget: 200})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + r.Markdown())
	o := r.Overall
	if o.Questions != len(d.Questions) || o.Answerable+o.Abstentions != o.Questions {
		t.Fatalf("counts: %+v", o)
	}
	// The questions paraphrase their evidence and hard negatives share its
	// words, so plain keyword overlap must be far from perfect but not
	// useless.
	if o.Turn.RecallAny10 < 0.2 || o.Turn.RecallAny10 > 0.95 {
		t.Errorf("keyword turn recall_any@10 = %.3f, want between 0.2 and 0.95", o.Turn.RecallAny10)
	}
	for _, m := range append(r.ByType, o) {
		if m.Session.RecallAny10 < m.Turn.RecallAny10 || m.Turn.RecallAll10 > m.Turn.RecallAny10 || m.Turn.RecallAny1 > m.Turn.RecallAny5 {
			t.Errorf("%s: metrics are inconsistent: %+v", m.Type, m)
		}
	}
}

type failingRecaller struct{ after int }

func (f *failingRecaller) Recall(ctx context.Context, bank, _ string, _ time.Time) ([]Retrieved, time.Duration, error) {
	if f.after == 0 {
		return nil, 0, errors.New("connection refused")
	}
	f.after--
	return nil, 0, ctx.Err()
}

func TestRunStopsOnRecallError(t *testing.T) {
	t.Parallel()
	d := generate(t, Small())
	_, err := Run(context.Background(), d, &failingRecaller{after: 3}, RunOptions{})
	if err == nil || !strings.Contains(err.Error(), d.Questions[3].ID) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("err = %v, want the fourth question's id and the cause", err)
	}
	if _, err := Run(context.Background(), nil, &failingRecaller{}, RunOptions{}); err == nil {
		t.Error("Run without a dataset succeeded")
	}
}
