package eval

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
)

// Recaller asks memstream one question. It is declared here, where it is
// used, so that the runner can be tested with an in-memory fake while the
// real implementation calls POST …/memories/recall and maps each result's
// document_id and message index into Retrieved. The returned duration is the
// latency the caller measured, so that client-side overhead is its choice.
type Recaller interface {
	Recall(ctx context.Context, bankID, query string, queryTime time.Time) ([]Retrieved, time.Duration, error)
}

// RunOptions configures Run.
type RunOptions struct {
	// Name labels the report, typically the recall arm.
	Name string
	// TokenBudget and AbstentionPercentile are passed to Score.
	TokenBudget          int
	AbstentionPercentile float64
	// Concurrency is the number of questions in flight. Default 1, so
	// latency figures are not inflated by self-inflicted queueing.
	Concurrency int
}

// Run asks every question of the dataset, in order of the question file,
// and scores the answers. The first recall error stops the run: a report
// over a partial set of questions would not be comparable with others.
func Run(ctx context.Context, d *Dataset, r Recaller, opts RunOptions) (Report, error) {
	if d == nil || r == nil {
		return Report{}, fmt.Errorf("eval: Run needs a dataset and a recaller")
	}
	answers, err := Ask(ctx, d.Questions, r, opts.Concurrency)
	if err != nil {
		return Report{}, err
	}
	return Score(d.Questions, answers, opts.scoreOptions())
}

// RunParts asks every question once and scores each part of the dataset
// on its own, so the held-out and the tuning part are never averaged
// together. Parts without questions are left out.
func RunParts(ctx context.Context, d *Dataset, r Recaller, opts RunOptions) (map[string]Report, error) {
	if d == nil || r == nil {
		return nil, fmt.Errorf("eval: RunParts needs a dataset and a recaller")
	}
	answers, err := Ask(ctx, d.Questions, r, opts.Concurrency)
	if err != nil {
		return nil, err
	}
	return ScoreParts(d.Questions, answers, opts.scoreOptions())
}

// ScoreParts scores the questions of each part separately.
func ScoreParts(questions []Question, answers []Answer, opts ScoreOptions) (map[string]Report, error) {
	byID := make(map[string]Answer, len(answers))
	for _, a := range answers {
		byID[a.QuestionID] = a
	}
	out := map[string]Report{}
	for _, part := range AllParts {
		var qs []Question
		var as []Answer
		for _, q := range questions {
			if q.Part == part {
				qs = append(qs, q)
				as = append(as, byID[q.ID])
			}
		}
		if len(qs) == 0 {
			continue
		}
		rep, err := Score(qs, as, opts)
		if err != nil {
			return nil, fmt.Errorf("score part %s: %w", part, err)
		}
		out[part] = rep
	}
	return out, nil
}

func (o RunOptions) scoreOptions() ScoreOptions {
	return ScoreOptions{Name: o.Name, TokenBudget: o.TokenBudget, AbstentionPercentile: o.AbstentionPercentile}
}

// Ask asks every question with up to concurrency in flight and returns
// the answers in question order. The first recall error stops it.
func Ask(ctx context.Context, questions []Question, r Recaller, concurrency int) ([]Answer, error) {
	if concurrency <= 0 {
		concurrency = 1
	}
	answers := make([]Answer, len(questions))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	for i := range questions {
		q := &questions[i]
		g.Go(func() error {
			results, took, err := r.Recall(gctx, q.BankID, q.Question, q.QueryTimestamp)
			if err != nil {
				return fmt.Errorf("recall question %s in bank %s: %w", q.ID, q.BankID, err)
			}
			answers[i] = Answer{QuestionID: q.ID, Results: results, Latency: took}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return answers, nil
}
