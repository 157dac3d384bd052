package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// EntityCandidate is an existing entity that a mention might refer to.
type EntityCandidate struct {
	ID       uuid.UUID
	Name     string
	Kind     string
	Aliases  []string
	LastSeen time.Time
	Mentions int
}

// Candidates come from exact alias-key hits and from trigram similarity
// of the canonical name; merged entities are followed to their target.
// Mentions count those not yet folded into mention_count, since a new
// entity has none until the worker folds (it breaks ties between people).
const qEntityCandidates = `
WITH hits AS (
	SELECT entity_id AS id FROM entity_aliases WHERE bank_id = $1 AND alias_key = ANY($2::text[])
	UNION
	SELECT id FROM entities WHERE bank_id = $1 AND lower(canonical_name) % ANY($3::text[])
)
SELECT e.id, e.canonical_name, e.kind, e.last_seen,
	(e.mention_count + COALESCE((SELECT sum(d.mentions) FROM entity_mention_deltas d WHERE d.entity_id = e.id), 0))::int,
	COALESCE((SELECT array_agg(a.alias ORDER BY a.alias) FROM entity_aliases a WHERE a.entity_id = e.id), '{}')
FROM hits h JOIN entities e ON e.id = h.id
WHERE e.merged_into IS NULL
LIMIT 200`

// EntityCandidates returns entities of a bank matching any alias key or
// resembling any of the names.
func (s *Store) EntityCandidates(ctx context.Context, bankID string, keys, names []string) ([]EntityCandidate, error) {
	rows, err := s.pool.Query(ctx, qEntityCandidates, bankID, keys, names)
	if err != nil {
		return nil, fmt.Errorf("entity candidates bank %s: %w", bankID, err)
	}
	defer rows.Close()
	var out []EntityCandidate
	for rows.Next() {
		var c EntityCandidate
		var n int32
		if err := rows.Scan(&c.ID, &c.Name, &c.Kind, &c.LastSeen, &n, &c.Aliases); err != nil {
			return nil, err
		}
		c.Mentions = int(n)
		out = append(out, c)
	}
	return out, rows.Err()
}
