package store

import (
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
	ID            uuid.UUID
	BankID        string
	FactType      string
	Text          string
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
	// Now stamps consolidated_at and the history rows (an injected clock).
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

const obsCandidateCols = `m.id, m.text, m.tags, m.proof_count, m.metadata, 1 - (m.embedding <=> $3::halfvec),
	COALESCE((SELECT max(ev.evidence_at) FROM observation_evidence ev WHERE ev.observation_id = m.id), m.mentioned_at),
	m.embedding`

// scopeFilter keeps observations of one bank and exactly one tag set:
// scopes never mix. $1 bank, $2 tags.
const scopeFilter = `m.bank_id = $1 AND m.fact_type = 'observation' AND m.state = 'valid'
	AND m.tags @> $2::text[] AND m.tags <@ $2::text[]`

const (
	qPendingFacts = `SELECT m.id, m.bank_id, m.fact_type, m.text, m.state, m.tags, m.mentioned_at, m.occurred_start, m.embedding,
		COALESCE((SELECT array_agg(ue.entity_id ORDER BY ue.entity_id) FROM unit_entities ue WHERE ue.unit_id = m.id), '{}'),
		COALESCE((SELECT array_agg(e.canonical_name ORDER BY e.canonical_name) FROM unit_entities ue
			JOIN entities e ON e.id = ue.entity_id WHERE ue.unit_id = m.id), '{}')
		FROM memory_units m
		WHERE m.bank_id = $1 AND m.consolidated_at IS NULL AND m.fact_type <> 'observation'
		ORDER BY COALESCE(m.occurred_start, m.mentioned_at), m.created_at, m.id
		LIMIT $2`
	// SET LOCAL through set_config: the iterative scan keeps the HNSW
	// search going until enough rows pass the bank/scope filter.
	// The candidate queries run for every fact with the same shape; a
	// generic plan spares re-planning them each time (planning cost more
	// than execution when measured).
	qObsHNSW = `SELECT set_config('hnsw.ef_search', '100', true), set_config('hnsw.iterative_scan', 'relaxed_order', true),
		set_config('plan_cache_mode', 'force_generic_plan', true)`
	qObsSemantic = `SELECT ` + obsCandidateCols + ` FROM memory_units m
		WHERE ` + scopeFilter + ` AND m.embedding IS NOT NULL
		ORDER BY m.embedding <=> $3::halfvec LIMIT $4`
	// Keyword and entity overlap: the text search over the observation's
	// words and CJK bigrams, or a shared entity.
	qObsKeyword = `SELECT ` + obsCandidateCols + ` FROM memory_units m
		WHERE ` + scopeFilter + ` AND m.embedding IS NOT NULL
		  AND ((cardinality($5::text[]) > 0 AND m.search_tsv @@ (to_tsquery('english', array_to_string($5::text[], ' | '))
		                                                       || to_tsquery('simple', array_to_string($5::text[], ' | '))))
		    OR EXISTS (SELECT 1 FROM unit_entities ue WHERE ue.unit_id = m.id AND ue.entity_id = ANY($6::uuid[])))
		ORDER BY ts_rank(m.search_tsv, to_tsquery('english', array_to_string($5::text[], ' | '))
		                              || to_tsquery('simple', array_to_string($5::text[], ' | '))) DESC, m.proof_count DESC, m.id
		LIMIT $4`
	// The slot (subject|attribute) of a knowledge-update rule, kept in the
	// observation's metadata.
	qObsSlot = `SELECT ` + obsCandidateCols + ` FROM memory_units m
		WHERE ` + scopeFilter + ` AND m.embedding IS NOT NULL AND m.metadata->>'slot' = $5
		ORDER BY m.updated_at DESC LIMIT $4`

	// A consolidation transaction may commit without waiting for the WAL
	// flush: if the server crashes before the flush, the transaction is
	// lost whole (never half), its facts are still unconsolidated, and the
	// next drain redoes them. That trades nothing for not paying one
	// fsync per fact.
	qAsyncCommit = `SELECT set_config('synchronous_commit', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true)`
	qLockFacts   = `SELECT id FROM memory_units WHERE bank_id = $1 AND id = ANY($2::uuid[]) AND consolidated_at IS NULL
		ORDER BY id FOR UPDATE`
	qMarkConsolidated = `UPDATE memory_units SET consolidated_at = $3 WHERE bank_id = $1 AND id = ANY($2::uuid[])`
	qObsInsert        = `INSERT INTO memory_units (id, bank_id, fact_type, text, embedding, search_aux, mentioned_at,
			tags, metadata, idempotency_key, proof_count, consolidated_at, created_at, updated_at)
		VALUES ($1::uuid, $2, 'observation', $3, $4, $5, $6, $7, $8, 'observation:' || $1::uuid::text, 0, $6, $6, $6)
		ON CONFLICT DO NOTHING`
	qObsUnitEntities = `INSERT INTO unit_entities (unit_id, entity_id) SELECT $1, e FROM unnest($2::uuid[]) AS e ON CONFLICT DO NOTHING`
	qObsLockText     = `SELECT text, state FROM memory_units WHERE bank_id = $1 AND id = $2 AND fact_type = 'observation' FOR UPDATE`
	qObsUpdate       = `UPDATE memory_units SET text = $2, embedding = $3, search_aux = $4, metadata = $5, updated_at = $6 WHERE id = $1`
	qObsInvalidate   = `UPDATE memory_units SET state = 'invalidated', invalid_reason = $2, updated_at = $3 WHERE id = $1`
	qObsHistory      = `INSERT INTO observation_history (observation_id, action, old_text, new_text, reason, memory_ids, changed_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`
	qObsEvidence = `INSERT INTO observation_evidence (observation_id, memory_id, quote, relevance, evidence_at)
		SELECT $1, m, q, r, t FROM unnest($2::uuid[], $3::text[], $4::real[], $5::timestamptz[]) AS x(m, q, r, t)
		ON CONFLICT (observation_id, memory_id) DO NOTHING`
	// proof_count is recounted, never incremented, so a replay cannot
	// count a piece of evidence twice.
	qObsEvidenceTimes = `SELECT COALESCE(array_agg(evidence_at ORDER BY evidence_at), '{}') FROM observation_evidence WHERE observation_id = $1`
	// The observation's occurred range is when its current text holds:
	// from the evidence of its latest text update (or its first evidence)
	// to its newest evidence. Evidence of a replaced value stays attached
	// but must not make "Alice moved to Shanghai" look true in the years
	// she lived in Beijing, or temporal recall would answer with it.
	qObsStats = `WITH since AS (
			SELECT max(e2.evidence_at) AS t FROM observation_history h
			JOIN observation_evidence e2 ON e2.observation_id = h.observation_id AND e2.memory_id = ANY (h.memory_ids)
			WHERE h.observation_id = $1 AND h.action = 'update')
		UPDATE memory_units SET proof_count = $2, trend = $3,
			occurred_start = (SELECT min(ev.evidence_at) FROM observation_evidence ev, since
				WHERE ev.observation_id = $1 AND (since.t IS NULL OR ev.evidence_at >= since.t)),
			occurred_end = (SELECT max(evidence_at) FROM observation_evidence WHERE observation_id = $1),
			mentioned_at = COALESCE((SELECT max(evidence_at) FROM observation_evidence WHERE observation_id = $1), mentioned_at)
		WHERE id = $1`
	qObsNearDuplicates = `SELECT m.id, m.proof_count, m.created_at FROM memory_units m
		WHERE ` + scopeFilter + ` AND m.embedding IS NOT NULL AND m.id <> $4
		  AND (m.embedding <=> $3::halfvec) <= $5
		ORDER BY m.id`
	qObsSelf         = `SELECT tags, proof_count, created_at, embedding FROM memory_units WHERE id = $1`
	qObsMoveEvidence = `INSERT INTO observation_evidence (observation_id, memory_id, quote, relevance, evidence_at)
		SELECT $1, memory_id, quote, relevance, evidence_at FROM observation_evidence WHERE observation_id = $2
		ON CONFLICT (observation_id, memory_id) DO NOTHING
		RETURNING memory_id`

	qObsTrends = `SELECT m.id, COALESCE(m.trend, ''),
			COALESCE((SELECT array_agg(ev.evidence_at) FROM observation_evidence ev WHERE ev.observation_id = m.id), '{}')
		FROM memory_units m WHERE m.bank_id = $1 AND m.fact_type = 'observation' AND m.state = 'valid'`
	qObsSetTrends = `UPDATE memory_units m SET trend = x.t FROM unnest($1::uuid[], $2::text[]) AS x(id, t) WHERE m.id = x.id`
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
		if err := rows.Scan(&f.ID, &f.BankID, &f.FactType, &f.Text, &f.State, &f.Tags, &f.MentionedAt, &f.OccurredStart,
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
// candidate queries for one fact in one read-only transaction.
func (s *Store) ObservationCandidates(ctx context.Context, q CandidateQuery) (CandidateLists, error) {
	var out CandidateLists
	if len(q.Embedding) == 0 {
		return out, fmt.Errorf("observation candidates bank %s: fact has no embedding", q.BankID)
	}
	tags := q.Tags
	if tags == nil {
		tags = []string{}
	}
	vec := pgvector.NewHalfVector(q.Embedding)
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, qObsHNSW); err != nil {
			return err
		}
		var err error
		if out.Semantic, err = scanCandidates(tx.Query(ctx, qObsSemantic, q.BankID, tags, vec, q.Limit)); err != nil {
			return fmt.Errorf("semantic: %w", err)
		}
		if len(q.Terms) > 0 || len(q.EntityIDs) > 0 {
			terms, ents := q.Terms, q.EntityIDs
			if terms == nil {
				terms = []string{}
			}
			if ents == nil {
				ents = []uuid.UUID{}
			}
			if out.Keyword, err = scanCandidates(tx.Query(ctx, qObsKeyword, q.BankID, tags, vec, q.Limit, terms, ents)); err != nil {
				return fmt.Errorf("keyword: %w", err)
			}
		}
		if q.Slot != "" {
			if out.Slot, err = scanCandidates(tx.Query(ctx, qObsSlot, q.BankID, tags, vec, q.Limit, q.Slot)); err != nil {
				return fmt.Errorf("slot: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("observation candidates bank %s: %w", q.BankID, err)
	}
	return out, nil
}

func scanCandidates(rows pgx.Rows, err error) ([]ObservationCandidate, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ObservationCandidate
	for rows.Next() {
		var c ObservationCandidate
		var n int32
		var meta map[string]any
		var vec *pgvector.HalfVector
		if err := rows.Scan(&c.ID, &c.Text, &c.Tags, &n, &meta, &c.Similarity, &c.LastEvidence, &vec); err != nil {
			return nil, err
		}
		c.ProofCount = int(n)
		c.Metadata = map[string]string{}
		for k, v := range meta {
			if s, ok := v.(string); ok {
				c.Metadata[k] = s
			}
		}
		if vec != nil {
			c.Embedding = vec.Slice()
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// ApplyConsolidation writes one decision and marks its facts consolidated
// in the same transaction. The facts are locked first: if any of them is
// already consolidated, nothing is written (Applied false), so a decision
// is applied at most once even when two workers or a restarted worker
// adjudicated the same facts. Inserts use derived ids and ON CONFLICT DO
// NOTHING as a second line of defence.
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
		rows, err := tx.Query(ctx, qLockFacts, a.BankID, a.FactIDs)
		if err != nil {
			return fmt.Errorf("lock facts: %w", err)
		}
		locked, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return fmt.Errorf("lock facts: %w", err)
		}
		if len(locked) != len(uniqueIDs(a.FactIDs)) {
			return nil
		}
		touched := []uuid.UUID{}
		for _, e := range a.Edits {
			if err := applyEdit(ctx, tx, a, e, &out); err != nil {
				return fmt.Errorf("%s observation %s: %w", e.Kind, e.ObservationID, err)
			}
			if !slices.Contains(touched, e.ObservationID) {
				touched = append(touched, e.ObservationID)
			}
		}
		if a.MergeThreshold > 0 {
			for _, e := range a.Edits {
				if e.Kind != EditCreate && e.Kind != EditUpdate {
					continue
				}
				survivor, merged, err := mergeNearDuplicates(ctx, tx, a, e.ObservationID)
				if err != nil {
					return fmt.Errorf("merge near-duplicates of %s: %w", e.ObservationID, err)
				}
				out.Merged += merged
				if merged > 0 && !slices.Contains(touched, survivor) {
					touched = append(touched, survivor)
				}
			}
		}
		for _, id := range touched {
			if err := refreshObservationStats(ctx, tx, id, a.Trend); err != nil {
				return fmt.Errorf("observation %s stats: %w", id, err)
			}
		}
		if _, err := tx.Exec(ctx, qMarkConsolidated, a.BankID, a.FactIDs, a.Now); err != nil {
			return fmt.Errorf("mark consolidated: %w", err)
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

func applyEdit(ctx context.Context, tx pgx.Tx, a ConsolidationApply, e ObsEdit, out *ApplyOutcome) error {
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
		if e.Text == "" || len(e.Embedding) == 0 {
			return errors.New("a new observation needs text and an embedding")
		}
		meta, err := metadataJSON(e.Metadata)
		if err != nil {
			return err
		}
		tags := e.Tags
		if tags == nil {
			tags = []string{}
		}
		tag, err := tx.Exec(ctx, qObsInsert, e.ObservationID, a.BankID, e.Text, pgvector.NewHalfVector(e.Embedding), e.SearchAux, a.Now, tags, meta)
		if err != nil {
			return err
		}
		if tag.RowsAffected() > 0 {
			out.Created++
			if _, err := tx.Exec(ctx, qObsHistory, e.ObservationID, "create", nil, e.Text, e.Reason, sources, a.Now); err != nil {
				return err
			}
		}
		if len(e.EntityIDs) > 0 {
			if _, err := tx.Exec(ctx, qObsUnitEntities, e.ObservationID, e.EntityIDs); err != nil {
				return err
			}
		}
	case EditUpdate, EditInvalidate, EditEvidence:
		var old, state string
		if err := tx.QueryRow(ctx, qObsLockText, a.BankID, e.ObservationID).Scan(&old, &state); err != nil {
			return translate(err)
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
			if _, err := tx.Exec(ctx, qObsUpdate, e.ObservationID, e.Text, pgvector.NewHalfVector(e.Embedding), e.SearchAux, meta, a.Now); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, qObsHistory, e.ObservationID, "update", old, e.Text, e.Reason, sources, a.Now); err != nil {
				return err
			}
			out.Updated++
		case EditInvalidate:
			if state == "invalidated" {
				break
			}
			if _, err := tx.Exec(ctx, qObsInvalidate, e.ObservationID, e.Reason, a.Now); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, qObsHistory, e.ObservationID, "invalidate", old, nil, e.Reason, sources, a.Now); err != nil {
				return err
			}
			out.Invalidated++
		}
	default:
		return fmt.Errorf("unknown edit kind %q", e.Kind)
	}
	if len(e.Evidence) > 0 {
		quotes := make([]string, len(e.Evidence))
		rel := make([]float32, len(e.Evidence))
		at := make([]time.Time, len(e.Evidence))
		for i, ev := range e.Evidence {
			quotes[i], rel[i], at[i] = ev.Quote, ev.Relevance, ev.At
		}
		tag, err := tx.Exec(ctx, qObsEvidence, e.ObservationID, memIDs, quotes, rel, at)
		if err != nil {
			return fmt.Errorf("evidence: %w", err)
		}
		out.Evidence += int(tag.RowsAffected())
	}
	return nil
}

// mergeNearDuplicates folds the valid observations of id's scope that are
// within the merge threshold into one survivor: the one with the most
// evidence (then the oldest), so that long-lived ids that mental models
// cite survive. The others are invalidated with a reason; nothing is
// deleted.
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

func refreshObservationStats(ctx context.Context, tx pgx.Tx, id uuid.UUID, trend func([]time.Time) string) error {
	var times []time.Time
	if err := tx.QueryRow(ctx, qObsEvidenceTimes, id).Scan(&times); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, qObsStats, id, len(times), trend(times))
	return err
}

// RefreshTrends recomputes the trend of every valid observation of a bank
// (labels age even without new evidence: NEW becomes STABLE or STALE) and
// writes those that changed. It returns how many changed.
func (s *Store) RefreshTrends(ctx context.Context, bankID string, trend func([]time.Time) string) (int, error) {
	rows, err := s.pool.Query(ctx, qObsTrends, bankID)
	if err != nil {
		return 0, fmt.Errorf("refresh trends bank %s: %w", bankID, err)
	}
	var ids []uuid.UUID
	var labels []string
	for rows.Next() {
		var id uuid.UUID
		var cur string
		var times []time.Time
		if err := rows.Scan(&id, &cur, &times); err != nil {
			rows.Close()
			return 0, fmt.Errorf("refresh trends bank %s: %w", bankID, err)
		}
		if l := trend(times); l != cur {
			ids = append(ids, id)
			labels = append(labels, l)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("refresh trends bank %s: %w", bankID, err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	if _, err := s.pool.Exec(ctx, qObsSetTrends, ids, labels); err != nil {
		return 0, fmt.Errorf("refresh trends bank %s: %w", bankID, err)
	}
	return len(ids), nil
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
		if _, err := tx.Exec(ctx, qObsHNSW); err != nil {
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
