package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Evidence is one fact an observation rests on, with the verbatim quote
// that supports it.
type Evidence struct {
	MemoryID  uuid.UUID `json:"memory_id"`
	Quote     string    `json:"quote"`
	Relevance float64   `json:"relevance"`
	Timestamp time.Time `json:"timestamp"`
}

// ObservationChange is one entry of an observation's history.
type ObservationChange struct {
	Action    string      `json:"action"`
	OldText   *string     `json:"old_text"`
	NewText   *string     `json:"new_text"`
	Reason    string      `json:"reason"`
	MemoryIDs []uuid.UUID `json:"memory_ids"`
	ChangedAt time.Time   `json:"changed_at"`
}

// Observation is an observation with everything that explains it.
type Observation struct {
	Memory
	Evidence []Evidence          `json:"evidence"`
	History  []ObservationChange `json:"history"`
}

const (
	qObservationGet = `SELECT ` + memoryCols + ` FROM memory_units m
		WHERE m.bank_id = $1 AND m.id = $2 AND m.fact_type = 'observation'`
	qObservationEvidence = `SELECT memory_id, quote, relevance, evidence_at FROM observation_evidence
		WHERE observation_id = $1 ORDER BY evidence_at, memory_id`
	qObservationHistory = `SELECT action, old_text, new_text, reason, memory_ids, changed_at FROM observation_history
		WHERE observation_id = $1 ORDER BY id`
)

// GetObservation returns one observation with its evidence (oldest first)
// and its history of changes, or ErrNotFound when the bank has no
// observation with that id.
func (s *Store) GetObservation(ctx context.Context, bankID string, id uuid.UUID) (Observation, error) {
	var o Observation
	m, err := scanMemory(s.pool.QueryRow(ctx, qObservationGet, bankID, id))
	if err != nil {
		return o, fmt.Errorf("get observation %s/%s: %w", bankID, id, translate(err))
	}
	o.Memory = m
	o.Evidence = []Evidence{}
	o.History = []ObservationChange{}
	rows, err := s.pool.Query(ctx, qObservationEvidence, id)
	if err != nil {
		return o, fmt.Errorf("observation %s evidence: %w", id, err)
	}
	for rows.Next() {
		var e Evidence
		var rel float32
		if err := rows.Scan(&e.MemoryID, &e.Quote, &rel, &e.Timestamp); err != nil {
			rows.Close()
			return o, fmt.Errorf("observation %s evidence: %w", id, err)
		}
		e.Relevance = float64(rel)
		o.Evidence = append(o.Evidence, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return o, fmt.Errorf("observation %s evidence: %w", id, err)
	}
	rows, err = s.pool.Query(ctx, qObservationHistory, id)
	if err != nil {
		return o, fmt.Errorf("observation %s history: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var c ObservationChange
		if err := rows.Scan(&c.Action, &c.OldText, &c.NewText, &c.Reason, &c.MemoryIDs, &c.ChangedAt); err != nil {
			return o, fmt.Errorf("observation %s history: %w", id, err)
		}
		if c.MemoryIDs == nil {
			c.MemoryIDs = []uuid.UUID{}
		}
		o.History = append(o.History, c)
	}
	if err := rows.Err(); err != nil {
		return o, fmt.Errorf("observation %s history: %w", id, err)
	}
	return o, nil
}
