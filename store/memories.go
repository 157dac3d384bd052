package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Memory is one memory unit as the API shows it: a world or experience
// fact, or an observation.
type Memory struct {
	ID            uuid.UUID         `json:"id"`
	BankID        string            `json:"bank_id"`
	Type          string            `json:"type"`
	Text          string            `json:"text"`
	Context       string            `json:"context"`
	OccurredStart *time.Time        `json:"occurred_start"`
	OccurredEnd   *time.Time        `json:"occurred_end"`
	MentionedAt   time.Time         `json:"mentioned_at"`
	Tags          []string          `json:"tags"`
	Metadata      map[string]string `json:"metadata"`
	DocumentID    string            `json:"document_id"`
	ChunkID       *uuid.UUID        `json:"chunk_id"`
	SourceEventID string            `json:"source_event_id"`
	ProofCount    int               `json:"proof_count"`
	State         string            `json:"state"`
	InvalidReason string            `json:"invalid_reason,omitempty"`
	Trend         string            `json:"trend,omitempty"`
	Entities      []EntityName      `json:"entities"`
	CreatedAt     time.Time         `json:"created_at"`
	UpdatedAt     time.Time         `json:"updated_at"`
	// ReplyTo is the quote of the turn a fact answers, which its vector
	// embeds before the text (extract.EmbeddingTextOf). Not part of the
	// API's memory: Context shows the same quote after the event's label.
	ReplyTo string `json:"-"`
}

// EntityName identifies an entity a memory mentions.
type EntityName struct {
	ID   uuid.UUID `json:"id"`
	Name string    `json:"name"`
}

// MemoryFilter selects memories for ListMemories. Empty fields do not
// filter.
type MemoryFilter struct {
	// Type is world, experience or observation.
	Type string
	// Q keeps memories whose text contains it, case-insensitively.
	Q string
	// State is valid (the default), invalidated or all.
	State string
	// DocumentID keeps the memories of one document.
	DocumentID string
	// Entity keeps the memories that mention this entity.
	Entity *uuid.UUID
	// Tags, with TagsMatch (any, all, any_strict, all_strict, exact;
	// empty: memories carrying at least one of them), filters by tags.
	Tags      []string
	TagsMatch string
	// TimeField (created_at, updated_at, mentioned_at, occurred_start,
	// occurred_end) orders the list and, with Start and End, bounds it to
	// [Start, End); memories without a value on it are left out.
	TimeField  string
	Start, End *time.Time
	// From and To bound mentioned_at: From <= mentioned_at < To.
	From, To *time.Time
	// Consolidation is pending or done (facts only).
	Consolidation string
	Limit         int
	Offset        int
}

// memoryCols is shared by every memory query so that scanMemory fits all.
// Entities are aggregated per row: merged entities are shown as their
// survivor, since a merge moves unit_entities.
const memoryCols = `m.id, m.bank_id, m.fact_type, m.text, m.context, m.occurred_start, m.occurred_end, m.mentioned_at,
	m.tags, m.metadata, COALESCE(m.document_id, ''), m.chunk_id, COALESCE(m.source_event_id, ''), m.proof_count,
	m.state, COALESCE(m.invalid_reason, ''), COALESCE(m.trend, ''),
	COALESCE((SELECT jsonb_agg(jsonb_build_object('id', e.id, 'name', e.canonical_name) ORDER BY e.canonical_name)
		FROM unit_entities ue JOIN entities e ON e.id = ue.entity_id WHERE ue.unit_id = m.id), '[]'::jsonb),
	m.created_at, m.updated_at, m.reply_to`

// memoryWhere is the filter of MemoryFilter, shared by the list and its
// count. The time field is picked by CASE over a fixed set of columns, so
// no SQL is built from input.
const memoryWhere = `m.bank_id = $1
		  AND ($2 = '' OR m.fact_type = $2)
		  AND ($3 = '' OR strpos(lower(m.text), lower($3)) > 0 OR strpos(lower(m.context), lower($3)) > 0)
		  AND ($4 = 'all' OR m.state = $4)
		  AND ($5 = '' OR m.document_id = $5)
		  AND ($6::uuid IS NULL OR EXISTS (SELECT 1 FROM unit_entities ue WHERE ue.unit_id = m.id AND ue.entity_id = $6))
		  AND (cardinality($7::text[]) = 0 OR CASE $8
				WHEN 'any' THEN m.tags && $7 OR m.tags = '{}'
				WHEN 'all' THEN m.tags @> $7 OR m.tags = '{}'
				WHEN 'any_strict' THEN m.tags && $7
				WHEN 'all_strict' THEN m.tags @> $7
				WHEN 'exact' THEN m.tags @> $7 AND m.tags <@ $7
				ELSE m.tags && $7 END)
		  AND ($8 <> 'exact' OR cardinality($7::text[]) > 0 OR m.tags = '{}')
		  AND ($9 = '' OR (` + memoryTime + `) IS NOT NULL)
		  AND ($10::timestamptz IS NULL OR (` + memoryTime + `) >= $10)
		  AND ($11::timestamptz IS NULL OR (` + memoryTime + `) < $11)
		  AND ($12 = '' OR ($12 = 'pending' AND EXISTS (SELECT 1 FROM consolidation_queue cq WHERE cq.unit_id = m.id))
				OR ($12 = 'done' AND (m.fact_type = 'observation'
					OR EXISTS (SELECT 1 FROM unit_consolidations uc WHERE uc.unit_id = m.id))))
		  AND ($13::timestamptz IS NULL OR m.mentioned_at >= $13::timestamptz)
		  AND ($14::timestamptz IS NULL OR m.mentioned_at < $14::timestamptz)`

