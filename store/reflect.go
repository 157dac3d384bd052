package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The reads behind reflect's tools (package reflect): mental models ranked
// against a question, and the source text behind recalled facts.

// MentalModelHit is a mental model ranked against a question.
type MentalModelHit struct {
	ID              uuid.UUID  `json:"id"`
	Name            string     `json:"name"`
	SourceQuery     string     `json:"source_query"`
	Content         string     `json:"content"`
	Tags            []string   `json:"tags"`
	LastRefreshedAt *time.Time `json:"last_refreshed_at"`
	// Score is the share (0–1) of the question's informative words that the
	// model's name, source question or content contains.
	Score float64 `json:"score"`
}

// MemoryContext is the chunk or document text a fact was extracted from.
type MemoryContext struct {
	MemoryID   uuid.UUID `json:"memory_id"`
	DocumentID string    `json:"document_id"`
	// ChunkID is set at depth chunk; the whole document has no single chunk.
	ChunkID *uuid.UUID `json:"chunk_id,omitempty"`
	Text    string     `json:"text"`
}

const (
	// qRankMentalModels scores every mental model of a bank by word overlap
	// with the question. A bank has tens of standing questions, so a scan
	// of its rows is cheaper than keeping an index current; the english
	// configuration drops stop words and stems, so "lives" meets "live".
	// Models with no overlap are still returned (after the matches) because
	// an agent asking for mental models wants to know which exist.
	qRankMentalModels = `WITH q AS (
		SELECT tsvector_to_array(to_tsvector('english', $2)) AS lex)
	SELECT m.id, m.name, m.source_query, m.content, m.tags, m.last_refreshed_at,
		CASE WHEN cardinality(q.lex) = 0 THEN 0
		ELSE (SELECT count(*) FROM unnest(q.lex) AS l
			WHERE l = ANY(tsvector_to_array(to_tsvector('english', m.name || ' ' || m.source_query || ' ' || m.content))))::float8
			/ cardinality(q.lex) END AS score
	FROM mental_models m, q
	WHERE m.bank_id = $1 AND ($4::text[] IS NULL OR cardinality($4::text[]) = 0 OR m.tags && $4::text[] OR cardinality(m.tags) = 0)
	ORDER BY score DESC, m.last_refreshed_at DESC NULLS LAST, m.name
	LIMIT $3`
	// qExpandChunks returns the chunk each fact was extracted from.
	qExpandChunks = `SELECT m.id, coalesce(m.document_id, ''), c.id, c.text
	FROM memory_units m JOIN chunks c ON c.id = m.chunk_id AND c.bank_id = m.bank_id
	WHERE m.bank_id = $1 AND m.id = ANY($2::uuid[])
	ORDER BY array_position($2::uuid[], m.id)`
	// qExpandDocuments returns each fact's whole document, its chunks in
	// order. Facts of one document share the text, so callers should
	// expect duplicates across ids and may drop them.
	qExpandDocuments = `SELECT m.id, m.document_id, d.text
	FROM memory_units m
	CROSS JOIN LATERAL (
		SELECT string_agg(c.text, E'\n' ORDER BY c.chunk_index) AS text
		FROM chunks c WHERE c.bank_id = m.bank_id AND c.document_id = m.document_id) d
	WHERE m.bank_id = $1 AND m.id = ANY($2::uuid[]) AND m.document_id IS NOT NULL AND d.text IS NOT NULL
	ORDER BY array_position($2::uuid[], m.id)`
)

// RankMentalModels returns at most limit mental models of a bank, best
// match to question first. Tags narrow to models that share a tag or carry
// none.
func (s *Store) RankMentalModels(ctx context.Context, bankID, question string, tags []string, limit int) ([]MentalModelHit, error) {
	rows, err := s.pool.Query(ctx, qRankMentalModels, bankID, question, limit, tags)
	if err != nil {
		return nil, fmt.Errorf("rank mental models of bank %s: %w", bankID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (MentalModelHit, error) {
		var h MentalModelHit
		err := r.Scan(&h.ID, &h.Name, &h.SourceQuery, &h.Content, &h.Tags, &h.LastRefreshedAt, &h.Score)
		if h.Tags == nil {
			h.Tags = []string{}
		}
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("rank mental models of bank %s: %w", bankID, err)
	}
	return out, nil
}

// Expansion depths for ExpandMemories.
const (
	ExpandChunk    = "chunk"
	ExpandDocument = "document"
)

// ExpandMemories returns the source text of the given facts of a bank: the
// chunk each was extracted from (depth ExpandChunk) or its whole document
// (ExpandDocument). Facts of other banks, and observations (which have no
// single source), are silently absent.
func (s *Store) ExpandMemories(ctx context.Context, bankID string, ids []uuid.UUID, depth string) ([]MemoryContext, error) {
	var q string
	switch depth {
	case ExpandChunk:
		q = qExpandChunks
	case ExpandDocument:
		q = qExpandDocuments
	default:
		return nil, fmt.Errorf("expand memories of bank %s: depth %q is not chunk or document", bankID, depth)
	}
	rows, err := s.pool.Query(ctx, q, bankID, ids)
	if err != nil {
		return nil, fmt.Errorf("expand %d memories of bank %s: %w", len(ids), bankID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (MemoryContext, error) {
		var c MemoryContext
		if depth == ExpandChunk {
			var cid uuid.UUID
			err := r.Scan(&c.MemoryID, &c.DocumentID, &cid, &c.Text)
			c.ChunkID = &cid
			return c, err
		}
		err := r.Scan(&c.MemoryID, &c.DocumentID, &c.Text)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("expand %d memories of bank %s: %w", len(ids), bankID, err)
	}
	return out, nil
}
