package store

import (
	"context"
	"fmt"
)

// Stats are a bank's counters (SPEC §5 GET …/stats).
type Stats struct {
	BankID               string `json:"bank_id"`
	Facts                int64  `json:"facts"`
	Observations         int64  `json:"observations"`
	Documents            int64  `json:"documents"`
	Chunks               int64  `json:"chunks"`
	Entities             int64  `json:"entities"`
	Links                int64  `json:"links"`
	MentalModels         int64  `json:"mental_models"`
	PendingConsolidation int64  `json:"pending_consolidation"`
	EventsIngested       int64  `json:"events_ingested"`
	EventsDeadLettered   int64  `json:"events_dead_lettered"`
}

const qStats = `SELECT
	(SELECT count(*) FROM memory_units WHERE bank_id = $1 AND fact_type <> 'observation' AND state = 'valid'),
	(SELECT count(*) FROM memory_units WHERE bank_id = $1 AND fact_type = 'observation' AND state = 'valid'),
	(SELECT count(*) FROM documents WHERE bank_id = $1),
	(SELECT count(*) FROM chunks WHERE bank_id = $1),
	(SELECT count(*) FROM entities WHERE bank_id = $1 AND merged_into IS NULL),
	(SELECT count(*) FROM memory_links WHERE bank_id = $1),
	(SELECT count(*) FROM mental_models WHERE bank_id = $1),
	(SELECT count(*) FROM consolidation_queue WHERE bank_id = $1),
	(SELECT count(*) FROM events WHERE bank_id = $1 AND unit_of IS NULL),
	(SELECT count(*) FROM dead_letters WHERE bank_id = $1)`

// BankStats returns the counters of one bank.
func (s *Store) BankStats(ctx context.Context, bankID string) (Stats, error) {
	st := Stats{BankID: bankID}
	err := s.pool.QueryRow(ctx, qStats, bankID).Scan(&st.Facts, &st.Observations, &st.Documents, &st.Chunks,
		&st.Entities, &st.Links, &st.MentalModels, &st.PendingConsolidation, &st.EventsIngested, &st.EventsDeadLettered)
	if err != nil {
		return st, fmt.Errorf("stats bank %s: %w", bankID, err)
	}
	return st, nil
}

const qEventsPersisted = `SELECT count(*) FROM events WHERE bank_id = $1 AND event_key = ANY($2::text[])`

// EventsPersisted counts how many of the given event keys are stored.
func (s *Store) EventsPersisted(ctx context.Context, bankID string, keys []string) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, qEventsPersisted, bankID, keys).Scan(&n); err != nil {
		return 0, fmt.Errorf("events persisted bank %s: %w", bankID, err)
	}
	return n, nil
}

const qTotalEvents = `SELECT (SELECT count(*) FROM events WHERE unit_of IS NULL), (SELECT count(*) FROM dead_letters)`

// TotalEvents counts ingested and dead-lettered events across banks.
func (s *Store) TotalEvents(ctx context.Context) (ingested, deadLettered int64, err error) {
	err = s.pool.QueryRow(ctx, qTotalEvents).Scan(&ingested, &deadLettered)
	return ingested, deadLettered, err
}

const qExistingEvents = `SELECT bank_id, event_key FROM events
	WHERE (bank_id, event_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`

// ExistingEvents returns which of the (bank, event key) pairs are already
// stored, as "bank\x00key" strings. The pipeline uses it to skip the
// extraction work of a replayed event.
func (s *Store) ExistingEvents(ctx context.Context, banks, keys []string) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, qExistingEvents, banks, keys)
	if err != nil {
		return nil, fmt.Errorf("existing events: %w", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var b, k string
		if err := rows.Scan(&b, &k); err != nil {
			return nil, err
		}
		out[b+"\x00"+k] = true
	}
	return out, rows.Err()
}

const qStoredChunks = `SELECT chunk_index FROM chunks WHERE bank_id = $1 AND event_key = $2`

// StoredChunks returns the indexes of the chunks of an event that are
// already persisted. Chunks are written in the same transaction as their
// facts, so a chunk listed here has all its facts stored: an event
// persisted in units resumes after a restart with the chunks not listed.
func (s *Store) StoredChunks(ctx context.Context, bankID, eventKey string) (map[int]bool, error) {
	rows, err := s.pool.Query(ctx, qStoredChunks, bankID, eventKey)
	if err != nil {
		return nil, fmt.Errorf("stored chunks of event %s/%s: %w", bankID, eventKey, err)
	}
	defer rows.Close()
	out := map[int]bool{}
	for rows.Next() {
		var i int
		if err := rows.Scan(&i); err != nil {
			return nil, fmt.Errorf("stored chunks of event %s/%s: %w", bankID, eventKey, err)
		}
		out[i] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("stored chunks of event %s/%s: %w", bankID, eventKey, err)
	}
	return out, nil
}
