package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"
)

// PendingFact is a fact that consolidation has not yet looked at.
type PendingFact struct {
	ID       uuid.UUID
	BankID   string
	FactType string
	Text     string
	// ReplyTo is the quote its vector embeds before the text
	// (extract.EmbeddingTextOf).
	ReplyTo       string
	State         string
	Tags          []string
	MentionedAt   time.Time
	OccurredStart *time.Time
	Embedding     []float32
	EntityIDs     []uuid.UUID
	EntityNames   []string
}

// When is the time a fact speaks about: when it happened if known, else
// when it was said. Evidence is dated with it.
func (f PendingFact) When() time.Time {
	if f.OccurredStart != nil {
		return *f.OccurredStart
	}
	return f.MentionedAt
}

// ObservationCandidate is an existing observation that a new fact might
// support, update or retract.
type ObservationCandidate struct {
	ID         uuid.UUID
	Text       string
	Tags       []string
	ProofCount int
	Metadata   map[string]string
	// Similarity is the cosine similarity of the observation to the fact.
	Similarity float64
	// LastEvidence is the time of its newest evidence.
	LastEvidence time.Time
	Embedding    []float32
	// CreatedAt is when the observation was made (merges keep the older).
	CreatedAt time.Time
}

// ObsEvidence is one supporting fact to attach to an observation.
type ObsEvidence struct {
	MemoryID  uuid.UUID
	Quote     string
	Relevance float32
	At        time.Time
}

// Kinds of ObsEdit.
const (
	EditCreate     = "create"
	EditUpdate     = "update"
	EditEvidence   = "evidence"
	EditInvalidate = "invalidate"
)

// ObsEdit is one change to one observation, decided by consolidation.
type ObsEdit struct {
	Kind          string
	ObservationID uuid.UUID
	// Text, Embedding, SearchAux and Metadata are the new content (create
	// and update).
	Text      string
	Embedding []float32
	SearchAux string
	Metadata  map[string]string
	// Tags is the scope of a new observation.
	Tags      []string
	EntityIDs []uuid.UUID
	Reason    string
	Evidence  []ObsEvidence
	// Sources are the facts behind the change, recorded in its history
	// row; empty means the evidence's facts.
	Sources []uuid.UUID
}

// ConsolidationApply is everything one consolidation decision writes,
// applied in one transaction together with marking its facts consolidated.
type ConsolidationApply struct {
	BankID  string
	FactIDs []uuid.UUID
	Edits   []ObsEdit
	// Now stamps the facts' consolidation and the history rows (an
	// injected clock).
	Now time.Time
	// MergeThreshold merges other valid observations of the same scope
	// whose cosine similarity to a created or updated one is at least this
	// (0 disables merging).
	MergeThreshold float64
	// Trend labels an observation from its evidence times; it is called
	// for every touched observation.
	Trend func(evidence []time.Time) string
}

// ApplyOutcome reports what ApplyConsolidation wrote.
type ApplyOutcome struct {
	// Applied is false when the facts had already been consolidated (by
	// another worker, or by a previous run that crashed after committing):
	// nothing was written.
	Applied     bool
	Created     int
	Updated     int
	Invalidated int
	Merged      int
	Evidence    int
}

const (
	qPendingFacts = `SELECT m.id, m.bank_id, m.fact_type, m.text, m.reply_to, m.state, m.tags, m.mentioned_at, m.occurred_start, m.embedding,
		COALESCE((SELECT array_agg(ue.entity_id ORDER BY ue.entity_id) FROM unit_entities ue WHERE ue.unit_id = m.id), '{}'),
		COALESCE((SELECT array_agg(e.canonical_name ORDER BY e.canonical_name) FROM unit_entities ue
			JOIN entities e ON e.id = ue.entity_id WHERE ue.unit_id = m.id), '{}')
		FROM consolidation_queue cq JOIN memory_units m ON m.id = cq.unit_id
		WHERE cq.bank_id = $1 AND NOT cq.held
		ORDER BY COALESCE(m.occurred_start, m.mentioned_at), m.created_at, m.id
		LIMIT $2`
)

