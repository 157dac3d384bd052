package recall

import (
	"context"
	"encoding/json"
	"fmt"
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

func (r *Recaller) hydrate(ctx context.Context, q *query, fs []fused) ([]hydrated, error) {
	if n := maxHydrate(q.pool); len(fs) > n {
		fs = fs[:n]
	}
	ids := make([]uuid.UUID, len(fs))
	for i, f := range fs {
		ids[i] = f.ID
	}
	var vec any
	if q.embedErr == nil && q.vec != nil {
		vec = pgvector.NewHalfVector(q.vec)
	}
	rows, err := r.pool.Query(ctx, qHydrate, ids, q.BankID, vec, q.Diversity > 0)
	if err != nil {
		return nil, fmt.Errorf("hydrate %d facts: %w", len(ids), err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (hydrated, error) {
		var h hydrated
		var os, oe *time.Time
		var meta map[string]any
		var eids []uuid.UUID
		var names, kinds []string
		var emb *pgvector.HalfVector
		err := row.Scan(&h.ID, &h.Text, &h.Type, &h.Context, &os, &oe, &h.MentionedAt, &h.DocumentID, &h.Tags,
			&meta, &h.SourceEventID, &h.ProofCount, &h.Trend, &h.sim, &eids, &names, &kinds, &emb)
		if err != nil {
			return h, err
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
		return h, nil
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
