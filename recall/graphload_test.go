package recall

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

// loadCounter counts the hydration round trips of a recall.
type loadCounter struct {
	*store.Store
	loads atomic.Int32
}

func (c *loadCounter) RecallFacts(ctx context.Context, bank string, ids []uuid.UUID, vec []float32, withEmbedding bool) ([]store.RecallFact, error) {
	c.loads.Add(1)
	return c.Store.RecallFacts(ctx, bank, ids, vec, withEmbedding)
}

// TestGraphArmLoadsWhatItFinds checks that the facts the graph walk finds
// come back loaded, so a recall whose last arm is the graph needs no load
// after fusion, and that they are loaded as hydration would load them:
// the same text and entities, and the same similarity to the query.
func TestGraphArmLoadsWhatItFinds(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []fact{
		{key: "moreno", bank: "b1", text: "He repairs vintage motorcycles", entity: &entity{name: "Alex Moreno", aliases: []string{"Alex"}}},
		{key: "kim", bank: "b1", text: "She teaches violin on weekends", entity: &entity{name: "Alex Kim", aliases: []string{"Alex"}}},
		{key: "other", bank: "b1", text: "The bakery opens at seven"},
	})
	st := &loadCounter{Store: fx.st}
	r := fx.recallerWith(t, Deps{Store: st, Embedder: fx.emb}, Config{})
	req := Request{BankID: "b1", Query: "What does Alex Moreno repair?", QueryTime: queryTime, Arms: []string{ArmGraph}}
	resp, err := r.Recall(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) == 0 {
		t.Fatal("no results")
	}
	if n := st.loads.Load(); n != 0 {
		t.Errorf("graph-only recall made %d hydration round trips, want 0 (the walk loads its facts)", n)
	}
	vs, err := fx.emb.EmbedQueries(context.Background(), []string{req.Query})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]uuid.UUID, len(resp.Results))
	for i, x := range resp.Results {
		ids[i] = x.ID
	}
	want, err := fx.st.RecallFacts(context.Background(), "b1", ids, r.cfg.Scale.Declarative(vs[0]), false)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[uuid.UUID]store.RecallFact{}
	for _, f := range want {
		byID[f.ID] = f
	}
	for _, x := range resp.Results {
		f := byID[x.ID]
		if x.Text != f.Text || len(x.Entities) != len(f.EntityNames) || x.Scores.Semantic != r.cfg.Scale.Relevance(f.Sim) {
			t.Errorf("result %s = %q %v semantic %v, hydration loads %q %v semantic %v",
				x.ID, x.Text, x.Entities, x.Scores.Semantic, f.Text, f.EntityNames, r.cfg.Scale.Relevance(f.Sim))
		}
	}
}