const (
	// candidateCols are the columns of a candidate observation; q.vec is
	// the fact's vector inside the LATERAL subqueries. An observation's
	// occurred_end is the time of its newest evidence (qObsStats keeps it
	// so), which spares an aggregate over its evidence per candidate.
	candidateCols = `m.id, m.text, m.tags, m.proof_count, m.metadata, 1 - (m.embedding <=> q.vec),
		COALESCE(m.occurred_end, m.mentioned_at), m.embedding, m.created_at, m.updated_at`
	// candidateScope keeps observations of one bank and exactly one tag
	// set: scopes never mix. The tag comparison goes through array_cat so
	// that the planner never reads the tags GIN index for it: with the
	// scope's tags unknown at plan time it estimates a handful of rows
	// there, while a common tag set (every fact of a bench, every fact of
	// a project) matches the whole table.
	candidateScope = `m.bank_id = $1 AND m.fact_type = 'observation' AND m.state = 'valid' AND m.embedding IS NOT NULL
		AND array_cat(m.tags, '{}') @> q.tags AND array_cat(m.tags, '{}') <@ q.tags`

	// qCandidateSettings: the iterative scan keeps the HNSW search going
	// until enough rows pass the bank/scope filter; custom plans let the
	// planner see the bank. In practice it sorts the bank's observations
	// in scope exactly whatever the bank's size, since it estimates the
	// tag scope at a row or so (docs/BENCHMARKS.md, consolidation
	// candidates and semantic links).
	qCandidateSettings = `SELECT set_config('hnsw.ef_search', '100', true), set_config('hnsw.iterative_scan', 'relaxed_order', true),
		set_config('plan_cache_mode', 'force_custom_plan', true)`
	// qBatchCandidates runs the three candidate rankings for every fact of
	// a batch in one statement. $1 bank, $2 the facts' queries as JSON
	// (i, tags, terms, ents, slot), $3 their vectors in the same order,
	// $4 the rows per ranking. Each row names its fact (i) and ranking
	// (0 semantic, 1 keyword/entity, 2 slot) and carries the ranking's
	// sort key; the caller orders.
	qBatchCandidates = `WITH q AS MATERIALIZED (
			SELECT q.i, q.tags, q.terms, q.ents, q.slot, v.vec,
				CASE WHEN cardinality(q.terms) > 0 THEN to_tsquery('english', array_to_string(q.terms, ' | '))
					|| to_tsquery('simple', array_to_string(q.terms, ' | ')) END AS tsq
			FROM jsonb_to_recordset($2::jsonb) AS q(i int, tags text[], terms text[], ents uuid[], slot text)
			JOIN unnest($3::halfvec[]) WITH ORDINALITY AS v(vec, ord) ON v.ord = q.i + 1)
		SELECT q.i, 0, c.*, 0::real FROM q CROSS JOIN LATERAL (
			SELECT ` + candidateCols + ` FROM memory_units m WHERE ` + candidateScope + `
			ORDER BY m.embedding <=> q.vec LIMIT $4) c
		UNION ALL
		SELECT q.i, 1, c.* FROM q CROSS JOIN LATERAL (
			SELECT ` + candidateCols + `, COALESCE(ts_rank(m.search_tsv, q.tsq), 0) AS rank FROM memory_units m
			WHERE ` + candidateScope + `
			  AND ((q.tsq IS NOT NULL AND m.search_tsv @@ q.tsq)
			    OR (cardinality(q.ents) > 0 AND EXISTS (SELECT 1 FROM unit_entities ue WHERE ue.unit_id = m.id AND ue.entity_id = ANY(q.ents))))
			ORDER BY rank DESC, m.proof_count DESC, m.id LIMIT $4) c
		WHERE q.tsq IS NOT NULL OR cardinality(q.ents) > 0
		UNION ALL
		SELECT q.i, 2, c.*, 0::real FROM q CROSS JOIN LATERAL (
			SELECT ` + candidateCols + ` FROM memory_units m
			WHERE ` + candidateScope + ` AND m.metadata->>'slot' = q.slot
			ORDER BY m.updated_at DESC LIMIT $4) c
		WHERE q.slot IS NOT NULL`

	// A consolidation transaction may commit without waiting for the WAL
	// flush: if the server crashes before the flush, the transaction is
	// lost whole (never half), its facts are still queued, and the next
	// drain redoes them. That trades nothing for not paying one fsync per
	// batch.
	qAsyncCommit = `SELECT set_config('synchronous_commit', 'off', true)`
	// The queue rows are the facts' claim: locked in id order, and gone
	// once a batch that held them committed. A held row (its bank's
	// observations were cleared since the batch read it) is no claim.
	qLockFacts = `SELECT unit_id FROM consolidation_queue WHERE bank_id = $1 AND unit_id = ANY($2::uuid[]) AND NOT held
		ORDER BY unit_id FOR UPDATE`
	// Marking a fact writes a row of its own, never the fact's: see
	// migration 012.
	qMarkConsolidated = `INSERT INTO unit_consolidations (unit_id, bank_id, consolidated_at)
		SELECT unnest($2::uuid[]), $1, $3
		ON CONFLICT (unit_id) DO UPDATE SET consolidated_at = EXCLUDED.consolidated_at`
	qDequeueFacts = `DELETE FROM consolidation_queue WHERE unit_id = ANY($1::uuid[])`
	qObsInsert    = `INSERT INTO memory_units (id, bank_id, fact_type, text, embedding, search_aux, mentioned_at,
			tags, metadata, idempotency_key, proof_count, created_at, updated_at)
		SELECT id, $1, 'observation', t, e, a, $2, ARRAY(SELECT jsonb_array_elements_text(g)), md,
			'observation:' || id::text, 0, $2, $2
		FROM unnest($3::uuid[], $4::text[], $5::halfvec[], $6::text[], $7::jsonb[], $8::jsonb[]) AS x(id, t, e, a, g, md)
		ON CONFLICT DO NOTHING
		RETURNING id`
	// Each link's foreign key share-locks its entity, in the order the
	// rows go in; a document delete locks its entities in id order, so the
	// links go in entity order too. In edit order (one source fact's
	// entities after another's), the apply held a higher entity and waited
	// for a lower one that a delete held while it waited for the higher:
	// a deadlock (SQLSTATE 40P01).
	qObsUnitEntities = `INSERT INTO unit_entities (unit_id, entity_id)
		SELECT u, e FROM unnest($1::uuid[], $2::uuid[]) AS x(u, e) ORDER BY e, u
		ON CONFLICT DO NOTHING`
	qObsLock = `SELECT id, text, state FROM memory_units WHERE bank_id = $1 AND id = ANY($2::uuid[]) AND fact_type = 'observation'
		ORDER BY id FOR UPDATE`
	qObsLockText = `SELECT text, state FROM memory_units WHERE bank_id = $1 AND id = $2 AND fact_type = 'observation' FOR UPDATE`
	qObsUpdate   = `UPDATE memory_units m SET text = x.t, embedding = x.e, search_aux = x.a, metadata = x.md, updated_at = $2
		FROM unnest($1::uuid[], $3::text[], $4::halfvec[], $5::text[], $6::jsonb[]) AS x(id, t, e, a, md) WHERE m.id = x.id`
	qObsInvalidate      = `UPDATE memory_units SET state = 'invalidated', invalid_reason = $2, updated_at = $3 WHERE id = $1`
	qObsInvalidateBatch = `UPDATE memory_units m SET state = 'invalidated', invalid_reason = x.r, updated_at = $2
		FROM unnest($1::uuid[], $3::text[]) AS x(id, r) WHERE m.id = x.id`
	qObsHistory = `INSERT INTO observation_history (observation_id, action, old_text, new_text, reason, memory_ids, changed_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`
	// History rows of a batch keep the order of its edits: ids are drawn
	// in ordinality order.
	qObsHistoryBatch = `INSERT INTO observation_history (observation_id, action, old_text, new_text, reason, memory_ids, changed_at)
		SELECT o, a, ot, nt, r, ARRAY(SELECT jsonb_array_elements_text(mi))::uuid[], $1
		FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::jsonb[]) WITH ORDINALITY AS x(o, a, ot, nt, r, mi, n)
		ORDER BY n`
	qObsEvidence = `INSERT INTO observation_evidence (observation_id, memory_id, quote, relevance, evidence_at)
		SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::real[], $5::timestamptz[])
		ON CONFLICT (observation_id, memory_id) DO NOTHING`
	// proof_count is recounted, never incremented, so a replay cannot
	// count a piece of evidence twice.
	qObsEvidenceTimes = `SELECT x.id, COALESCE((SELECT array_agg(evidence_at ORDER BY evidence_at) FROM observation_evidence WHERE observation_id = x.id), '{}')
		FROM unnest($1::uuid[]) AS x(id)`
	// The observation's occurred range is when its current text holds:
	// from the evidence of its latest text update (or its first evidence)
	// to its newest evidence. Evidence of a replaced value stays attached
	// but must not make "Alice moved to Shanghai" look true in the years
	// she lived in Beijing, or temporal recall would answer with it.
	qObsStats = `UPDATE memory_units m SET proof_count = x.n, trend = x.t,
			occurred_start = (SELECT min(ev.evidence_at) FROM observation_evidence ev
				WHERE ev.observation_id = x.id AND ev.evidence_at >= COALESCE((
					SELECT max(e2.evidence_at) FROM observation_history h
					JOIN observation_evidence e2 ON e2.observation_id = h.observation_id AND e2.memory_id = ANY (h.memory_ids)
					WHERE h.observation_id = x.id AND h.action = 'update'), '-infinity')),
			occurred_end = (SELECT max(evidence_at) FROM observation_evidence WHERE observation_id = x.id),
			mentioned_at = COALESCE((SELECT max(evidence_at) FROM observation_evidence WHERE observation_id = x.id), m.mentioned_at)
		FROM unnest($1::uuid[], $2::int[], $3::text[]) AS x(id, n, t) WHERE m.id = x.id`
	// qObsNearDuplicateHits finds which of the created or updated
	// observations have a near-duplicate in their scope; only those go
	// through mergeNearDuplicates.
	qObsNearDuplicateHits = `SELECT x.id FROM unnest($2::uuid[]) AS x(id) JOIN memory_units s ON s.id = x.id
		WHERE s.embedding IS NOT NULL AND s.state = 'valid' AND EXISTS (
			SELECT 1 FROM memory_units m WHERE m.bank_id = $1 AND m.fact_type = 'observation' AND m.state = 'valid'
			  AND m.embedding IS NOT NULL AND m.id <> s.id
			  AND array_cat(m.tags, '{}') @> s.tags AND array_cat(m.tags, '{}') <@ s.tags
			  AND (m.embedding <=> s.embedding) <= $3)`
	// The whole group is locked here, before any evidence moves, and a
	// near-duplicate another transaction holds is left out of it, to a
	// later merge. By now the apply holds the observations it edited and
	// the share locks of its entity links and evidence, which a document
	// delete takes after its observations: waiting here for one the delete
	// held (a lower id than an edited one, or any while it waited for an
	// entity) was a deadlock (SQLSTATE 40P01). Left out, it is never
	// merged away in the middle of someone else's change to it, and the
	// next merge of its scope sees it as that change left it.
	qObsNearDuplicates = `SELECT m.id, m.proof_count, m.created_at FROM memory_units m
		WHERE m.bank_id = $1 AND m.fact_type = 'observation' AND m.state = 'valid'
		  AND m.tags @> $2::text[] AND m.tags <@ $2::text[] AND m.embedding IS NOT NULL AND m.id <> $4
		  AND (m.embedding <=> $3::halfvec) <= $5
		ORDER BY m.id FOR UPDATE SKIP LOCKED`
	qObsSelf         = `SELECT tags, proof_count, created_at, embedding FROM memory_units WHERE id = $1`
	qObsMoveEvidence = `INSERT INTO observation_evidence (observation_id, memory_id, quote, relevance, evidence_at)
		SELECT $1, memory_id, quote, relevance, evidence_at FROM observation_evidence WHERE observation_id = $2
		ON CONFLICT (observation_id, memory_id) DO NOTHING
		RETURNING memory_id`

	qObsTrends = `SELECT m.id, COALESCE(m.trend, ''), m.proof_count,
			COALESCE((SELECT array_agg(ev.evidence_at) FROM observation_evidence ev WHERE ev.observation_id = m.id), '{}')
		FROM memory_units m WHERE m.bank_id = $1 AND m.fact_type = 'observation' AND m.state = 'valid'`
	// A label is written only over the trend and proof_count it was
	// computed beside: a consolidation that gave the observation evidence
	// since (qObsStats) wrote the label of that evidence, which a label of
	// the old evidence must not replace.
	qObsSetTrends = `UPDATE memory_units m SET trend = x.t FROM unnest($1::uuid[], $2::text[], $3::text[], $4::int[]) AS x(id, t, cur, n)
		WHERE m.id = x.id AND COALESCE(m.trend, '') = x.cur AND m.proof_count = x.n`
)

