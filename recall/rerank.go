package recall

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// Reranker scores documents against a query with a cross-encoder; one
// score per document, in input order (rerank.HTTP implements it).
type Reranker interface {
	Rerank(ctx context.Context, query string, docs []string) ([]float64, error)
}

// rerank rescores the best RerankTop results: each score is min-max
// normalised within the batch and blended with the result's own final
// score (normalised the same way), so a cross-encoder can reorder the head
// without pushing it below results it never saw. It returns a note for the
// trace; on error the order is unchanged.
func (r *Recaller) rerank(ctx context.Context, query string, hs []hydrated) string {
	n := min(len(hs), r.cfg.RerankTop)
	if n < 2 {
		return ""
	}
	docs := make([]string, n)
	for i := range docs {
		docs[i] = hs[i].Text
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.ArmTimeout)
	defer cancel()
	scores, err := r.rr.Rerank(ctx, query, docs)
	if err != nil || len(scores) != n {
		if err == nil {
			err = fmt.Errorf("%d scores for %d documents", len(scores), n)
		}
		r.log.Warn("rerank failed; keeping the fused order", "error", err)
		return "failed: " + err.Error()
	}
	head := hs[:n]
	lo, hi := minMax(scores)
	flo, fhi := head[n-1].Scores.Final, head[0].Scores.Final
	top := head[0].Scores.Final
	w := r.cfg.RerankWeight
	for i := range head {
		s := scores[i]
		head[i].Scores.Rerank = &s
		blend := (1-w)*unit(head[i].Scores.Final, flo, fhi) + w*unit(s, lo, hi)
		// Keep finals on the fused scale so results past the head still
		// compare: the head spans [flo, top].
		head[i].Scores.Final = flo + blend*(top-flo)
	}
	slices.SortStableFunc(head, func(a, b hydrated) int {
		if c := cmp.Compare(b.Scores.Final, a.Scores.Final); c != 0 {
			return c
		}
		return cmpUUID(a.ID, b.ID)
	})
	return fmt.Sprintf("reranked top %d", n)
}

func minMax(xs []float64) (lo, hi float64) {
	lo, hi = xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

func unit(x, lo, hi float64) float64 {
	if hi <= lo {
		return 1
	}
	return (x - lo) / (hi - lo)
}
