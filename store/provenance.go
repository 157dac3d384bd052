package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// SourceEvent is the ingested event a fact came from.
type SourceEvent struct {
	EventKey   string    `json:"event_key"`
	DocumentID string    `json:"document_id"`
	Topic      string    `json:"topic"`
	Partition  int       `json:"partition"`
	Offset     int64     `json:"offset"`
	Facts      int       `json:"facts"`
	IngestedAt time.Time `json:"ingested_at"`
}

// DocumentRef is a fact's document.
type DocumentRef struct {
	ID        string            `json:"id"`
	Context   string            `json:"context"`
	Tags      []string          `json:"tags"`
	Metadata  map[string]string `json:"metadata"`
	CreatedAt time.Time         `json:"created_at"`
}

// ChunkRef is the chunk of text (after defense) a fact was extracted from.
type ChunkRef struct {
	ID         uuid.UUID  `json:"id"`
	ChunkIndex int        `json:"chunk_index"`
	Text       string     `json:"text"`
	Speaker    string     `json:"speaker"`
	StartedAt  *time.Time `json:"started_at"`
}

// EntityRef is an entity a memory mentions.
type EntityRef struct {
	ID   uuid.UUID `json:"id"`
	Name string    `json:"name"`
	Kind string    `json:"kind"`
}

// MemoryBrief is a short reference to a memory.
type MemoryBrief struct {
	ID          uuid.UUID `json:"id"`
	Type        string    `json:"type"`
	Text        string    `json:"text"`
	MentionedAt time.Time `json:"mentioned_at"`
	State       string    `json:"state"`
	Trend       string    `json:"trend,omitempty"`
}

// LinkRef is one link of a memory: out (this memory is from_id) or in.
type LinkRef struct {
	Direction string      `json:"direction"`
	LinkType  string      `json:"link_type"`
	Weight    float64     `json:"weight"`
	Memory    MemoryBrief `json:"memory"`
}

// SupportedObservation is an observation that cites a fact as evidence.
type SupportedObservation struct {
	ID    uuid.UUID `json:"id"`
	Text  string    `json:"text"`
	Trend string    `json:"trend"`
	Quote string    `json:"quote"`
}

// Provenance is everything that explains one memory: where it came from
// and what it is connected to.
type Provenance struct {
	Memory             Memory                 `json:"memory"`
	SourceMessageIndex *int                   `json:"source_message_index"`
	Event              *SourceEvent           `json:"event"`
	Document           *DocumentRef           `json:"document"`
	Chunk              *ChunkRef              `json:"chunk"`
	Entities           []EntityRef            `json:"entities"`
	Links              []LinkRef              `json:"links"`
	Observations       []SupportedObservation `json:"observations"`
}

// maxProvenanceLinks bounds the links shown: the user's own facts can have
// thousands of entity links.
const maxProvenanceLinks = 100

const (
	qProvMessageIndex = `SELECT source_message_index FROM memory_units WHERE bank_id = $1 AND id = $2`
	qProvEvent        = `SELECT event_key, document_id, topic, partition, "offset", facts, ingested_at
		FROM events WHERE bank_id = $1 AND event_key = $2`
	qProvDocument = `SELECT id, context, tags, metadata, created_at FROM documents WHERE bank_id = $1 AND id = $2`
	qProvChunk    = `SELECT id, chunk_index, text, speaker, started_at FROM chunks WHERE bank_id = $1 AND id = $2`
	qProvEntities = `SELECT e.id, e.canonical_name, e.kind FROM unit_entities ue JOIN entities e ON e.id = ue.entity_id
		WHERE ue.unit_id = $1 ORDER BY e.canonical_name`
	qProvLinks = `SELECT * FROM (
		SELECT 'out' AS dir, l.link_type, l.weight, m.id, m.fact_type, m.text, m.mentioned_at, m.state, COALESCE(m.trend, '')
			FROM memory_links l JOIN memory_units m ON m.id = l.to_id WHERE l.from_id = $1 AND l.bank_id = $2
		UNION ALL
		SELECT 'in', l.link_type, l.weight, m.id, m.fact_type, m.text, m.mentioned_at, m.state, COALESCE(m.trend, '')
			FROM memory_links l JOIN memory_units m ON m.id = l.from_id WHERE l.to_id = $1 AND l.bank_id = $2
		) x ORDER BY weight DESC, id LIMIT $3`
	qProvObservations = `SELECT o.id, o.text, COALESCE(o.trend, ''), ev.quote FROM observation_evidence ev
		JOIN memory_units o ON o.id = ev.observation_id
		WHERE ev.memory_id = $1 AND o.bank_id = $2 AND o.state = 'valid' ORDER BY ev.evidence_at, o.id LIMIT 50`
	qLookupMemories = `SELECT id, fact_type, text, mentioned_at, state, COALESCE(trend, '') FROM memory_units
		WHERE bank_id = $1 AND id = ANY($2::uuid[])`
)

