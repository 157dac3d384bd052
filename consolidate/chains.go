package consolidate

import (
	"context"
	"sync"

	"github.com/google/uuid"

	"github.com/memstream/memstream/internal/unionfind"
	"github.com/memstream/memstream/simscale"
	"github.com/memstream/memstream/store"
)

// relatedLevel is how close two facts of a batch must be (on the
// embedder's scale: 1 is a typical restatement) to be decided in one chain
// of calls: facts that may fold into one new observation must meet in one
// call, or in calls that see each other's decisions.
const relatedLevel = 0.5

// sharedCandidates is how many of a fact's best semantic candidates count
// when deciding whether two facts touch the same observation.
const sharedCandidates = 3

// independentChains splits a batch's valid facts (indexes into facts) into
// chains that can be adjudicated at once: facts that may touch the same
// observation (a shared top candidate, the same subject|attribute slot) or
// may create the same one (related texts) end up in one chain, in batch
// order. Small independent groups share a chain until it fills a call of
// per facts, so that calls stay full.
func independentChains(facts []store.PendingFact, valid, qi []int, slots []string, lists []store.CandidateLists,
	scale simscale.Scale, per int) [][]int {
	sets := unionfind.New(len(valid))
	find, union := sets.Find, sets.Union
	byObs := map[uuid.UUID]int{}
	bySlot := map[string]int{}
	vecs := make([][]float32, len(valid))
	for k, i := range valid {
		q := qi[i]
		for j, c := range lists[q].Semantic {
			if j == sharedCandidates {
				break
			}
			if o, ok := byObs[c.ID]; ok {
				union(k, o)
			} else {
				byObs[c.ID] = k
			}
		}
		for _, c := range lists[q].Slot {
			if o, ok := byObs[c.ID]; ok {
				union(k, o)
			} else {
				byObs[c.ID] = k
			}
		}
		if sl := slots[q]; sl != "" {
			if o, ok := bySlot[sl]; ok {
				union(k, o)
			} else {
				bySlot[sl] = k
			}
		}
		vecs[k] = halfRound(facts[i].Embedding)
		for o := range k {
			if find(o) != find(k) && scale.Level(cosine(vecs[k], vecs[o])) >= relatedLevel {
				union(k, o)
			}
		}
	}
	// Groups in batch order of their first fact.
	groupOf := map[int]int{}
	var groups [][]int
	for k, i := range valid {
		r := find(k)
		g, ok := groupOf[r]
		if !ok {
			g = len(groups)
			groupOf[r] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	var chains [][]int
	open := -1 // the chain still taking small groups
	for _, g := range groups {
		if len(g) >= per {
			chains = append(chains, g)
			continue
		}
		if open < 0 || len(chains[open])+len(g) > per {
			chains = append(chains, nil)
			open = len(chains) - 1
		}
		chains[open] = append(chains[open], g...)
	}
	return chains
}

// forEachLimit calls fn(ctx, 0..n-1) with at most limit calls at once and
// returns the first error; the others' context is cancelled then.
func forEachLimit(ctx context.Context, n, limit int, fn func(context.Context, int) error) error {
	if limit <= 1 || n <= 1 {
		for i := range n {
			if err := fn(ctx, i); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}
