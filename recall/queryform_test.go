package recall

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/google/uuid"

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
	first := func(off []string) string { return firstOf(t, fx, r, off) }
	if got := first(nil); got != "answer" {
		t.Errorf("with the query form taken out, %s ranks first; want the answer", got)
	}
	if got := first([]string{HeuristicQueryForm}); got != "question" {
		t.Errorf("with heuristics_off query_form, %s ranks first; want the question (the raw order)", got)
	}
}

// firstOf asks r the semantic arm alone and names the fact that ranks
// first: "answer" or "question".
func firstOf(t *testing.T, fx *fixture, r *Recaller, off []string) string {
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

// frameQuery embeds a framed question as one vector and anything else as
// another, so a test can tell which text each step used.
type frameQuery struct{ framed, plain []float32 }

func (f frameQuery) EmbedQueries(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := f.plain
		if strings.HasPrefix(t, changeFrame) {
			v = f.framed
		}
		out[i] = append([]float32(nil), v...)
	}
	return out, nil
}

// A question about the present searches with the framed vector (the
// statement of change ranks first), but its similarity scores are the
// question's own: the same with the heuristic on and off.
func TestChangeSearchesFramedAndScoresPlain(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []fact{
		{key: "change", bank: "b1", text: "Rosa: I moved to Leeds in March"},
		{key: "other", bank: "b1", text: "Rosa: the boiler broke again on Monday"},
	})
	vs, err := fx.emb.EmbedDocuments(context.Background(), []string{"Rosa: I moved to Leeds in March", "Rosa: the boiler broke again on Monday"})
	if err != nil {
		t.Fatal(err)
	}
	r := fx.recaller(t, frameQuery{framed: vs[0], plain: vs[1]}, Config{Scale: simscale.Identity})
	ask := func(off []string) ([]Result, uuid.UUID) {
		t.Helper()
		resp, err := r.Recall(context.Background(), Request{BankID: "b1", Query: "Where does Rosa live now?", QueryTime: queryTime,
			Arms: []string{ArmSemantic}, Off: off, Trace: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Results) != 2 || len(resp.Trace.Arms) != 1 || len(resp.Trace.Arms[0].Candidates) == 0 {
			t.Fatalf("got %d results, trace %+v", len(resp.Results), resp.Trace)
		}
		return resp.Results, resp.Trace.Arms[0].Candidates[0].ID
	}
	on, onFirst := ask(nil)
	off, offFirst := ask([]string{HeuristicChange})
	if onFirst != fx.id(t, "change") {
		t.Error("with the frame, the semantic arm's first candidate is not the statement of change")
	}
	if offFirst != fx.id(t, "other") {
		t.Error("without the frame, the semantic arm's first candidate is not the plain nearest")
	}
	sem := map[uuid.UUID]float64{}
	for _, res := range off {
		sem[res.ID] = res.Scores.Semantic
	}
	for _, res := range on {
		if math.Abs(res.Scores.Semantic-sem[res.ID]) > 1e-6 {
			t.Errorf("%q: similarity %g with the frame, %g without; want the question's own in both", res.Text, res.Scores.Semantic, sem[res.ID])
		}
	}
}
