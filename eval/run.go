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
	if opts.Concurrency <= 0 {
		opts.Concurrency = 1
	}
	answers := make([]Answer, len(d.Questions))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Concurrency)
	for i := range d.Questions {
		q := &d.Questions[i]
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
		return Report{}, err
	}
	return Score(d.Questions, answers, ScoreOptions{
		Name:                 opts.Name,
		TokenBudget:          opts.TokenBudget,
		AbstentionPercentile: opts.AbstentionPercentile,
	})
}