// PendingFacts returns up to limit unconsolidated facts of a bank in the
// order they speak about (then ingest order), so that a later statement is
// adjudicated after an earlier one.
func (s *Store) PendingFacts(ctx context.Context, bankID string, limit int) ([]PendingFact, error) {
	rows, err := s.pool.Query(ctx, qPendingFacts, bankID, limit)
	if err != nil {
		return nil, fmt.Errorf("pending facts bank %s: %w", bankID, err)
	}
	defer rows.Close()
	var out []PendingFact
	for rows.Next() {
		var f PendingFact
		var vec *pgvector.HalfVector
		if err := rows.Scan(&f.ID, &f.BankID, &f.FactType, &f.Text, &f.ReplyTo, &f.State, &f.Tags, &f.MentionedAt, &f.OccurredStart,
			&vec, &f.EntityIDs, &f.EntityNames); err != nil {
			return nil, fmt.Errorf("pending facts bank %s: %w", bankID, err)
		}
		if vec != nil {
			f.Embedding = vec.Slice()
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pending facts bank %s: %w", bankID, err)
	}
	return out, nil
}

// CandidateQuery selects observations of one scope near a fact.
type CandidateQuery struct {
	BankID    string
	Tags      []string
	Embedding []float32
	// Terms are the fact's informative words and CJK bigrams; EntityIDs
	// its entities. Either finds keyword/entity-overlap candidates.
	Terms     []string
	EntityIDs []uuid.UUID
	// Slot, when set, finds the observation holding the same
	// subject|attribute.
	Slot  string
	Limit int
}

// CandidateLists are the three candidate rankings for one fact, each in
// its own order; the caller fuses them.
type CandidateLists struct {
	Semantic []ObservationCandidate
	Keyword  []ObservationCandidate
	Slot     []ObservationCandidate
}

// ObservationCandidates runs the semantic (HNSW), keyword/entity and slot
// candidate queries for one fact.
func (s *Store) ObservationCandidates(ctx context.Context, q CandidateQuery) (CandidateLists, error) {
	out, err := s.BatchObservationCandidates(ctx, q.BankID, []CandidateQuery{q}, q.Limit)
	if err != nil {
		return CandidateLists{}, err
	}
	return out[0], nil
}

type candidateQueryJSON struct {
	I     int         `json:"i"`
	Tags  []string    `json:"tags"`
	Terms []string    `json:"terms"`
	Ents  []uuid.UUID `json:"ents"`
	Slot  *string     `json:"slot"`
}

// BatchObservationCandidates runs the three candidate rankings of every
// query (facts of one bank) in one statement and one read-only
// transaction, limit rows per ranking. The lists come back in the
// rankings' orders: similarity, then keyword rank (ts_rank, evidence,
// id), then the slot holder updated last.
func (s *Store) BatchObservationCandidates(ctx context.Context, bankID string, qs []CandidateQuery, limit int) ([]CandidateLists, error) {
	out := make([]CandidateLists, len(qs))
	if len(qs) == 0 {
		return out, nil
	}
	js := make([]candidateQueryJSON, len(qs))
	vecs := make([]pgvector.HalfVector, len(qs))
	for i, q := range qs {
		if len(q.Embedding) == 0 {
			return nil, fmt.Errorf("observation candidates bank %s: fact %d has no embedding", bankID, i)
		}
		j := candidateQueryJSON{I: i, Tags: q.Tags, Terms: q.Terms, Ents: q.EntityIDs}
		if j.Tags == nil {
			j.Tags = []string{}
		}
		if j.Terms == nil {
			j.Terms = []string{}
		}
		if j.Ents == nil {
			j.Ents = []uuid.UUID{}
		}
		if q.Slot != "" {
			j.Slot = &q.Slot
		}
		js[i] = j
		vecs[i] = pgvector.NewHalfVector(q.Embedding)
	}
	payload, err := json.Marshal(js)
	if err != nil {
		return nil, err
	}
	type ranked struct {
		c       ObservationCandidate
		updated time.Time
		rank    float32
	}
	lists := make([][3][]ranked, len(qs))
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, qCandidateSettings); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, qBatchCandidates, bankID, payload, vecs, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var i, list int32
			var r ranked
			var n int32
			var meta map[string]any
			var vec *pgvector.HalfVector
			if err := rows.Scan(&i, &list, &r.c.ID, &r.c.Text, &r.c.Tags, &n, &meta, &r.c.Similarity, &r.c.LastEvidence, &vec,
				&r.c.CreatedAt, &r.updated, &r.rank); err != nil {
				return err
			}
			if int(i) >= len(qs) || list < 0 || list > 2 {
				return fmt.Errorf("candidate row for fact %d ranking %d", i, list)
			}
			r.c.ProofCount = int(n)
			r.c.Metadata = map[string]string{}
			for k, v := range meta {
				if s, ok := v.(string); ok {
					r.c.Metadata[k] = s
				}
			}
			if vec != nil {
				r.c.Embedding = vec.Slice()
			}
			lists[i][list] = append(lists[i][list], r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("observation candidates bank %s (%d facts): %w", bankID, len(qs), err)
	}
	byID := func(a, b ranked) int { return slices.Compare(a.c.ID[:], b.c.ID[:]) }
	for i := range lists {
		sem, kw, slot := lists[i][0], lists[i][1], lists[i][2]
		slices.SortStableFunc(sem, func(a, b ranked) int {
			if c := cmp.Compare(b.c.Similarity, a.c.Similarity); c != 0 {
				return c
			}
			return byID(a, b)
		})
		slices.SortStableFunc(kw, func(a, b ranked) int {
			if c := cmp.Compare(b.rank, a.rank); c != 0 {
				return c
			}
			if c := cmp.Compare(b.c.ProofCount, a.c.ProofCount); c != 0 {
				return c
			}
			return byID(a, b)
		})
		slices.SortStableFunc(slot, func(a, b ranked) int {
			if c := b.updated.Compare(a.updated); c != 0 {
				return c
			}
			return byID(a, b)
		})
		take := func(rs []ranked) []ObservationCandidate {
			var o []ObservationCandidate
			for _, r := range rs {
				o = append(o, r.c)
			}
			return o
		}
		out[i] = CandidateLists{Semantic: take(sem), Keyword: take(kw), Slot: take(slot)}
	}
	return out, nil
}

