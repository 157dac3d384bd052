package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Directive is a hard rule reflect applies to a bank's answers.
type Directive struct {
	ID        uuid.UUID `json:"id"`
	BankID    string    `json:"bank_id"`
	Name      string    `json:"name"`
	Content   string    `json:"content"`
	Priority  int       `json:"priority"`
	IsActive  bool      `json:"is_active"`
	Tags      []string  `json:"tags"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// DirectivePatch changes the fields that are set.
type DirectivePatch struct {
	Name     *string
	Content  *string
	Priority *int
	IsActive *bool
	Tags     *[]string
}

const directiveCols = `id, bank_id, name, content, priority, is_active, tags, created_at, updated_at`

const (
	qDirectiveInsert = `INSERT INTO directives (id, bank_id, name, content, priority, is_active, tags)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ` + directiveCols
	qDirectiveGet  = `SELECT ` + directiveCols + ` FROM directives WHERE bank_id = $1 AND id = $2`
	qDirectiveList = `SELECT ` + directiveCols + `, count(*) OVER () FROM directives
		WHERE bank_id = $1 AND (NOT $2 OR is_active)
		ORDER BY priority DESC, created_at, id LIMIT $3 OFFSET $4`
	qDirectiveUpdate = `UPDATE directives SET name = COALESCE($3, name), content = COALESCE($4, content),
			priority = COALESCE($5, priority), is_active = COALESCE($6, is_active), tags = COALESCE($7, tags), updated_at = now()
		WHERE bank_id = $1 AND id = $2 RETURNING ` + directiveCols
	qDirectiveDelete = `DELETE FROM directives WHERE bank_id = $1 AND id = $2`
	qDirectivesAll   = `SELECT ` + directiveCols + ` FROM directives WHERE bank_id = $1 AND is_active
		ORDER BY priority DESC, created_at, id LIMIT 200`
)

func scanDirective(r scanner, extra ...any) (Directive, error) {
	var d Directive
	err := r.Scan(append([]any{&d.ID, &d.BankID, &d.Name, &d.Content, &d.Priority, &d.IsActive, &d.Tags, &d.CreatedAt, &d.UpdatedAt}, extra...)...)
	if d.Tags == nil {
		d.Tags = []string{}
	}
	return d, err
}

// CreateDirective stores a new directive, creating the bank if needed. A
// bank deleted between the two is a BankNotFoundError (the delete won).
func (s *Store) CreateDirective(ctx context.Context, d Directive) (Directive, error) {
	if err := s.EnsureBank(ctx, d.BankID); err != nil {
		return d, err
	}
	if d.Tags == nil {
		d.Tags = []string{}
	}
	out, err := scanDirective(s.pool.QueryRow(ctx, qDirectiveInsert, d.ID, d.BankID, d.Name, d.Content, d.Priority, d.IsActive, d.Tags))
	if err != nil {
		return out, fmt.Errorf("create directive bank %s: %w", d.BankID, translateIn(d.BankID, err))
	}
	return out, nil
}

// GetDirective returns one directive of a bank, or ErrNotFound.
func (s *Store) GetDirective(ctx context.Context, bankID string, id uuid.UUID) (Directive, error) {
	d, err := scanDirective(s.pool.QueryRow(ctx, qDirectiveGet, bankID, id))
	if err != nil {
		return d, fmt.Errorf("get directive %s/%s: %w", bankID, id, translate(err))
	}
	return d, nil
}

// ListDirectives returns one page of a bank's directives, highest priority
// first, and the total.
func (s *Store) ListDirectives(ctx context.Context, bankID string, activeOnly bool, limit, offset int) ([]Directive, int, error) {
	rows, err := s.pool.Query(ctx, qDirectiveList, bankID, activeOnly, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list directives bank %s: %w", bankID, err)
	}
	out, total, err := countedRows(rows, scanDirective)
	if err != nil {
		return nil, 0, fmt.Errorf("list directives bank %s: %w", bankID, err)
	}
	return out, total, nil
}

// ActiveDirectives returns a bank's active directives, highest priority
// first.
func (s *Store) ActiveDirectives(ctx context.Context, bankID string) ([]Directive, error) {
	rows, err := s.pool.Query(ctx, qDirectivesAll, bankID)
	if err != nil {
		return nil, fmt.Errorf("directives bank %s: %w", bankID, err)
	}
	defer rows.Close()
	var out []Directive
	for rows.Next() {
		d, err := scanDirective(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// UpdateDirective changes the given fields of a directive.
func (s *Store) UpdateDirective(ctx context.Context, bankID string, id uuid.UUID, p DirectivePatch) (Directive, error) {
	var tags any
	if p.Tags != nil {
		tags = *p.Tags
	}
	d, err := scanDirective(s.pool.QueryRow(ctx, qDirectiveUpdate, bankID, id, p.Name, p.Content, p.Priority, p.IsActive, tags))
	if err != nil {
		return d, fmt.Errorf("update directive %s/%s: %w", bankID, id, translate(err))
	}
	return d, nil
}

// DeleteDirective removes a directive, or returns ErrNotFound.
func (s *Store) DeleteDirective(ctx context.Context, bankID string, id uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, qDirectiveDelete, bankID, id)
	if err != nil {
		return fmt.Errorf("delete directive %s/%s: %w", bankID, id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete directive %s/%s: %w", bankID, id, ErrNotFound)
	}
	return nil
}

// EnsureBank creates a bank with default settings unless it exists, as
// Hindsight creates a bank on first use.
func (s *Store) EnsureBank(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, qEnsureBank, []string{id}); err != nil {
		return fmt.Errorf("ensure bank %s: %w", id, err)
	}
	return nil
}