// MemoryProvenance returns a memory with its source event, document,
// chunk, entities, links and the observations it supports, or ErrNotFound.
func (s *Store) MemoryProvenance(ctx context.Context, bankID string, id uuid.UUID) (Provenance, error) {
	var p Provenance
	m, err := s.GetMemory(ctx, bankID, id)
	if err != nil {
		return p, err
	}
	p.Memory = m
	wrap := func(what string, err error) error {
		return fmt.Errorf("provenance %s/%s %s: %w", bankID, id, what, err)
	}
	if err := s.pool.QueryRow(ctx, qProvMessageIndex, bankID, id).Scan(&p.SourceMessageIndex); err != nil {
		return p, wrap("message index", err)
	}
	if m.SourceEventID != "" {
		var e SourceEvent
		err := s.pool.QueryRow(ctx, qProvEvent, bankID, m.SourceEventID).Scan(&e.EventKey, &e.DocumentID, &e.Topic, &e.Partition, &e.Offset, &e.Facts, &e.IngestedAt)
		if err == nil {
			p.Event = &e
		} else if !errors.Is(translate(err), ErrNotFound) {
			return p, wrap("event", err)
		}
	}
	if m.DocumentID != "" {
		var d DocumentRef
		var meta []byte
		err := s.pool.QueryRow(ctx, qProvDocument, bankID, m.DocumentID).Scan(&d.ID, &d.Context, &d.Tags, &meta, &d.CreatedAt)
		if err == nil {
			if err := json.Unmarshal(meta, &d.Metadata); err != nil {
				return p, wrap("document metadata", err)
			}
			p.Document = &d
		} else if !errors.Is(translate(err), ErrNotFound) {
			return p, wrap("document", err)
		}
	}
	if m.ChunkID != nil {
		var c ChunkRef
		err := s.pool.QueryRow(ctx, qProvChunk, bankID, *m.ChunkID).Scan(&c.ID, &c.ChunkIndex, &c.Text, &c.Speaker, &c.StartedAt)
		if err == nil {
			p.Chunk = &c
		} else if !errors.Is(translate(err), ErrNotFound) {
			return p, wrap("chunk", err)
		}
	}
	p.Entities = []EntityRef{}
	rows, err := s.pool.Query(ctx, qProvEntities, id)
	if err != nil {
		return p, wrap("entities", err)
	}
	for rows.Next() {
		var e EntityRef
		if err := rows.Scan(&e.ID, &e.Name, &e.Kind); err != nil {
			rows.Close()
			return p, wrap("entities", err)
		}
		p.Entities = append(p.Entities, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return p, wrap("entities", err)
	}
	p.Links = []LinkRef{}
	rows, err = s.pool.Query(ctx, qProvLinks, id, bankID, maxProvenanceLinks)
	if err != nil {
		return p, wrap("links", err)
	}
	for rows.Next() {
		var l LinkRef
		var w float32
		b := &l.Memory
		if err := rows.Scan(&l.Direction, &l.LinkType, &w, &b.ID, &b.Type, &b.Text, &b.MentionedAt, &b.State, &b.Trend); err != nil {
			rows.Close()
			return p, wrap("links", err)
		}
		l.Weight = float64(w)
		p.Links = append(p.Links, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return p, wrap("links", err)
	}
	p.Observations = []SupportedObservation{}
	rows, err = s.pool.Query(ctx, qProvObservations, id, bankID)
	if err != nil {
		return p, wrap("observations", err)
	}
	defer rows.Close()
	for rows.Next() {
		var o SupportedObservation
		if err := rows.Scan(&o.ID, &o.Text, &o.Trend, &o.Quote); err != nil {
			return p, wrap("observations", err)
		}
		p.Observations = append(p.Observations, o)
	}
	if err := rows.Err(); err != nil {
		return p, wrap("observations", err)
	}
	return p, nil
}

// LookupMemories returns short references to the given memories of a
// bank, in no particular order; ids of other banks or unknown ids are left
// out.
func (s *Store) LookupMemories(ctx context.Context, bankID string, ids []uuid.UUID) ([]MemoryBrief, error) {
	rows, err := s.pool.Query(ctx, qLookupMemories, bankID, ids)
	if err != nil {
		return nil, fmt.Errorf("lookup memories bank %s: %w", bankID, err)
	}
	defer rows.Close()
	out := []MemoryBrief{}
	for rows.Next() {
		var b MemoryBrief
		if err := rows.Scan(&b.ID, &b.Type, &b.Text, &b.MentionedAt, &b.State, &b.Trend); err != nil {
			return nil, fmt.Errorf("lookup memories bank %s: %w", bankID, err)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}