// ApplyConsolidation writes the edits of a batch of facts and marks the
// facts consolidated, in one transaction. The facts' queue rows are locked
// first: if any of them is already consolidated, nothing is written
// (Applied false), so a decision is applied at most once even when two
// workers or a restarted worker adjudicated the same facts. Inserts use
// derived ids and ON CONFLICT DO NOTHING as a second line of defence.
//
// Edits take effect in order, as if applied one by one: history rows keep
// their order and an update records the text the previous edit left. The
// rows of a kind are written with one statement each. Then every created
// or updated observation is merged with its near-duplicates of the same
// scope, and the statistics (proof_count, trend, occurred range) of every
// touched observation are recomputed once.
func (s *Store) ApplyConsolidation(ctx context.Context, a ConsolidationApply) (ApplyOutcome, error) {
	var out ApplyOutcome
	if a.Trend == nil {
		return out, fmt.Errorf("apply consolidation bank %s: Trend is nil", a.BankID)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out = ApplyOutcome{}
		if _, err := tx.Exec(ctx, qAsyncCommit); err != nil {
			return fmt.Errorf("async commit: %w", err)
		}
		facts := uniqueIDs(a.FactIDs)
		rows, err := tx.Query(ctx, qLockFacts, a.BankID, facts)
		if err != nil {
			return fmt.Errorf("lock facts: %w", err)
		}
		locked, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return fmt.Errorf("lock facts: %w", err)
		}
		if len(locked) != len(facts) {
			return nil
		}
		w, err := newEditWriter(ctx, tx, a)
		if err != nil {
			return err
		}
		for _, e := range a.Edits {
			if err := w.add(e); err != nil {
				return fmt.Errorf("%s observation %s: %w", e.Kind, e.ObservationID, err)
			}
		}
		if err := w.flush(ctx, &out); err != nil {
			return err
		}
		touched := w.touched
		if a.MergeThreshold > 0 && len(w.reshaped) > 0 {
			rows, err := tx.Query(ctx, qObsNearDuplicateHits, a.BankID, w.reshaped, 1-a.MergeThreshold)
			if err != nil {
				return fmt.Errorf("near-duplicates: %w", err)
			}
			hits, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
			if err != nil {
				return fmt.Errorf("near-duplicates: %w", err)
			}
			// In edit order, as a one-by-one apply would merge.
			for _, id := range w.reshaped {
				if !slices.Contains(hits, id) {
					continue
				}
				survivor, merged, err := mergeNearDuplicates(ctx, tx, a, id)
				if err != nil {
					return fmt.Errorf("merge near-duplicates of %s: %w", id, err)
				}
				out.Merged += merged
				if merged > 0 && !slices.Contains(touched, survivor) {
					touched = append(touched, survivor)
				}
			}
		}
		if err := refreshObservationStats(ctx, tx, touched, a.Trend); err != nil {
			return fmt.Errorf("observation stats: %w", err)
		}
		if _, err := tx.Exec(ctx, qMarkConsolidated, a.BankID, facts, a.Now); err != nil {
			return fmt.Errorf("mark consolidated: %w", err)
		}
		if _, err := tx.Exec(ctx, qDequeueFacts, facts); err != nil {
			return fmt.Errorf("dequeue facts: %w", err)
		}
		out.Applied = true
		return nil
	})
	if err != nil {
		return ApplyOutcome{}, fmt.Errorf("apply consolidation bank %s (%d facts): %w", a.BankID, len(a.FactIDs), err)
	}
	return out, nil
}

