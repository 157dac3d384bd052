package recall

import (
	"context"
	"math"
	"testing"

	"github.com/memstream/memstream/simscale"
)

// fixedQuery embeds every query as one given vector.
type fixedQuery []float32

func (v fixedQuery) EmbedQueries(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = append([]float32(nil), v...)
	}
	return out, nil
}

// The query vector leans towards a stored question more than towards the
// stored answer; a scale whose query form is that lean ranks the answer
// first, and heuristics_off query_form restores the raw order.
func TestQueryFormRanksStatementsOverQuestions(t *testing.T) {
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
	// form: the question's direction without its overlap with the answer.
	var aq float64
	for i := range a {
		aq += float64(a[i]) * float64(q[i])
	}
	form := make([]float32, len(q))
	var n float64
	for i := range q {
		form[i] = q[i] - float32(aq)*a[i]
		n += float64(form[i]) * float64(form[i])
	}
	query := make(fixedQuery, len(q))
	for i := range form {
		form[i] /= float32(math.Sqrt(n))
		query[i] = a[i] + 2*q[i]
	}
	scale := simscale.Identity
	scale.QueryForm = form
	r := fx.recaller(t, query, Config{Scale: scale})
	first := func(off []string) string {
		t.Helper()
		resp, err := r.Recall(context.Background(), Request{BankID: "b1", Query: "where does Rosa live", QueryTime: queryTime,
			Arms: []string{ArmSemantic}, Off: off})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Results) == 0 {
			t.Fatal("no results")
		}
		if resp.Results[0].ID == fx.id(t, "answer") {
			return "answer"
		}
		return "question"
	}
	if got := first(nil); got != "answer" {
		t.Errorf("with the query form taken out, %s ranks first; want the answer", got)
	}
	if got := first([]string{HeuristicQueryForm}); got != "question" {
		t.Errorf("with heuristics_off query_form, %s ranks first; want the question (the raw order)", got)
	}
}
