package eval

import (
	"context"
	"sync"
	"time"
)

// Recorder wraps a Recaller and keeps what it returned, so that a report's
// failed questions can be shown next to their results. Aggregates say that
// recall got worse; the misses say why.
type Recorder struct {
	inner Recaller
	mu    sync.Mutex
	got   map[recordKey][]Retrieved
}

type recordKey struct{ bank, query string }

// NewRecorder wraps r.
func NewRecorder(r Recaller) *Recorder {
	return &Recorder{inner: r, got: map[recordKey][]Retrieved{}}
}

// Recall asks the wrapped recaller and records its results.
func (r *Recorder) Recall(ctx context.Context, bankID, query string, queryTime time.Time) ([]Retrieved, time.Duration, error) {
	res, took, err := r.inner.Recall(ctx, bankID, query, queryTime)
	if err == nil {
		r.mu.Lock()
		r.got[recordKey{bankID, query}] = res
		r.mu.Unlock()
	}
	return res, took, err
}

// Miss is an answerable question whose evidence turn was not among the
// top ten results, or a knowledge update whose old value ranked above the
// new one, with what recall returned instead.
type Miss struct {
	// Kind is MissTurnLevel or MissFreshFirst.
	Kind     string `json:"kind"`
	ID       string `json:"id"`
	BankID   string `json:"bank_id"`
	Type     string `json:"type"`
	Question string `json:"question"`
	// QueryTimestamp matters for temporal questions.
	QueryTimestamp time.Time `json:"query_timestamp"`
	GoldAnswers    []string  `json:"gold_answers"`
	// Evidence are the turns recall should have found, with their text.
	Evidence []MissTurn `json:"evidence"`
	// SessionHit says whether some result at least came from an evidence
	// session: then the right conversation was found but not the turn.
	SessionHit bool `json:"session_hit"`
	// Top are the first results recall returned.
	Top []Retrieved `json:"top"`
}

// The kinds of Miss.
const (
	// MissTurnLevel: no evidence turn in the top ten.
	MissTurnLevel = "turn"
	// MissFreshFirst: the evidence was found, but the knowledge update's
	// old value ranks above the new one. Its Top holds at least ten
	// results, so both can be seen.
	MissFreshFirst = "fresh_first"
)

// MissTurn is one evidence turn of a Miss.
type MissTurn struct {
	Evidence
	Text string `json:"text"`
}

// Misses lists the answerable questions of rep that missed at turn level
// (recall_any@10 = 0), and the knowledge updates that found their evidence
// but not fresh first, in question order, each with up to top results (at
// least ten for a fresh-first miss).
func Misses(d *Dataset, rep Report, rec *Recorder, top int) []Miss {
	failed := map[string]QuestionResult{}
	kind := map[string]string{}
	for _, q := range rep.Questions {
		switch {
		case q.Abstention:
		case q.Turn.RecallAny10 == 0:
			failed[q.ID], kind[q.ID] = q, MissTurnLevel
		case q.Type == TypeKnowledgeUpdate && !q.UpdateCorrect:
			failed[q.ID], kind[q.ID] = q, MissFreshFirst
		}
	}
	var out []Miss
	for _, q := range d.Questions {
		qr, ok := failed[q.ID]
		if !ok {
			continue
		}
		m := Miss{Kind: kind[q.ID], ID: q.ID, BankID: q.BankID, Type: q.Type, Question: q.Question, QueryTimestamp: q.QueryTimestamp,
			GoldAnswers: q.GoldAnswers, SessionHit: qr.Session.RecallAny10 > 0}
		for _, ev := range q.Evidence {
			msg, _ := d.Turn(ev)
			m.Evidence = append(m.Evidence, MissTurn{Evidence: ev, Text: msg.Content})
		}
		rec.mu.Lock()
		res := rec.got[recordKey{q.BankID, q.Question}]
		rec.mu.Unlock()
		n := top
		if m.Kind == MissFreshFirst {
			n = max(n, 10)
		}
		m.Top = res[:min(n, len(res))]
		out = append(out, m)
	}
	return out
}
