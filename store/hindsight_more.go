package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	pgvector "github.com/pgvector/pgvector-go"
)

// MemoryEdit changes the set fields of a memory (Hindsight's PATCH
// …/memories/{id}). A new Text needs its Embedding, of the text after
// EmbeddedReplyTo (extract.EmbeddingTextOf): the memory's reply_to when it
// was read. The edit fails with ErrConflict when the stored reply_to
// differs by then (a rescan redacted it), so a vector never embeds a
// quote the row no longer holds.
type MemoryEdit struct {
	Text            *string
	Embedding       []float32
	EmbeddedReplyTo string
	Context         *string
	OccurredStart   *time.Time
	OccurredEnd     *time.Time
	MentionedAt     *time.Time
	FactType        *string
	// State is valid or invalidated, with Reason.
	State  *string
	Reason string
}

const (
	qMemoryLock = `SELECT fact_type, text, state, reply_to FROM memory_units WHERE bank_id = $1 AND id = $2 FOR UPDATE`
	qMemoryEdit = `UPDATE memory_units SET text = COALESCE($3, text), context = COALESCE($4, context),
			occurred_start = COALESCE($5, occurred_start), occurred_end = COALESCE($6, occurred_end),
			mentioned_at = COALESCE($7, mentioned_at), fact_type = COALESCE($8, fact_type),
			embedding = COALESCE($9, embedding), updated_at = now()
		WHERE bank_id = $1 AND id = $2`
	qMemoryState = `UPDATE memory_units SET state = $3, invalid_reason = CASE WHEN $3 = 'invalidated' THEN $4 END, updated_at = now()
		WHERE bank_id = $1 AND id = $2`
	qMemoryHistory = `SELECT h.id, h.action, h.old_text, h.new_text, h.reason, h.memory_ids, h.changed_at
		FROM observation_history h JOIN memory_units m ON m.id = h.observation_id
		WHERE m.bank_id = $1 AND h.observation_id = $2 ORDER BY h.id DESC LIMIT 500`
)

// EditMemory applies an edit and records it in the memory's history, in
// one transaction.
func (s *Store) EditMemory(ctx context.Context, bankID string, id uuid.UUID, e MemoryEdit) (Memory, error) {
	var m Memory
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		var typ, text, state, replyTo string
		if err := tx.QueryRow(ctx, qMemoryLock, bankID, id).Scan(&typ, &text, &state, &replyTo); err != nil {
			return translate(err)
		}
		if e.Embedding != nil && replyTo != e.EmbeddedReplyTo {
			return fmt.Errorf("reply_to changed since the new text was embedded: %w", ErrConflict)
		}
		var emb any
		if e.Embedding != nil {
			emb = pgvector.NewHalfVector(e.Embedding)
		}
		if _, err := tx.Exec(ctx, qMemoryEdit, bankID, id, e.Text, e.Context, e.OccurredStart, e.OccurredEnd, e.MentionedAt, e.FactType, emb); err != nil {
			return err
		}
		if e.Text != nil || e.Context != nil || e.OccurredStart != nil || e.OccurredEnd != nil || e.MentionedAt != nil || e.FactType != nil {
			newText := text
			if e.Text != nil {
				newText = *e.Text
			}
			if _, err := tx.Exec(ctx, qObservationHistoryAdd, id, "edit", text, newText, e.Reason, []uuid.UUID{}); err != nil {
				return err
			}
		}
		if e.State != nil && *e.State != state {
			if _, err := tx.Exec(ctx, qMemoryState, bankID, id, *e.State, e.Reason); err != nil {
				return err
			}
			action := map[string]string{"invalidated": "invalidate", "valid": "restore"}[*e.State]
			if _, err := tx.Exec(ctx, qObservationHistoryAdd, id, action, text, nil, e.Reason, []uuid.UUID{}); err != nil {
				return err
			}
		}
		var err error
		m, err = scanMemory(tx.QueryRow(ctx, qMemoryGet, bankID, id))
		return err
	})
	if err != nil {
		return m, fmt.Errorf("edit memory %s/%s: %w", bankID, id, err)
	}
	return m, nil
}

