package recall

import (
	"context"
	"testing"

	"github.com/memstream/memstream/simscale"
)

// The query vector leans towards a stored question; a scale whose mean
// question is that lean ranks the answer first once the mean is taken
// off, and heuristics_off query_centre restores the raw order.
func TestQueryCentreRanksStatementsOverQuestions(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []fact{
		{key: "answer", bank: "b1", text: "Rosa moved to a flat near the harbour in Genoa"},
		{key: "question", bank: "b1", text: "Any tips for cleaning suede shoes?"},
	})
	vs, err := fx.emb.EmbedDocuments(context.Background(), []string{"Rosa moved to a flat near the harbour in Genoa", "Any tips for cleaning suede shoes?"})
	if err != nil {
		t.Fatal(err)
	}
	a, q := vs[0], vs[1]
	query := make(fixedQuery, len(q))
	mean := make([]float32, len(q))
	for i := range q {
		query[i] = a[i] + 2*q[i]
		mean[i] = 2 * q[i]
	}
	scale := simscale.Identity
	scale.QueryMean = mean
	r := fx.recaller(t, query, Config{Scale: scale})
	first := func(off []string) string { return firstOf(t, fx, r, off) }
	if got := first(nil); got != "answer" {
		t.Errorf("with the mean question taken off, %s ranks first; want the answer", got)
	}
	if got := first([]string{HeuristicQueryCentre}); got != "question" {
		t.Errorf("with heuristics_off query_centre, %s ranks first; want the question (the raw order)", got)
	}
}
