package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Entity is an entity as the API shows it.
type Entity struct {
	ID           uuid.UUID  `json:"id"`
	BankID       string     `json:"bank_id"`
	Name         string     `json:"name"`
	Kind         string     `json:"kind"`
	FirstSeen    time.Time  `json:"first_seen"`
	LastSeen     time.Time  `json:"last_seen"`
	MentionCount int        `json:"mention_count"`
	MergedInto   *uuid.UUID `json:"merged_into"`
	Aliases      []string   `json:"aliases"`
}

// EntityDetail is an entity with the most recent facts that mention it.
type EntityDetail struct {
	Entity
	Memories []EntityMemory `json:"memories"`
}

// EntityMemory is a short reference to a fact mentioning an entity.
type EntityMemory struct {
	ID          uuid.UUID `json:"id"`
	Type        string    `json:"type"`
	Text        string    `json:"text"`
	MentionedAt time.Time `json:"mentioned_at"`
}

// ErrInvalidMerge is returned when a merge would merge an entity into
// itself or into an entity that is itself merged away.
var ErrInvalidMerge = errors.New("invalid entity merge")

// entityCols reads mention_count with the mentions not yet folded into it
// (entity_mention_deltas, a few seconds' worth), so the API is exact.
const entityCols = `e.id, e.bank_id, e.canonical_name, e.kind, e.first_seen, e.last_seen,
	GREATEST(e.mention_count + COALESCE((SELECT sum(d.mentions) FROM entity_mention_deltas d WHERE d.entity_id = e.id), 0), 0)::int AS mentions,
	e.merged_into,
	COALESCE((SELECT array_agg(DISTINCT a.alias ORDER BY a.alias) FROM entity_aliases a WHERE a.entity_id = e.id), '{}')`

const (
	// Merged-away entities are hidden from the list; GET by id still shows
	// them, with merged_into, so old references stay explainable.
	qEntityList = `SELECT ` + entityCols + `, count(*) OVER () FROM entities e
		WHERE e.bank_id = $1 AND e.merged_into IS NULL
		  AND ($2 = '' OR strpos(lower(e.canonical_name), lower($2)) > 0
		       OR EXISTS (SELECT 1 FROM entity_aliases a WHERE a.entity_id = e.id AND strpos(lower(a.alias), lower($2)) > 0))
		ORDER BY mentions DESC, e.canonical_name, e.id
		LIMIT $3 OFFSET $4`
	qEntityGet      = `SELECT ` + entityCols + ` FROM entities e WHERE e.bank_id = $1 AND e.id = $2`
	qEntityMemories = `SELECT m.id, m.fact_type, m.text, m.mentioned_at FROM unit_entities ue
		JOIN memory_units m ON m.id = ue.unit_id
		WHERE ue.entity_id = $1 AND m.state = 'valid'
		ORDER BY m.mentioned_at DESC LIMIT 50`
	// Both rows are locked in id order, so two opposite merges cannot
	// deadlock, and a concurrent merge of either waits for this one.
	qEntityLockPair = `SELECT id, merged_into FROM entities WHERE bank_id = $1 AND id IN ($2, $3) ORDER BY id FOR UPDATE`
	qEntityMergeSet = `UPDATE entities SET merged_into = $2 WHERE id = $1`
	// Entities merged into the source earlier follow it to the target, so
	// merged_into never points at a merged entity.
	qEntityMergeRepoint = `UPDATE entities SET merged_into = $2 WHERE merged_into = $1`
	// Mentions not folded yet follow the source to the target.
	qEntityMergeDeltas = `UPDATE entity_mention_deltas SET entity_id = $2 WHERE entity_id = $1`
	qEntityMergeCounts = `UPDATE entities t SET mention_count = t.mention_count + s.mention_count,
			first_seen = LEAST(t.first_seen, s.first_seen), last_seen = GREATEST(t.last_seen, s.last_seen)
		FROM entities s WHERE s.id = $1 AND t.id = $2`
	// Moved rows keep their mention time and ingest order: the orders
	// co-mention links and the graph arm read. The key-share lock on the
	// facts waits for a delete of one in progress (a memory or observation
	// clear, consolidation replacing an observation) and then skips it;
	// without it the moved row failed its foreign key once the delete
	// committed, and the merge with it.
	qEntityMergeUnits = `INSERT INTO unit_entities (unit_id, entity_id, mentioned_at, seq)
		SELECT ue.unit_id, $2, ue.mentioned_at, ue.seq FROM unit_entities ue JOIN memory_units m ON m.id = ue.unit_id
		WHERE ue.entity_id = $1 FOR KEY SHARE OF m ON CONFLICT DO NOTHING`
	qEntityDropUnits    = `DELETE FROM unit_entities WHERE entity_id = $1`
	qEntityMergeAliases = `INSERT INTO entity_aliases (bank_id, alias_key, alias, entity_id)
		SELECT bank_id, alias_key, alias, $2 FROM entity_aliases WHERE entity_id = $1 ON CONFLICT DO NOTHING`
	qEntityDropAliases = `DELETE FROM entity_aliases WHERE entity_id = $1`
	// The key-share lock waits for a merge of the entity in progress (it
	// holds the row FOR UPDATE) and then reads its merged_into; a merge
	// that comes later waits for the alias and moves it.
	qEntityExists     = `SELECT merged_into FROM entities WHERE bank_id = $1 AND id = $2 FOR KEY SHARE`
	qEntityAddAliases = `INSERT INTO entity_aliases (bank_id, alias_key, alias, entity_id)
		SELECT $1, k, $3, $4 FROM unnest($2::text[]) AS k ORDER BY k ON CONFLICT DO NOTHING`
)

