package recall

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"
)

// qHydrate loads every fused candidate in one round trip, with its entities
// and its similarity to the query (which arms other than semantic do not
// compute, and the final score needs for all), and its embedding only when
// $4 asks for it (diversification), since it is the bulk of a row. The bank and state are
// checked again: a fact invalidated while the arms ran is not returned.
const qHydrate = `SELECT m.id, m.text, m.fact_type, m.context, m.occurred_start, m.occurred_end, m.mentioned_at,
	coalesce(m.document_id, ''), m.tags, m.metadata, coalesce(m.source_event_id, ''), m.proof_count, coalesce(m.trend, ''),
	CASE WHEN $3::halfvec IS NULL OR m.embedding IS NULL THEN 0 ELSE 1 - (m.embedding <=> $3::halfvec) END,
	coalesce(e.ids, '{}'), coalesce(e.names, '{}'), coalesce(e.kinds, '{}'),
	CASE WHEN $4::bool THEN m.embedding END
FROM memory_units m
LEFT JOIN LATERAL (
	SELECT array_agg(en.id ORDER BY en.canonical_name) AS ids,
	       array_agg(en.canonical_name ORDER BY en.canonical_name) AS names,
	       array_agg(en.kind ORDER BY en.canonical_name) AS kinds
	FROM unit_entities ue JOIN entities en ON en.id = ue.entity_id
	WHERE ue.unit_id = m.id) e ON true
WHERE m.id = ANY($1::uuid[]) AND m.bank_id = $2 AND m.state = 'valid'`

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

// load reads facts by id in one round trip.
func (r *Recaller) load(ctx context.Context, q *query, ids []uuid.UUID) ([]hydrated, error) {
	var vec any
	if q.embedErr == nil && q.vec != nil {
		vec = pgvector.NewHalfVector(q.vec)
	}
	out := make([]hydrated, 0, len(ids))
	err := r.genericQuery(ctx, qHydrate, []any{ids, q.BankID, vec, q.Diversity > 0}, func(row pgx.Rows) error {
		var h hydrated
		var os, oe *time.Time
		var meta map[string]any
		var eids []uuid.UUID
		var names, kinds []string
		var emb *pgvector.HalfVector
		err := row.Scan(&h.ID, &h.Text, &h.Type, &h.Context, &os, &oe, &h.MentionedAt, &h.DocumentID, &h.Tags,
			&meta, &h.SourceEventID, &h.ProofCount, &h.Trend, &h.sim, &eids, &names, &kinds, &emb)
		if err != nil {
			return err
		}
		if emb != nil {
			h.vec = emb.Slice()
		}
		h.OccurredStart, h.OccurredEnd = os, oe
		h.Metadata = stringMap(meta)
		h.Entities = names
		for i := range eids {
			h.ents = append(h.ents, EntityRef{ID: eids[i], Name: names[i], Kind: kinds[i]})
		}
		if h.Tags == nil {
			h.Tags = []string{}
		}
		if h.Entities == nil {
			h.Entities = []string{}
		}
		out = append(out, h)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("hydrate %d facts: %w", len(ids), err)
	}
	return out, nil
}

// stringMap flattens metadata to strings, as the API promises: writers
// store strings, but a hand-edited row may hold numbers or objects, which
// keep their JSON text rather than failing the recall.
func stringMap(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
			continue
		}
		b, _ := json.Marshal(v)
		out[k] = string(b)
	}
	return out
}
