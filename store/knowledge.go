package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// KnowledgeNode is a folder or a page of a bank's knowledge base; a page
// is a mental model placed in the tree.
type KnowledgeNode struct {
	ID            uuid.UUID  `json:"id"`
	BankID        string     `json:"bank_id"`
	Kind          string     `json:"kind"`
	Name          string     `json:"name"`
	ParentID      *uuid.UUID `json:"parent_id"`
	MentalModelID *uuid.UUID `json:"mental_model_id"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

const knCols = `id, bank_id, kind, name, parent_id, mental_model_id, created_at, updated_at`

const (
	qKnInsert = `INSERT INTO knowledge_nodes (id, bank_id, kind, name, parent_id, mental_model_id)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING ` + knCols
	qKnList   = `SELECT ` + knCols + ` FROM knowledge_nodes WHERE bank_id = $1 ORDER BY kind, name, id LIMIT 10000`
	qKnGet    = `SELECT ` + knCols + ` FROM knowledge_nodes WHERE bank_id = $1 AND id = $2`
	qKnParent = `SELECT kind FROM knowledge_nodes WHERE bank_id = $1 AND id = $2 FOR KEY SHARE`
	qKnUpdate = `UPDATE knowledge_nodes SET name = COALESCE($3, name),
			parent_id = CASE WHEN $4 THEN $5 ELSE parent_id END, updated_at = now()
		WHERE bank_id = $1 AND id = $2 RETURNING ` + knCols
	// The pages of a subtree, whose mental models go with it.
	qKnSubtreeModels = `WITH RECURSIVE t AS (
			SELECT id, mental_model_id FROM knowledge_nodes WHERE bank_id = $1 AND id = $2
			UNION ALL SELECT n.id, n.mental_model_id FROM knowledge_nodes n JOIN t ON n.parent_id = t.id)
		SELECT mental_model_id FROM t WHERE mental_model_id IS NOT NULL`
	qKnDelete = `DELETE FROM knowledge_nodes WHERE bank_id = $1 AND id = $2`
	qKnDropMM = `DELETE FROM mental_models WHERE bank_id = $1 AND id = ANY($2::uuid[])`
	// qKnTreeLock serialises the moves of one bank's tree, until commit.
	qKnTreeLock = `SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.memstream.knowledge.' || $1))`
	// A folder may not become its own descendant.
	qKnIsDescendant = `WITH RECURSIVE t AS (
			SELECT id FROM knowledge_nodes WHERE bank_id = $1 AND id = $2
			UNION ALL SELECT n.id FROM knowledge_nodes n JOIN t ON n.parent_id = t.id)
		SELECT EXISTS (SELECT 1 FROM t WHERE id = $3)`
)

func scanKn(r scanner) (KnowledgeNode, error) {
	var n KnowledgeNode
	err := r.Scan(&n.ID, &n.BankID, &n.Kind, &n.Name, &n.ParentID, &n.MentalModelID, &n.CreatedAt, &n.UpdatedAt)
	return n, err
}

// CreateKnowledgeNode stores a folder or page; the parent must be a folder
// of the same bank. A bank, or a page's mental model, deleted while the
// node is created is ErrNotFound (a BankNotFoundError for the bank).
func (s *Store) CreateKnowledgeNode(ctx context.Context, n KnowledgeNode) (KnowledgeNode, error) {
	var out KnowledgeNode
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		if n.ParentID != nil {
			if err := knowledgeParent(ctx, tx, n.BankID, *n.ParentID); err != nil {
				return err
			}
		}
		var err error
		out, err = scanKn(tx.QueryRow(ctx, qKnInsert, n.ID, n.BankID, n.Kind, n.Name, n.ParentID, n.MentalModelID))
		return translateIn(n.BankID, err)
	})
	if err != nil {
		return out, fmt.Errorf("create knowledge node bank %s: %w", n.BankID, err)
	}
	return out, nil
}

