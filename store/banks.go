package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Bank is a memory bank's profile.
type Bank struct {
	ID                 string          `json:"bank_id"`
	Name               string          `json:"name"`
	Mission            string          `json:"mission"`
	Skepticism         int             `json:"skepticism"`
	Literalism         int             `json:"literalism"`
	Empathy            int             `json:"empathy"`
	DefensePolicy      json.RawMessage `json:"defense_policy"`
	ConsolidationState string          `json:"consolidation_state"`
	CreatedAt          time.Time       `json:"created_at"`
	UpdatedAt          time.Time       `json:"updated_at"`
}

const (
	qBankGet = `SELECT id, name, mission, skepticism, literalism, empathy, defense_policy, consolidation_state, created_at, updated_at
		FROM banks WHERE id = $1`
	qBankList = `SELECT id, name, mission, skepticism, literalism, empathy, defense_policy, consolidation_state, created_at, updated_at
		FROM banks ORDER BY id LIMIT 1000`
	qBankUpsert = `INSERT INTO banks (id, name, mission, skepticism, literalism, empathy, defense_policy, consolidation_state)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, mission = EXCLUDED.mission,
			skepticism = EXCLUDED.skepticism, literalism = EXCLUDED.literalism, empathy = EXCLUDED.empathy,
			defense_policy = EXCLUDED.defense_policy, consolidation_state = EXCLUDED.consolidation_state, updated_at = now()
		RETURNING id, name, mission, skepticism, literalism, empathy, defense_policy, consolidation_state, created_at, updated_at`
	qBankDelete = `DELETE FROM banks WHERE id = $1`
	qBankPolicy = `SELECT defense_policy FROM banks WHERE id = $1`
)

type scanner interface{ Scan(dest ...any) error }

func scanBank(r scanner) (Bank, error) {
	var b Bank
	var sk, li, em int16
	err := r.Scan(&b.ID, &b.Name, &b.Mission, &sk, &li, &em, &b.DefensePolicy, &b.ConsolidationState, &b.CreatedAt, &b.UpdatedAt)
	b.Skepticism, b.Literalism, b.Empathy = int(sk), int(li), int(em)
	return b, err
}

// GetBank returns one bank or ErrNotFound.
func (s *Store) GetBank(ctx context.Context, id string) (Bank, error) {
	b, err := scanBank(s.pool.QueryRow(ctx, qBankGet, id))
	if err != nil {
		return b, fmt.Errorf("get bank %s: %w", id, translate(err))
	}
	return b, nil
}

// ListBanks returns all banks.
func (s *Store) ListBanks(ctx context.Context) ([]Bank, error) {
	rows, err := s.pool.Query(ctx, qBankList)
	if err != nil {
		return nil, fmt.Errorf("list banks: %w", err)
	}
	defer rows.Close()
	var out []Bank
	for rows.Next() {
		b, err := scanBank(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// PutBank creates or replaces a bank profile.
func (s *Store) PutBank(ctx context.Context, b Bank) (Bank, error) {
	if len(b.DefensePolicy) == 0 {
		b.DefensePolicy = json.RawMessage(`{}`)
	}
	if b.ConsolidationState == "" {
		b.ConsolidationState = "running"
	}
	out, err := scanBank(s.pool.QueryRow(ctx, qBankUpsert, b.ID, b.Name, b.Mission, int16(b.Skepticism), int16(b.Literalism),
		int16(b.Empathy), b.DefensePolicy, b.ConsolidationState))
	if err != nil {
		return out, fmt.Errorf("put bank %s: %w", b.ID, translate(err))
	}
	return out, nil
}

// DeleteBank removes a bank and everything in it.
func (s *Store) DeleteBank(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, qBankDelete, id)
	if err != nil {
		return fmt.Errorf("delete bank %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete bank %s: %w", id, ErrNotFound)
	}
	return nil
}

// BankPolicy returns the raw defense policy JSON of a bank ({} when the
// bank does not exist yet: it gets the default policy).
func (s *Store) BankPolicy(ctx context.Context, id string) (json.RawMessage, error) {
	var raw json.RawMessage
	err := s.pool.QueryRow(ctx, qBankPolicy, id).Scan(&raw)
	if err != nil {
		if translate(err) == ErrNotFound {
			return json.RawMessage(`{}`), nil
		}
		return nil, fmt.Errorf("bank policy %s: %w", id, err)
	}
	return raw, nil
}