func uniqueIDs(ids []uuid.UUID) []uuid.UUID {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	return slices.Compact(out)
}

func metadataJSON(m map[string]string) ([]byte, error) {
	if m == nil {
		m = map[string]string{}
	}
	return json.Marshal(m)
}

// obsState is what an apply knows of an observation while it replays the
// edits: its text and state as the previous edit left them.
type obsState struct {
	text  string
	valid bool
}

// editWriter turns a batch's edits into one statement per kind of row.
type editWriter struct {
	tx  pgx.Tx
	a   ConsolidationApply
	obs map[uuid.UUID]*obsState
	// created are the observations this apply inserted (not those that
	// existed already: a replay).
	created map[uuid.UUID]bool
	// touched are the observations whose statistics change, reshaped
	// those created or updated (merge candidates), in edit order.
	touched, reshaped []uuid.UUID

	hObs                             []uuid.UUID
	hAction, hOld, hNew, hReason     []*string
	hMem                             [][]byte
	evObs, evMem                     []uuid.UUID
	evQuote                          []string
	evRel                            []float32
	evAt                             []time.Time
	ueUnit, ueEnt                    []uuid.UUID
	updates                          map[uuid.UUID]int
	uID                              []uuid.UUID
	uText, uAux                      []string
	uVec                             []pgvector.HalfVector
	uMeta                            [][]byte
	invID                            []uuid.UUID
	invReason                        []string
	createdCount, updated, invalided int
}