// knowledgeParent checks that parent is a folder of the bank, and keeps it
// (a key-share lock) until tx ends. The lock waits for a delete of the
// folder in progress, which then reads as ErrNotFound; without it the
// check passed and the write failed its foreign key once the delete
// committed, an internal error.
func knowledgeParent(ctx context.Context, tx pgx.Tx, bankID string, parent uuid.UUID) error {
	var kind string
	if err := tx.QueryRow(ctx, qKnParent, bankID, parent).Scan(&kind); err != nil {
		return fmt.Errorf("knowledge node %s/%s: %w", bankID, parent, translate(err))
	}
	if kind != "folder" {
		return fmt.Errorf("knowledge node parent %s: %w: not a folder", parent, ErrConflict)
	}
	return nil
}

// ListKnowledgeNodes returns every node of a bank's knowledge base.
func (s *Store) ListKnowledgeNodes(ctx context.Context, bankID string) ([]KnowledgeNode, error) {
	rows, err := s.pool.Query(ctx, qKnList, bankID)
	if err != nil {
		return nil, fmt.Errorf("knowledge base bank %s: %w", bankID, err)
	}
	defer rows.Close()
	var out []KnowledgeNode
	for rows.Next() {
		n, err := scanKn(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// GetKnowledgeNode returns one node, or ErrNotFound.
func (s *Store) GetKnowledgeNode(ctx context.Context, bankID string, id uuid.UUID) (KnowledgeNode, error) {
	n, err := scanKn(s.pool.QueryRow(ctx, qKnGet, bankID, id))
	if err != nil {
		return n, fmt.Errorf("knowledge node %s/%s: %w", bankID, id, translate(err))
	}
	return n, nil
}

// MoveKnowledgeNode renames a node (name non-nil) and, when move is set,
// puts it under parent (nil: the root).
//
// Moves under a parent of one bank run one at a time (qKnTreeLock), each
// checking the tree the previous one left: two moves checked against the
// same tree, a under b and b under a, both passed and made a cycle, whose
// recursive walks (qKnSubtreeModels, qKnIsDescendant) never end.
func (s *Store) MoveKnowledgeNode(ctx context.Context, bankID string, id uuid.UUID, name *string, move bool, parent *uuid.UUID) (KnowledgeNode, error) {
	var n KnowledgeNode
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		if move && parent != nil {
			if _, err := tx.Exec(ctx, qKnTreeLock, bankID); err != nil {
				return err
			}
			if err := knowledgeParent(ctx, tx, bankID, *parent); err != nil {
				return err
			}
			var cycle bool
			if err := tx.QueryRow(ctx, qKnIsDescendant, bankID, id, *parent).Scan(&cycle); err != nil {
				return err
			}
			if cycle {
				return fmt.Errorf("%w: the parent must be a folder outside the node", ErrConflict)
			}
		}
		var err error
		n, err = scanKn(tx.QueryRow(ctx, qKnUpdate, bankID, id, name, move, parent))
		return translate(err)
	})
	if err != nil {
		return n, fmt.Errorf("move knowledge node %s/%s: %w", bankID, id, err)
	}
	return n, nil
}

// DeleteKnowledgeNode deletes a node, what it holds, and the mental models
// of its pages. It returns the ids of those mental models.
func (s *Store) DeleteKnowledgeNode(ctx context.Context, bankID string, id uuid.UUID) ([]uuid.UUID, error) {
	var models []uuid.UUID
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		var err error
		if models, err = collectUUIDs(ctx, tx, qKnSubtreeModels, bankID, id); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, qKnDelete, bankID, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		if len(models) > 0 {
			if _, err := tx.Exec(ctx, qKnDropMM, bankID, models); err != nil {
				return err
			}
			for _, m := range models {
				if _, err := tx.Exec(ctx, qMentalModelNotify, MentalModelChannel, bankID+"/"+m.String()); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("delete knowledge node %s/%s: %w", bankID, id, err)
	}
	return models, nil
}