// HistoryEntry is one recorded change to a memory or observation.
type HistoryEntry struct {
	ID        int64       `json:"id"`
	Action    string      `json:"action"`
	OldText   *string     `json:"old_text"`
	NewText   *string     `json:"new_text"`
	Reason    string      `json:"reason"`
	MemoryIDs []uuid.UUID `json:"memory_ids"`
	ChangedAt time.Time   `json:"changed_at"`
}

// MemoryHistory returns the changes of a memory, newest first; ErrNotFound
// when the memory is not the bank's.
func (s *Store) MemoryHistory(ctx context.Context, bankID string, id uuid.UUID) ([]HistoryEntry, error) {
	if _, err := s.GetMemory(ctx, bankID, id); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, qMemoryHistory, bankID, id)
	if err != nil {
		return nil, fmt.Errorf("memory history %s/%s: %w", bankID, id, err)
	}
	defer rows.Close()
	out := []HistoryEntry{}
	for rows.Next() {
		var h HistoryEntry
		if err := rows.Scan(&h.ID, &h.Action, &h.OldText, &h.NewText, &h.Reason, &h.MemoryIDs, &h.ChangedAt); err != nil {
			return nil, err
		}
		if h.MemoryIDs == nil {
			h.MemoryIDs = []uuid.UUID{}
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// Link is a link between two memories.
type Link struct {
	From   uuid.UUID `json:"from_id"`
	To     uuid.UUID `json:"to_id"`
	Type   string    `json:"link_type"`
	Weight float32   `json:"weight"`
}

const qLinksAmong = `SELECT from_id, to_id, link_type, weight FROM memory_links
	WHERE bank_id = $1 AND from_id = ANY($2) AND to_id = ANY($2) ORDER BY weight DESC LIMIT 5000`

// LinksAmong returns the links between the given memories.
func (s *Store) LinksAmong(ctx context.Context, bankID string, ids []uuid.UUID) ([]Link, error) {
	rows, err := s.pool.Query(ctx, qLinksAmong, bankID, ids)
	if err != nil {
		return nil, fmt.Errorf("links bank %s: %w", bankID, err)
	}
	defer rows.Close()
	out := []Link{}
	for rows.Next() {
		var l Link
		if err := rows.Scan(&l.From, &l.To, &l.Type, &l.Weight); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// EntityEdge is how often two entities are mentioned by the same memory.
type EntityEdge struct {
	A, B        uuid.UUID
	Count       int
	LastTogther time.Time
}

const qEntityCooccurrence = `SELECT a.entity_id, b.entity_id, count(*), max(m.mentioned_at)
	FROM unit_entities a JOIN unit_entities b ON b.unit_id = a.unit_id AND a.entity_id < b.entity_id
	JOIN memory_units m ON m.id = a.unit_id
	WHERE m.bank_id = $1 AND m.state = 'valid' AND a.entity_id = ANY($2) AND b.entity_id = ANY($2)
	GROUP BY a.entity_id, b.entity_id HAVING count(*) >= $3 ORDER BY count(*) DESC LIMIT 5000`

// EntityCooccurrence counts, for each pair of the given entities, the
// valid memories that mention both (at least min).
func (s *Store) EntityCooccurrence(ctx context.Context, bankID string, ids []uuid.UUID, min int) ([]EntityEdge, error) {
	rows, err := s.pool.Query(ctx, qEntityCooccurrence, bankID, ids, min)
	if err != nil {
		return nil, fmt.Errorf("entity graph bank %s: %w", bankID, err)
	}
	defer rows.Close()
	var out []EntityEdge
	for rows.Next() {
		var e EntityEdge
		if err := rows.Scan(&e.A, &e.B, &e.Count, &e.LastTogther); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// DocumentDetail is one document with its text and what was built from it.
type DocumentDetail struct {
	Document
	Text            string         `json:"original_text"`
	NodesByFactType map[string]int `json:"nodes_by_fact_type"`
	EditedAt        *time.Time     `json:"edited_at"`
}

const (
	qDocumentGet = `SELECT d.id, d.bank_id, d.context, d.tags, d.metadata, d.created_at, d.updated_at, d.edited_at,
			COALESCE((SELECT string_agg(c.text, E'\n\n' ORDER BY c.created_at, c.chunk_index) FROM chunks c
				WHERE c.bank_id = d.bank_id AND c.document_id = d.id), ''),
			(SELECT count(*) FROM chunks c WHERE c.bank_id = d.bank_id AND c.document_id = d.id)
		FROM documents d WHERE d.bank_id = $1 AND d.id = $2`
	qDocumentTypes    = `SELECT fact_type, count(*) FROM memory_units WHERE bank_id = $1 AND document_id = $2 AND state = 'valid' GROUP BY fact_type`
	qDocumentTags     = `UPDATE documents SET tags = $3, edited_at = now(), updated_at = now() WHERE bank_id = $1 AND id = $2`
	qDocumentUnitTags = `UPDATE memory_units SET tags = $3, updated_at = now()
		WHERE bank_id = $1 AND document_id = $2 AND fact_type <> 'observation'`
	qChunkList = `SELECT id, bank_id, document_id, chunk_index, text, created_at, started_at, count(*) OVER () FROM chunks
		WHERE bank_id = $1 AND document_id = $2 ORDER BY created_at, chunk_index, id LIMIT $3 OFFSET $4`
	qChunkGet       = `SELECT id, bank_id, document_id, chunk_index, text, created_at FROM chunks WHERE id = $1`
	qDocumentEvents = `SELECT event_key, facts, ingested_at FROM events WHERE bank_id = $1 AND document_id = $2 ORDER BY ingested_at, event_key`
	qDocumentEdits  = `SELECT h.observation_id, h.action, h.changed_at FROM observation_history h
		JOIN memory_units m ON m.id = h.observation_id
		WHERE m.bank_id = $1 AND m.document_id = $2 AND h.action IN ('edit', 'invalidate', 'restore') ORDER BY h.changed_at`
)

// GetDocument returns one document with its text (its chunks in order).
func (s *Store) GetDocument(ctx context.Context, bankID, docID string) (DocumentDetail, error) {
	var d DocumentDetail
	var meta []byte
	var chunks int
	err := s.pool.QueryRow(ctx, qDocumentGet, bankID, docID).Scan(&d.ID, &d.BankID, &d.Context, &d.Tags, &meta, &d.CreatedAt,
		&d.UpdatedAt, &d.EditedAt, &d.Text, &chunks)
	if err != nil {
		return d, fmt.Errorf("get document %s/%s: %w", bankID, docID, translate(err))
	}
	d.Chunks, d.TextLength = chunks, len(d.Text)
	if err := json.Unmarshal(meta, &d.Metadata); err != nil {
		return d, err
	}
	if d.Tags == nil {
		d.Tags = []string{}
	}
	d.NodesByFactType = map[string]int{}
	rows, err := s.pool.Query(ctx, qDocumentTypes, bankID, docID)
	if err != nil {
		return d, err
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		var n int
		if err := rows.Scan(&t, &n); err != nil {
			return d, err
		}
		d.NodesByFactType[t] = n
		d.Memories += n
	}
	return d, rows.Err()
}

// SetDocumentTags replaces the tags of a document and of the facts
// extracted from it.
func (s *Store) SetDocumentTags(ctx context.Context, bankID, docID string, tags []string) error {
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, qDocumentTags, bankID, docID, tags)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		_, err = tx.Exec(ctx, qDocumentUnitTags, bankID, docID, tags)
		return err
	})
	if err != nil {
		return fmt.Errorf("document %s/%s tags: %w", bankID, docID, err)
	}
	return nil
}

// Chunk is one stored chunk of a document.
type Chunk struct {
	ID         uuid.UUID `json:"chunk_id"`
	BankID     string    `json:"bank_id"`
	DocumentID string    `json:"document_id"`
	Index      int       `json:"chunk_index"`
	Text       string    `json:"chunk_text"`
	CreatedAt  time.Time `json:"created_at"`
	// StartedAt is when the chunk's messages were said (its event's
	// timestamp), which an export keeps so an import dates it the same.
	StartedAt *time.Time `json:"-"`
}

// ListChunks returns one page of a document's chunks, in order, and the
// total.
func (s *Store) ListChunks(ctx context.Context, bankID, docID string, limit, offset int) ([]Chunk, int, error) {
	rows, err := s.pool.Query(ctx, qChunkList, bankID, docID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("chunks %s/%s: %w", bankID, docID, err)
	}
	defer rows.Close()
	out := []Chunk{}
	total := 0
	for rows.Next() {
		var c Chunk
		var n int64
		if err := rows.Scan(&c.ID, &c.BankID, &c.DocumentID, &c.Index, &c.Text, &c.CreatedAt, &c.StartedAt, &n); err != nil {
			return nil, 0, err
		}
		total = int(n)
		out = append(out, c)
	}
	return out, total, rows.Err()
}

// GetChunk returns one chunk of any bank; the caller checks the bank.
func (s *Store) GetChunk(ctx context.Context, id uuid.UUID) (Chunk, error) {
	var c Chunk
	err := s.pool.QueryRow(ctx, qChunkGet, id).Scan(&c.ID, &c.BankID, &c.DocumentID, &c.Index, &c.Text, &c.CreatedAt)
	if err != nil {
		return c, fmt.Errorf("get chunk %s: %w", id, translate(err))
	}
	return c, nil
}

// DocumentEvent is one change to a document.
type DocumentEvent struct {
	Kind       string     `json:"kind"`
	At         time.Time  `json:"created_at"`
	EventKey   string     `json:"event_id,omitempty"`
	FactID     *uuid.UUID `json:"fact_id,omitempty"`
	FactsAdded int        `json:"facts_added"`
}

// DocumentHistory returns what happened to a document, oldest first: each
// event ingested into it, and each edit of a fact extracted from it.
func (s *Store) DocumentHistory(ctx context.Context, bankID, docID string) ([]DocumentEvent, error) {
	d, err := s.GetDocument(ctx, bankID, docID)
	if err != nil {
		return nil, err
	}
	var out []DocumentEvent
	rows, err := s.pool.Query(ctx, qDocumentEvents, bankID, docID)
	if err != nil {
		return nil, fmt.Errorf("document history %s/%s: %w", bankID, docID, err)
	}
	first := true
	for rows.Next() {
		var e DocumentEvent
		if err := rows.Scan(&e.EventKey, &e.FactsAdded, &e.At); err != nil {
			rows.Close()
			return nil, err
		}
		e.Kind = "append"
		if first {
			e.Kind, first = "retain", false
		}
		out = append(out, e)
	}
	rows.Close()
	if rows, err = s.pool.Query(ctx, qDocumentEdits, bankID, docID); err != nil {
		return nil, fmt.Errorf("document history %s/%s: %w", bankID, docID, err)
	}
	for rows.Next() {
		var id uuid.UUID
		var action string
		var at time.Time
		if err := rows.Scan(&id, &action, &at); err != nil {
			rows.Close()
			return nil, err
		}
		kind := map[string]string{"edit": "fact_edited", "invalidate": "fact_invalidated", "restore": "fact_restored"}[action]
		out = append(out, DocumentEvent{Kind: kind, At: at, FactID: &id})
	}
	rows.Close()
	if d.EditedAt != nil {
		out = append(out, DocumentEvent{Kind: "retag", At: *d.EditedAt})
	}
	sortEvents(out)
	return out, rows.Err()
}

func sortEvents(evs []DocumentEvent) {
	for i := 1; i < len(evs); i++ {
		for j := i; j > 0 && evs[j].At.Before(evs[j-1].At); j-- {
			evs[j], evs[j-1] = evs[j-1], evs[j]
		}
	}
}
