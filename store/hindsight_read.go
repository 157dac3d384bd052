package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Read helpers for the Hindsight-shaped answers of the HTTP API: the chunk
// behind each recalled fact, the observations about each entity, the
// evidence behind each observation.

// MemoryChunk is the chunk a memory was extracted from.
type MemoryChunk struct {
	ChunkID    uuid.UUID
	DocumentID string
	Index      int
	Text       string
	CreatedAt  time.Time
}

const qMemoryChunks = `SELECT m.id, c.id, c.document_id, c.chunk_index, c.text, c.created_at
	FROM memory_units m JOIN chunks c ON c.id = m.chunk_id
	WHERE m.bank_id = $1 AND m.id = ANY($2)`

// MemoryChunks returns the chunk of each of the given memories that has one.
func (s *Store) MemoryChunks(ctx context.Context, bankID string, ids []uuid.UUID) (map[uuid.UUID]MemoryChunk, error) {
	rows, err := s.pool.Query(ctx, qMemoryChunks, bankID, ids)
	if err != nil {
		return nil, fmt.Errorf("memory chunks bank %s: %w", bankID, err)
	}
	defer rows.Close()
	out := map[uuid.UUID]MemoryChunk{}
	for rows.Next() {
		var id uuid.UUID
		var c MemoryChunk
		if err := rows.Scan(&id, &c.ChunkID, &c.DocumentID, &c.Index, &c.Text, &c.CreatedAt); err != nil {
			return nil, err
		}
		out[id] = c
	}
	return out, rows.Err()
}

// EntityObservation is an observation that mentions an entity.
type EntityObservation struct {
	Text        string    `json:"text"`
	MentionedAt time.Time `json:"mentioned_at"`
}

// The best-supported observations first, then the most recent.
const qEntityObservations = `SELECT entity_id, text, mentioned_at FROM (
		SELECT ue.entity_id, m.text, m.mentioned_at,
			row_number() OVER (PARTITION BY ue.entity_id ORDER BY m.proof_count DESC, m.mentioned_at DESC, m.id) AS rn
		FROM unit_entities ue JOIN memory_units m ON m.id = ue.unit_id
		WHERE ue.entity_id = ANY($2) AND m.bank_id = $1 AND m.fact_type = 'observation' AND m.state = 'valid') x
	WHERE rn <= $3 ORDER BY entity_id, rn`

// EntityObservations returns up to perEntity valid observations about each
// of the given entities.
func (s *Store) EntityObservations(ctx context.Context, bankID string, ids []uuid.UUID, perEntity int) (map[uuid.UUID][]EntityObservation, error) {
	rows, err := s.pool.Query(ctx, qEntityObservations, bankID, ids, perEntity)
	if err != nil {
		return nil, fmt.Errorf("entity observations bank %s: %w", bankID, err)
	}
	defer rows.Close()
	out := map[uuid.UUID][]EntityObservation{}
	for rows.Next() {
		var id uuid.UUID
		var o EntityObservation
		if err := rows.Scan(&id, &o.Text, &o.MentionedAt); err != nil {
			return nil, err
		}
		out[id] = append(out[id], o)
	}
	return out, rows.Err()
}

const qObservationSources = `SELECT e.observation_id, e.memory_id FROM observation_evidence e
	JOIN memory_units o ON o.id = e.observation_id
	WHERE o.bank_id = $1 AND e.observation_id = ANY($2)
	ORDER BY e.observation_id, e.relevance DESC, e.memory_id`

// ObservationSources returns the facts cited as evidence by each of the
// given observations, most relevant first.
func (s *Store) ObservationSources(ctx context.Context, bankID string, ids []uuid.UUID) (map[uuid.UUID][]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, qObservationSources, bankID, ids)
	if err != nil {
		return nil, fmt.Errorf("observation sources bank %s: %w", bankID, err)
	}
	defer rows.Close()
	out := map[uuid.UUID][]uuid.UUID{}
	for rows.Next() {
		var o, m uuid.UUID
		if err := rows.Scan(&o, &m); err != nil {
			return nil, err
		}
		out[o] = append(out[o], m)
	}
	return out, rows.Err()
}

const qMemoriesByID = `SELECT ` + memoryCols + ` FROM memory_units m WHERE m.bank_id = $1 AND m.id = ANY($2)`

// GetMemories returns the given memories of a bank (those that exist), in
// no particular order.
func (s *Store) GetMemories(ctx context.Context, bankID string, ids []uuid.UUID) ([]Memory, error) {
	rows, err := s.pool.Query(ctx, qMemoriesByID, bankID, ids)
	if err != nil {
		return nil, fmt.Errorf("get memories bank %s: %w", bankID, err)
	}
	defer rows.Close()
	var out []Memory
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, fmt.Errorf("get memories bank %s: %w", bankID, err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}
