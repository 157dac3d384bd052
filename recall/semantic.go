package recall

import (
	"cmp"
	"context"
	"slices"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

// filter is what every arm filters by.
func (q *query) filter() store.RecallFilter {
	return store.RecallFilter{BankID: q.BankID, Types: q.Types, Tags: q.Tags, TagsMode: q.tagsMode}
}

// candidates converts an arm's rows.
func candidates(rows []store.Scored) []Candidate {
	out := make([]Candidate, len(rows))
	for i, r := range rows {
		out[i] = Candidate(r)
	}
	return out
}

// semantic returns the nearest facts to the query embedding.
func (r *Recaller) semantic(ctx context.Context, q *query) ([]Candidate, string, error) {
	if q.semDone != nil {
		defer close(q.semDone)
	}
	vec, err := q.vector(ctx)
	if err != nil {
		return nil, "", err
	}
	out, err := r.semanticSearch(ctx, q, vec, q.pool)
	if err != nil {
		return nil, "", err
	}
	q.semTop = out
	return out, "", nil
}

// semanticSearch returns the limit nearest facts under the request's
// filters, best first.
func (r *Recaller) semanticSearch(ctx context.Context, q *query, vec []float32, limit int) ([]Candidate, error) {
	rows, err := r.st.RecallSemantic(ctx, q.filter(), vec, q.ef, limit)
	if err != nil {
		return nil, err
	}
	out := candidates(rows)
	sortCandidates(out)
	return out, nil
}

// sortCandidates orders best first, ties by id so that runs repeat.
func sortCandidates(cs []Candidate) {
	slices.SortStableFunc(cs, func(a, b Candidate) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmpUUID(a.ID, b.ID)
	})
}

func cmpUUID(a, b uuid.UUID) int {
	for i := range a {
		if c := cmp.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}
