package recall

import (
	"cmp"
	"context"
	"slices"
	"time"

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

// exactSearchMaxFacts is the largest bank whose nearest facts are found by
// reading all its rows rather than through the HNSW index: up to about
// this size the exact scan costs less (docs/BENCHMARKS.md, compare), and
// it misses nothing.
const exactSearchMaxFacts = 2000

// exactSearch reports a bank small enough to be read exactly
// (Recaller.exactMax). A bank whose size cannot be read is searched
// through the index.
func (r *Recaller) exactSearch(ctx context.Context, bank string) bool {
	n, err := r.bankSize(ctx, bank, time.Now())
	return err == nil && n <= r.exactMax
}

// semanticSearch returns the limit nearest facts under the request's
// filters, best first.
func (r *Recaller) semanticSearch(ctx context.Context, q *query, vec []float32, limit int) ([]Candidate, error) {
	var rows []store.Scored
	var err error
	if r.exactSearch(ctx, q.BankID) {
		rows, err = r.st.RecallSemanticExact(ctx, q.filter(), vec, limit)
	} else {
		rows, err = r.st.RecallSemantic(ctx, q.filter(), vec, q.ef, limit)
	}
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