// newEditWriter inserts the batch's new observations (so that later edits
// may refer to them) and locks, in id order, every existing observation
// the edits touch.
func newEditWriter(ctx context.Context, tx pgx.Tx, a ConsolidationApply) (*editWriter, error) {
	w := &editWriter{tx: tx, a: a, obs: map[uuid.UUID]*obsState{}, created: map[uuid.UUID]bool{}, updates: map[uuid.UUID]int{}}
	var cID []uuid.UUID
	var cText, cAux []string
	var cVec []pgvector.HalfVector
	var cTags, cMeta [][]byte
	seen := map[uuid.UUID]bool{}
	for _, e := range a.Edits {
		if e.Kind != EditCreate || seen[e.ObservationID] {
			continue
		}
		seen[e.ObservationID] = true
		if e.Text == "" || len(e.Embedding) == 0 {
			return nil, fmt.Errorf("create observation %s: a new observation needs text and an embedding", e.ObservationID)
		}
		meta, err := metadataJSON(e.Metadata)
		if err != nil {
			return nil, err
		}
		tags := e.Tags
		if tags == nil {
			tags = []string{}
		}
		tj, err := json.Marshal(tags)
		if err != nil {
			return nil, err
		}
		cID, cText, cAux = append(cID, e.ObservationID), append(cText, e.Text), append(cAux, e.SearchAux)
		cVec, cTags, cMeta = append(cVec, pgvector.NewHalfVector(e.Embedding)), append(cTags, tj), append(cMeta, meta)
	}
	if len(cID) > 0 {
		rows, err := tx.Query(ctx, qObsInsert, a.BankID, a.Now, cID, cText, cVec, cAux, cTags, cMeta)
		if err != nil {
			return nil, fmt.Errorf("insert observations: %w", err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return nil, fmt.Errorf("insert observations: %w", err)
		}
		for _, id := range ids {
			w.created[id] = true
		}
	}
	var lock []uuid.UUID
	for _, e := range a.Edits {
		if !w.created[e.ObservationID] && !slices.Contains(lock, e.ObservationID) {
			lock = append(lock, e.ObservationID)
		}
	}
	if len(lock) > 0 {
		rows, err := tx.Query(ctx, qObsLock, a.BankID, uniqueIDs(lock))
		if err != nil {
			return nil, fmt.Errorf("lock observations: %w", err)
		}
		for rows.Next() {
			var id uuid.UUID
			var text, state string
			if err := rows.Scan(&id, &text, &state); err != nil {
				rows.Close()
				return nil, fmt.Errorf("lock observations: %w", err)
			}
			w.obs[id] = &obsState{text: text, valid: state == "valid"}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("lock observations: %w", err)
		}
	}
	return w, nil
}

func (w *editWriter) history(obs uuid.UUID, action string, old, new *string, reason string, mem []uuid.UUID) error {
	if mem == nil {
		mem = []uuid.UUID{}
	}
	mj, err := json.Marshal(mem)
	if err != nil {
		return err
	}
	w.hObs, w.hAction, w.hOld, w.hNew, w.hReason = append(w.hObs, obs), append(w.hAction, &action), append(w.hOld, old),
		append(w.hNew, new), append(w.hReason, &reason)
	w.hMem = append(w.hMem, mj)
	return nil
}

func (w *editWriter) touch(id uuid.UUID, reshaped bool) {
	if !slices.Contains(w.touched, id) {
		w.touched = append(w.touched, id)
	}
	if reshaped && !slices.Contains(w.reshaped, id) {
		w.reshaped = append(w.reshaped, id)
	}
}

func (w *editWriter) add(e ObsEdit) error {
	memIDs := make([]uuid.UUID, len(e.Evidence))
	for i, ev := range e.Evidence {
		memIDs[i] = ev.MemoryID
	}
	sources := memIDs
	if len(e.Sources) > 0 {
		sources = e.Sources
	}
	switch e.Kind {
	case EditCreate:
		if w.created[e.ObservationID] {
			if _, done := w.obs[e.ObservationID]; !done {
				text := e.Text
				w.obs[e.ObservationID] = &obsState{text: text, valid: true}
				w.createdCount++
				if err := w.history(e.ObservationID, "create", nil, &text, e.Reason, sources); err != nil {
					return err
				}
			}
		}
		if len(e.EntityIDs) > 0 {
			for _, ent := range e.EntityIDs {
				w.ueUnit, w.ueEnt = append(w.ueUnit, e.ObservationID), append(w.ueEnt, ent)
			}
		}
		w.touch(e.ObservationID, true)
	case EditUpdate, EditInvalidate, EditEvidence:
		st, ok := w.obs[e.ObservationID]
		if !ok {
			return ErrNotFound
		}
		switch e.Kind {
		case EditUpdate:
			if e.Text == "" || len(e.Embedding) == 0 {
				return errors.New("an update needs text and an embedding")
			}
			meta, err := metadataJSON(e.Metadata)
			if err != nil {
				return err
			}
			old, text := st.text, e.Text
			if err := w.history(e.ObservationID, "update", &old, &text, e.Reason, sources); err != nil {
				return err
			}
			st.text = text
			vec := pgvector.NewHalfVector(e.Embedding)
			if k, ok := w.updates[e.ObservationID]; ok {
				w.uText[k], w.uVec[k], w.uAux[k], w.uMeta[k] = text, vec, e.SearchAux, meta
			} else {
				w.updates[e.ObservationID] = len(w.uID)
				w.uID, w.uText, w.uVec, w.uAux, w.uMeta = append(w.uID, e.ObservationID), append(w.uText, text),
					append(w.uVec, vec), append(w.uAux, e.SearchAux), append(w.uMeta, meta)
			}
			w.updated++
			w.touch(e.ObservationID, true)
		case EditInvalidate:
			if !st.valid {
				break
			}
			st.valid = false
			old := st.text
			if err := w.history(e.ObservationID, "invalidate", &old, nil, e.Reason, sources); err != nil {
				return err
			}
			w.invID, w.invReason = append(w.invID, e.ObservationID), append(w.invReason, e.Reason)
			w.invalided++
		default:
			w.touch(e.ObservationID, false)
		}
	default:
		return fmt.Errorf("unknown edit kind %q", e.Kind)
	}
	for _, ev := range e.Evidence {
		w.evObs, w.evMem, w.evQuote = append(w.evObs, e.ObservationID), append(w.evMem, ev.MemoryID), append(w.evQuote, ev.Quote)
		w.evRel, w.evAt = append(w.evRel, ev.Relevance), append(w.evAt, ev.At)
	}
	if len(e.Evidence) > 0 {
		w.touch(e.ObservationID, false)
	}
	return nil
}

// flush writes the collected rows: updates, invalidations, history,
// entities and evidence, one statement each.
func (w *editWriter) flush(ctx context.Context, out *ApplyOutcome) error {
	tx, a := w.tx, w.a
	if len(w.uID) > 0 {
		if _, err := tx.Exec(ctx, qObsUpdate, w.uID, a.Now, w.uText, w.uVec, w.uAux, w.uMeta); err != nil {
			return fmt.Errorf("update observations: %w", err)
		}
	}
	if len(w.invID) > 0 {
		if _, err := tx.Exec(ctx, qObsInvalidateBatch, w.invID, a.Now, w.invReason); err != nil {
			return fmt.Errorf("invalidate observations: %w", err)
		}
	}
	if len(w.hObs) > 0 {
		if _, err := tx.Exec(ctx, qObsHistoryBatch, a.Now, w.hObs, w.hAction, w.hOld, w.hNew, w.hReason, w.hMem); err != nil {
			return fmt.Errorf("observation history: %w", err)
		}
	}
	if len(w.ueUnit) > 0 {
		if _, err := tx.Exec(ctx, qObsUnitEntities, w.ueUnit, w.ueEnt); err != nil {
			return fmt.Errorf("observation entities: %w", err)
		}
	}
	if len(w.evObs) > 0 {
		tag, err := tx.Exec(ctx, qObsEvidence, w.evObs, w.evMem, w.evQuote, w.evRel, w.evAt)
		if err != nil {
			return fmt.Errorf("evidence: %w", err)
		}
		out.Evidence += int(tag.RowsAffected())
	}
	out.Created += w.createdCount
	out.Updated += w.updated
	out.Invalidated += w.invalided
	return nil
}

// mergeNearDuplicates folds the valid observations of id's scope that are
// within the merge threshold into one survivor: the one with the most
// evidence (then the oldest), so that long-lived ids that mental models
// cite survive. The others are invalidated with a reason; nothing is
// deleted. It waits for no other transaction's observation: one that is
// locked is left for a later merge (qObsNearDuplicates).
func mergeNearDuplicates(ctx context.Context, tx pgx.Tx, a ConsolidationApply, id uuid.UUID) (uuid.UUID, int, error) {
	type obs struct {
		id      uuid.UUID
		proofs  int32
		created time.Time
	}
	var tags []string
	var self obs
	var vec *pgvector.HalfVector
	self.id = id
	if err := tx.QueryRow(ctx, qObsSelf, id).Scan(&tags, &self.proofs, &self.created, &vec); err != nil {
		return id, 0, translate(err)
	}
	if vec == nil {
		return id, 0, nil
	}
	rows, err := tx.Query(ctx, qObsNearDuplicates, a.BankID, tags, vec, id, 1-a.MergeThreshold)
	if err != nil {
		return id, 0, err
	}
	group := []obs{self}
	for rows.Next() {
		var o obs
		if err := rows.Scan(&o.id, &o.proofs, &o.created); err != nil {
			rows.Close()
			return id, 0, err
		}
		group = append(group, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return id, 0, err
	}
	if len(group) == 1 {
		return id, 0, nil
	}
	slices.SortFunc(group, func(x, y obs) int {
		if x.proofs != y.proofs {
			return int(y.proofs - x.proofs)
		}
		if c := x.created.Compare(y.created); c != 0 {
			return c
		}
		return slices.Compare(x.id[:], y.id[:])
	})
	survivor := group[0].id
	for _, o := range group[1:] {
		rows, err := tx.Query(ctx, qObsMoveEvidence, survivor, o.id)
		if err != nil {
			return id, 0, err
		}
		moved, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return id, 0, err
		}
		var old, state string
		if err := tx.QueryRow(ctx, qObsLockText, a.BankID, o.id).Scan(&old, &state); err != nil {
			return id, 0, translate(err)
		}
		reason := fmt.Sprintf("merged into near-duplicate observation %s", survivor)
		if _, err := tx.Exec(ctx, qObsInvalidate, o.id, reason, a.Now); err != nil {
			return id, 0, err
		}
		if _, err := tx.Exec(ctx, qObsHistory, o.id, "merge", old, nil, reason, moved, a.Now); err != nil {
			return id, 0, err
		}
		if _, err := tx.Exec(ctx, qObsHistory, survivor, "merge", nil, nil,
			fmt.Sprintf("absorbed near-duplicate observation %s: %s", o.id, old), moved, a.Now); err != nil {
			return id, 0, err
		}
	}
	return survivor, len(group) - 1, nil
}

// refreshObservationStats recounts the evidence of the given observations
// and relabels their trends, in two statements.
func refreshObservationStats(ctx context.Context, tx pgx.Tx, ids []uuid.UUID, trend func([]time.Time) string) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, qObsEvidenceTimes, ids)
	if err != nil {
		return err
	}
	var n []int32
	var labels []string
	var order []uuid.UUID
	for rows.Next() {
		var id uuid.UUID
		var times []time.Time
		if err := rows.Scan(&id, &times); err != nil {
			rows.Close()
			return err
		}
		order, n, labels = append(order, id), append(n, int32(len(times))), append(labels, trend(times))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, qObsStats, order, n, labels)
	return err
}

