package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
)

// GraphNode is an entity in another entity's neighbourhood. Weight is the
// number of valid memories that mention both.
type GraphNode struct {
	ID     uuid.UUID `json:"id"`
	Name   string    `json:"name"`
	Kind   string    `json:"kind"`
	Weight int       `json:"weight"`
}

// GraphEdge joins two neighbours that share Weight memories.
type GraphEdge struct {
	From   uuid.UUID `json:"from"`
	To     uuid.UUID `json:"to"`
	Weight int       `json:"weight"`
}

// EntityGraph is an entity's neighbourhood: the entities mentioned with
// it, and the co-mentions among them.
type EntityGraph struct {
	Entity GraphNode   `json:"entity"`
	Nodes  []GraphNode `json:"nodes"`
	Edges  []GraphEdge `json:"edges"`
}

const (
	qGraphNeighbours = `WITH mine AS (
			SELECT ue.unit_id FROM unit_entities ue JOIN memory_units m ON m.id = ue.unit_id
			WHERE ue.entity_id = $2 AND m.bank_id = $1 AND m.state = 'valid'
		), nb AS (
			SELECT ue.entity_id, count(*) AS w FROM unit_entities ue JOIN mine USING (unit_id)
			WHERE ue.entity_id <> $2 GROUP BY ue.entity_id
		)
		SELECT e.id, e.canonical_name, e.kind, nb.w::int FROM nb JOIN entities e ON e.id = nb.entity_id
		WHERE e.bank_id = $1 AND e.merged_into IS NULL
		ORDER BY nb.w DESC, e.canonical_name, e.id LIMIT $3`
	qGraphEdges = `SELECT a.entity_id, b.entity_id, count(*)::int FROM unit_entities a
		JOIN unit_entities b ON b.unit_id = a.unit_id AND a.entity_id < b.entity_id
		JOIN memory_units m ON m.id = a.unit_id AND m.state = 'valid'
		WHERE a.entity_id = ANY($1::uuid[]) AND b.entity_id = ANY($1::uuid[])
		GROUP BY 1, 2`
)

// EntityNeighbourhood returns up to limit entities that share memories
// with the entity, the most shared first, and the links among them; or
// ErrNotFound.
func (s *Store) EntityNeighbourhood(ctx context.Context, bankID string, id uuid.UUID, limit int) (EntityGraph, error) {
	var g EntityGraph
	e, err := s.GetEntity(ctx, bankID, id)
	if err != nil {
		return g, err
	}
	g.Entity = GraphNode{ID: e.ID, Name: e.Name, Kind: e.Kind, Weight: e.MentionCount}
	g.Nodes, g.Edges = []GraphNode{}, []GraphEdge{}
	rows, err := s.pool.Query(ctx, qGraphNeighbours, bankID, id, limit)
	if err != nil {
		return g, fmt.Errorf("entity graph %s/%s: %w", bankID, id, err)
	}
	ids := []uuid.UUID{}
	for rows.Next() {
		var n GraphNode
		if err := rows.Scan(&n.ID, &n.Name, &n.Kind, &n.Weight); err != nil {
			rows.Close()
			return g, fmt.Errorf("entity graph %s/%s: %w", bankID, id, err)
		}
		g.Nodes = append(g.Nodes, n)
		ids = append(ids, n.ID)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return g, fmt.Errorf("entity graph %s/%s: %w", bankID, id, err)
	}
	if len(ids) < 2 {
		return g, nil
	}
	rows, err = s.pool.Query(ctx, qGraphEdges, ids)
	if err != nil {
		return g, fmt.Errorf("entity graph %s/%s edges: %w", bankID, id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var ed GraphEdge
		if err := rows.Scan(&ed.From, &ed.To, &ed.Weight); err != nil {
			return g, fmt.Errorf("entity graph %s/%s edges: %w", bankID, id, err)
		}
		g.Edges = append(g.Edges, ed)
	}
	return g, rows.Err()
}