const memoryTime = `CASE $9 WHEN 'created_at' THEN m.created_at WHEN 'updated_at' THEN m.updated_at
		WHEN 'occurred_start' THEN m.occurred_start WHEN 'occurred_end' THEN m.occurred_end ELSE m.mentioned_at END`

const (
	qMemoryList = `SELECT ` + memoryCols + `, count(*) OVER ()
		FROM memory_units m
		WHERE ` + memoryWhere + `
		ORDER BY (` + memoryTime + `) DESC NULLS LAST, m.id
		LIMIT $15 OFFSET $16`
	qMemoryCount      = `SELECT count(*) FROM memory_units m WHERE ` + memoryWhere
	qMemoryGet        = `SELECT ` + memoryCols + ` FROM memory_units m WHERE m.bank_id = $1 AND m.id = $2`
	qMemoryInvalidate = `UPDATE memory_units SET state = 'invalidated', invalid_reason = $3, updated_at = now()
		WHERE bank_id = $1 AND id = $2
		RETURNING fact_type, text`
	qObservationHistoryAdd = `INSERT INTO observation_history (observation_id, action, old_text, new_text, reason, memory_ids)
		VALUES ($1, $2, $3, $4, $5, $6)`
)

func scanMemory(r scanner, extra ...any) (Memory, error) {
	var m Memory
	var meta, ents []byte
	dest := []any{&m.ID, &m.BankID, &m.Type, &m.Text, &m.Context, &m.OccurredStart, &m.OccurredEnd, &m.MentionedAt,
		&m.Tags, &meta, &m.DocumentID, &m.ChunkID, &m.SourceEventID, &m.ProofCount, &m.State, &m.InvalidReason,
		&m.Trend, &ents, &m.CreatedAt, &m.UpdatedAt, &m.ReplyTo}
	if err := r.Scan(append(dest, extra...)...); err != nil {
		return m, err
	}
	if err := json.Unmarshal(meta, &m.Metadata); err != nil {
		return m, fmt.Errorf("memory %s metadata: %w", m.ID, err)
	}
	if err := json.Unmarshal(ents, &m.Entities); err != nil {
		return m, fmt.Errorf("memory %s entities: %w", m.ID, err)
	}
	if m.Tags == nil {
		m.Tags = []string{}
	}
	if m.Metadata == nil {
		m.Metadata = map[string]string{}
	}
	return m, nil
}

func (f MemoryFilter) args(bankID string) []any {
	tags := f.Tags
	if tags == nil {
		tags = []string{}
	}
	return []any{bankID, f.Type, f.Q, f.State, f.DocumentID, f.Entity, tags, f.TagsMatch, f.TimeField, f.Start, f.End, f.Consolidation, f.From, f.To}
}

// ListMemories returns one page of a bank's memories, newest mention
// first, and the total number that match the filter.
func (s *Store) ListMemories(ctx context.Context, bankID string, f MemoryFilter) ([]Memory, int, error) {
	if f.State == "" {
		f.State = "valid"
	}
	rows, err := s.pool.Query(ctx, qMemoryList, append(f.args(bankID), f.Limit, f.Offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("list memories bank %s: %w", bankID, err)
	}
	out, total, err := countedRows(rows, scanMemory)
	if err != nil {
		return nil, 0, fmt.Errorf("list memories bank %s: %w", bankID, err)
	}
	if len(out) == 0 && f.Offset > 0 {
		// The window count is lost on an empty page past the end; count
		// separately so paging clients still learn the total.
		total, err = s.countMemories(ctx, bankID, f)
		if err != nil {
			return nil, 0, err
		}
	}
	return out, total, nil
}

func (s *Store) countMemories(ctx context.Context, bankID string, f MemoryFilter) (int, error) {
	var n int64
	err := s.pool.QueryRow(ctx, qMemoryCount, f.args(bankID)...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count memories bank %s: %w", bankID, err)
	}
	return int(n), nil
}

// GetMemory returns one memory of a bank, or ErrNotFound (also when the
// id belongs to another bank).
func (s *Store) GetMemory(ctx context.Context, bankID string, id uuid.UUID) (Memory, error) {
	m, err := scanMemory(s.pool.QueryRow(ctx, qMemoryGet, bankID, id))
	if err != nil {
		return m, fmt.Errorf("get memory %s/%s: %w", bankID, id, translate(err))
	}
	return m, nil
}

// InvalidateMemory marks a memory invalidated with a reason. The row stays,
// so evidence and history that cite it remain explainable; recall skips
// it. Invalidating an observation is recorded in its history.
func (s *Store) InvalidateMemory(ctx context.Context, bankID string, id uuid.UUID, reason string) (Memory, error) {
	var m Memory
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		var typ, text string
		if err := tx.QueryRow(ctx, qMemoryInvalidate, bankID, id, reason).Scan(&typ, &text); err != nil {
			return translate(err)
		}
		if typ == "observation" {
			if _, err := tx.Exec(ctx, qObservationHistoryAdd, id, "invalidate", text, nil, reason, []uuid.UUID{}); err != nil {
				return fmt.Errorf("history: %w", err)
			}
		}
		var err error
		m, err = scanMemory(tx.QueryRow(ctx, qMemoryGet, bankID, id))
		return err
	})
	if err != nil {
		return m, fmt.Errorf("invalidate memory %s/%s: %w", bankID, id, err)
	}
	return m, nil
}