// RefreshTrends recomputes the trend of every valid observation of a bank
// (labels age even without new evidence: NEW becomes STABLE or STALE) and
// writes those that changed, except where a consolidation relabelled the
// observation meanwhile. It returns how many it wrote.
func (s *Store) RefreshTrends(ctx context.Context, bankID string, trend func([]time.Time) string) (int, error) {
	rows, err := s.pool.Query(ctx, qObsTrends, bankID)
	if err != nil {
		return 0, fmt.Errorf("refresh trends bank %s: %w", bankID, err)
	}
	var ids []uuid.UUID
	var labels, curs []string
	var proofs []int32
	for rows.Next() {
		var id uuid.UUID
		var cur string
		var n int32
		var times []time.Time
		if err := rows.Scan(&id, &cur, &n, &times); err != nil {
			rows.Close()
			return 0, fmt.Errorf("refresh trends bank %s: %w", bankID, err)
		}
		if l := trend(times); l != cur {
			ids, labels, curs, proofs = append(ids, id), append(labels, l), append(curs, cur), append(proofs, n)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("refresh trends bank %s: %w", bankID, err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, qObsSetTrends, ids, labels, curs, proofs)
	if err != nil {
		return 0, fmt.Errorf("refresh trends bank %s: %w", bankID, err)
	}
	return int(tag.RowsAffected()), nil
}

// RefreshTarget is a mental model as consolidation sees it.
type RefreshTarget struct {
	ID              uuid.UUID
	BankID          string
	Name            string
	SourceQuery     string
	Content         string
	Tags            []string
	MaxTokens       int
	BasedOn         json.RawMessage
	LastRefreshedAt *time.Time
}

// RankedObservation is an observation ranked for a mental model.
type RankedObservation struct {
	ID         uuid.UUID
	Text       string
	ProofCount int
	Trend      string
	Similarity float64
	// Keyword is recall's keyword-arm score: above 0 when the observation
	// shares an informative word with the question (0 when ranked by
	// similarity alone).
	Keyword float64
}

const (
	refreshTargetCols     = `id, bank_id, name, source_query, content, tags, max_tokens, based_on, last_refreshed_at`
	qRefreshTargets       = `SELECT ` + refreshTargetCols + ` FROM mental_models WHERE bank_id = $1 ORDER BY name`
	qRefreshTarget        = `SELECT ` + refreshTargetCols + ` FROM mental_models WHERE bank_id = $1 AND id = $2`
	qBanksWithModels      = `SELECT DISTINCT bank_id FROM mental_models ORDER BY bank_id`
	qMentalModelRefreshed = `UPDATE mental_models SET content = $3, based_on = $4, last_refreshed_at = $5, updated_at = $5
		WHERE bank_id = $1 AND id = $2`
	qMentalModelRefreshHistory = `INSERT INTO mental_model_history (mental_model_id, content, refreshed_at) VALUES ($1, $2, $3)`
	// Replicas of the API cache mental models; the notification on the
	// API's channel (store.MentalModelChannel's value) drops their copy.
	qMentalModelRefreshNotify = `SELECT pg_notify('memstream_mental_models', $1)`
	// Observations for a mental model: all valid observations of the bank
	// whose tags overlap the model's (any tags when the model has none),
	// nearest to the question first.
	qRankObservations = `SELECT m.id, m.text, m.proof_count, COALESCE(m.trend, ''), 1 - (m.embedding <=> $3::halfvec)
		FROM memory_units m
		WHERE m.bank_id = $1 AND m.fact_type = 'observation' AND m.state = 'valid' AND m.embedding IS NOT NULL
		  AND (cardinality($2::text[]) = 0 OR m.tags && $2::text[])
		ORDER BY m.embedding <=> $3::halfvec
		LIMIT $4`
)

func scanRefreshTarget(r scanner) (RefreshTarget, error) {
	var m RefreshTarget
	var n int32
	err := r.Scan(&m.ID, &m.BankID, &m.Name, &m.SourceQuery, &m.Content, &m.Tags, &n, &m.BasedOn, &m.LastRefreshedAt)
	m.MaxTokens = int(n)
	return m, err
}

// RefreshTargets lists the mental models of a bank for refreshing.
func (s *Store) RefreshTargets(ctx context.Context, bankID string) ([]RefreshTarget, error) {
	rows, err := s.pool.Query(ctx, qRefreshTargets, bankID)
	if err != nil {
		return nil, fmt.Errorf("mental models to refresh bank %s: %w", bankID, err)
	}
	defer rows.Close()
	var out []RefreshTarget
	for rows.Next() {
		m, err := scanRefreshTarget(rows)
		if err != nil {
			return nil, fmt.Errorf("mental models to refresh bank %s: %w", bankID, err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// RefreshTargetByID returns one mental model of a bank, or ErrNotFound.
func (s *Store) RefreshTargetByID(ctx context.Context, bankID string, id uuid.UUID) (RefreshTarget, error) {
	m, err := scanRefreshTarget(s.pool.QueryRow(ctx, qRefreshTarget, bankID, id))
	if err != nil {
		return m, fmt.Errorf("mental model %s/%s: %w", bankID, id, translate(err))
	}
	return m, nil
}

// BanksWithMentalModels lists the banks that have at least one mental
// model, for the scheduled refresh.
func (s *Store) BanksWithMentalModels(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, qBanksWithModels)
	if err != nil {
		return nil, fmt.Errorf("banks with mental models: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// RankObservations returns up to limit valid observations of a bank for a
// question embedding, nearest first.
func (s *Store) RankObservations(ctx context.Context, bankID string, tags []string, vec []float32, limit int) ([]RankedObservation, error) {
	if tags == nil {
		tags = []string{}
	}
	var out []RankedObservation
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, qCandidateSettings); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, qRankObservations, bankID, tags, pgvector.NewHalfVector(vec), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var o RankedObservation
			var n int32
			if err := rows.Scan(&o.ID, &o.Text, &n, &o.Trend, &o.Similarity); err != nil {
				return err
			}
			o.ProofCount = int(n)
			out = append(out, o)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("rank observations bank %s: %w", bankID, err)
	}
	return out, nil
}

// WriteMentalModelRefresh stores a refreshed mental model's content and
// sources, appends it to the model's history and notifies API replicas,
// in one transaction.
func (s *Store) WriteMentalModelRefresh(ctx context.Context, bankID string, id uuid.UUID, content string, basedOn json.RawMessage, at time.Time) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, qMentalModelRefreshed, bankID, id, content, basedOn, at)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		if _, err := tx.Exec(ctx, qMentalModelRefreshHistory, id, content, at); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, qMentalModelRefreshNotify, bankID+"/"+id.String())
		return err
	})
	if err != nil {
		return fmt.Errorf("refresh mental model %s/%s: %w", bankID, id, err)
	}
	return nil
}
