package recall

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
)

// hydrated is a result before scoring, with what scoring needs.
type hydrated struct {
	Result
	sim  float64
	ents []EntityRef
	vec  []float32 // only with Request.Diversity
}

// maxHydrate caps the fused list that is loaded: past a few pools deep the
// fused ranks are noise and would only cost a bigger query.
func maxHydrate(pool int) int { return max(3*pool/2, 60) }

// hydrateAhead is how many of an arm's best candidates are loaded as soon
// as the arm finishes, while slower arms still run. Fusion's top
// maxHydrate comes mostly from the top halves of the arms, so what is
// left to load after fusion, on the recall's critical path, is mostly the
// last arm's share.
func hydrateAhead(pool int) int { return max(pool/2, 20) }

// hydrator loads candidates for one recall: ahead of fusion as arms
// finish, and then what fusion chose that was not loaded yet.
type hydrator struct {
	r *Recaller
	q *query
	// arms counts the arms still running; the last one loads nothing
	// ahead, since nothing is left to overlap with.
	arms atomic.Int32
	wg   sync.WaitGroup

	mu        sync.Mutex
	requested map[uuid.UUID]bool // asked for, by a load that did not fail
	got       map[uuid.UUID]hydrated
}

func newHydrator(r *Recaller, q *query, arms int) *hydrator {
	h := &hydrator{r: r, q: q, requested: map[uuid.UUID]bool{}, got: map[uuid.UUID]hydrated{}}
	h.arms.Store(int32(arms))
	return h
}

// armDone loads the best of an arm's candidates in the background, unless
// it was the last arm or the query embedding (which every loaded row is
// compared with) is not ready. ctx must outlive the arm: it is the
// recall's.
func (h *hydrator) armDone(ctx context.Context, cands []Candidate) {
	if h.arms.Add(-1) == 0 || len(cands) == 0 {
		return
	}
	select {
	case <-h.q.embedDone:
	default:
		return
	}
	var ids []uuid.UUID
	h.mu.Lock()
	for _, c := range cands[:min(len(cands), hydrateAhead(h.q.pool))] {
		if !h.requested[c.ID] {
			h.requested[c.ID] = true
			ids = append(ids, c.ID)
		}
	}
	h.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		rows, err := h.r.load(ctx, h.q, ids)
		h.mu.Lock()
		defer h.mu.Unlock()
		if err != nil {
			// The load after fusion asks again for what it needs.
			for _, id := range ids {
				delete(h.requested, id)
			}
			return
		}
		for _, row := range rows {
			h.got[row.ID] = row
		}
	}()
}

// wait returns when no load started by armDone is running.
func (h *hydrator) wait() { h.wg.Wait() }

// hydrate returns the fused top maxHydrate that still exist, loading what
// was not loaded ahead. A candidate requested ahead but not returned was
// invalidated or is not the bank's, and is not asked for again.
func (h *hydrator) hydrate(ctx context.Context, fs []fused) ([]hydrated, error) {
	h.wait()
	if n := maxHydrate(h.q.pool); len(fs) > n {
		fs = fs[:n]
	}
	out := make([]hydrated, 0, len(fs))
	var missing []uuid.UUID
	for _, f := range fs {
		if row, ok := h.got[f.ID]; ok {
			out = append(out, row)
		} else if !h.requested[f.ID] {
			missing = append(missing, f.ID)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	rows, err := h.r.load(ctx, h.q, missing)
	if err != nil {
		return nil, err
	}
	return append(out, rows...), nil
}

// load reads facts by id in one round trip, with their similarity to the
// query embedding (which arms other than semantic do not compute, and the
// final score needs for all), and their embeddings only for
// diversification, since they are the bulk of a row.
func (r *Recaller) load(ctx context.Context, q *query, ids []uuid.UUID) ([]hydrated, error) {
	var vec []float32
	if q.embedErr == nil && q.simVec != nil {
		vec = q.simVec
	}
	rows, err := r.st.RecallFacts(ctx, q.BankID, ids, vec, q.Diversity > 0)
	if err != nil {
		return nil, err
	}
	out := make([]hydrated, len(rows))
	for i, f := range rows {
		h := &out[i]
		h.ID, h.Text, h.Type, h.Context = f.ID, f.Text, f.Type, f.Context
		h.OccurredStart, h.OccurredEnd, h.MentionedAt = f.OccurredStart, f.OccurredEnd, f.MentionedAt
		h.DocumentID, h.Tags, h.Metadata, h.SourceEventID = f.DocumentID, f.Tags, f.Metadata, f.SourceEventID
		h.ProofCount, h.Trend, h.sim, h.vec = f.ProofCount, f.Trend, f.Sim, f.Embedding
		h.Entities = f.EntityNames
		for k := range f.EntityIDs {
			h.ents = append(h.ents, EntityRef{ID: f.EntityIDs[k], Name: f.EntityNames[k], Kind: f.EntityKinds[k]})
		}
		if h.Tags == nil {
			h.Tags = []string{}
		}
		if h.Entities == nil {
			h.Entities = []string{}
		}
	}
	return out, nil
}