func scanEntity(r scanner, extra ...any) (Entity, error) {
	var e Entity
	var n int32
	err := r.Scan(append([]any{&e.ID, &e.BankID, &e.Name, &e.Kind, &e.FirstSeen, &e.LastSeen, &n, &e.MergedInto, &e.Aliases}, extra...)...)
	e.MentionCount = int(n)
	if e.Aliases == nil {
		e.Aliases = []string{}
	}
	return e, err
}

// ListEntities returns one page of a bank's live (not merged-away)
// entities, most mentioned first, with the total; q filters by name or
// alias substring.
func (s *Store) ListEntities(ctx context.Context, bankID, q string, limit, offset int) ([]Entity, int, error) {
	rows, err := s.pool.Query(ctx, qEntityList, bankID, q, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list entities bank %s: %w", bankID, err)
	}
	out, total, err := countedRows(rows, scanEntity)
	if err != nil {
		return nil, 0, fmt.Errorf("list entities bank %s: %w", bankID, err)
	}
	return out, total, nil
}

// GetEntity returns an entity with its aliases and the most recent valid
// facts that mention it.
func (s *Store) GetEntity(ctx context.Context, bankID string, id uuid.UUID) (EntityDetail, error) {
	var d EntityDetail
	e, err := scanEntity(s.pool.QueryRow(ctx, qEntityGet, bankID, id))
	if err != nil {
		return d, fmt.Errorf("get entity %s/%s: %w", bankID, id, translate(err))
	}
	d.Entity = e
	d.Memories = []EntityMemory{}
	rows, err := s.pool.Query(ctx, qEntityMemories, id)
	if err != nil {
		return d, fmt.Errorf("entity %s memories: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var m EntityMemory
		if err := rows.Scan(&m.ID, &m.Type, &m.Text, &m.MentionedAt); err != nil {
			return d, fmt.Errorf("entity %s memories: %w", id, err)
		}
		d.Memories = append(d.Memories, m)
	}
	return d, rows.Err()
}

// MergeEntity merges entity src into entity into, in one transaction: src
// gets merged_into, its facts (unit_entities) and aliases move to into,
// and its mention counts and first/last seen fold into into's. Entities
// previously merged into src now point at into. It returns ErrNotFound if
// either is not in the bank and ErrInvalidMerge for a self-merge or a
// target that is itself merged away.
func (s *Store) MergeEntity(ctx context.Context, bankID string, src, into uuid.UUID) (Entity, error) {
	var out Entity
	if src == into {
		return out, fmt.Errorf("merge entity %s into itself: %w", src, ErrInvalidMerge)
	}
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, qEntityLockPair, bankID, src, into)
		if err != nil {
			return err
		}
		merged := map[uuid.UUID]*uuid.UUID{}
		for rows.Next() {
			var id uuid.UUID
			var m *uuid.UUID
			if err := rows.Scan(&id, &m); err != nil {
				rows.Close()
				return err
			}
			merged[id] = m
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		srcMerged, okSrc := merged[src]
		intoMerged, okInto := merged[into]
		if !okSrc || !okInto {
			return ErrNotFound
		}
		if srcMerged != nil {
			return fmt.Errorf("%w: entity %s is already merged into %s", ErrInvalidMerge, src, *srcMerged)
		}
		if intoMerged != nil {
			return fmt.Errorf("%w: target entity %s is itself merged into %s", ErrInvalidMerge, into, *intoMerged)
		}
		// Counts fold before the source's rows move, and merged_into is set
		// last, so every step reads the source as it was.
		steps := []struct {
			q    string
			args []any
		}{
			{qEntityMergeDeltas, []any{src, into}},
			{qEntityMergeCounts, []any{src, into}},
			{qEntityMergeUnits, []any{src, into}},
			{qEntityDropUnits, []any{src}},
			{qEntityMergeAliases, []any{src, into}},
			{qEntityDropAliases, []any{src}},
			{qEntityMergeSet, []any{src, into}},
			{qEntityMergeRepoint, []any{src, into}},
		}
		for _, st := range steps {
			if _, err := tx.Exec(ctx, st.q, st.args...); err != nil {
				return err
			}
		}
		out, err = scanEntity(tx.QueryRow(ctx, qEntityGet, bankID, into))
		return err
	})
	if err != nil {
		return out, fmt.Errorf("merge entity %s/%s into %s: %w", bankID, src, into, err)
	}
	return out, nil
}

// AddEntityAlias stores alias under each of its lookup keys (computed by
// the caller with resolve.Keys, so the store stays free of name rules).
// It returns ErrNotFound for an unknown entity and ErrConflict when the
// entity was merged away: aliases belong on the survivor.
func (s *Store) AddEntityAlias(ctx context.Context, bankID string, id uuid.UUID, alias string, keys []string) (Entity, error) {
	var out Entity
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		var merged *uuid.UUID
		if err := tx.QueryRow(ctx, qEntityExists, bankID, id).Scan(&merged); err != nil {
			return translate(err)
		}
		if merged != nil {
			return fmt.Errorf("%w: entity %s is merged into %s", ErrConflict, id, *merged)
		}
		if _, err := tx.Exec(ctx, qEntityAddAliases, bankID, keys, alias, id); err != nil {
			return err
		}
		var err error
		out, err = scanEntity(tx.QueryRow(ctx, qEntityGet, bankID, id))
		return err
	})
	if err != nil {
		return out, fmt.Errorf("add alias to entity %s/%s: %w", bankID, id, err)
	}
	return out, nil
}
