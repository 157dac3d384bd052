package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// MentalModelChannel is the Postgres NOTIFY channel on which every write to
// a mental model is announced, so that each API replica can drop its
// cached copy. The payload is "bank_id/id" (id "*" for every model of the
// bank); bank ids cannot contain '/'.
const MentalModelChannel = "memstream_mental_models"

// MentalModel is a named, refreshable answer to a standing question.
type MentalModel struct {
	ID              uuid.UUID       `json:"id"`
	BankID          string          `json:"bank_id"`
	Name            string          `json:"name"`
	SourceQuery     string          `json:"source_query"`
	Content         string          `json:"content"`
	Tags            []string        `json:"tags"`
	MaxTokens       int             `json:"max_tokens"`
	BasedOn         json.RawMessage `json:"based_on"`
	LastRefreshedAt *time.Time      `json:"last_refreshed_at"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
}

// MentalModelPatch changes the fields that are not nil.
type MentalModelPatch struct {
	Name        *string
	SourceQuery *string
	Content     *string
	Tags        *[]string
	MaxTokens   *int
}

const mentalModelCols = `id, bank_id, name, source_query, content, tags, max_tokens, based_on, last_refreshed_at, created_at, updated_at`

const (
	qMentalModelList = `SELECT ` + mentalModelCols + ` FROM mental_models WHERE bank_id = $1 ORDER BY name LIMIT 1000`
	qMentalModelGet  = `SELECT ` + mentalModelCols + ` FROM mental_models WHERE bank_id = $1 AND id = $2`
	// Creating a model for a bank that has no profile yet creates the
	// bank, as retain does.
	qMentalModelEnsureBank = `INSERT INTO banks (id, name) VALUES ($1, $1) ON CONFLICT (id) DO NOTHING`
	qMentalModelInsert     = `INSERT INTO mental_models (id, bank_id, name, source_query, content, tags, max_tokens)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ` + mentalModelCols
	qMentalModelUpdate = `UPDATE mental_models SET
			name = COALESCE($3, name), source_query = COALESCE($4, source_query), content = COALESCE($5, content),
			tags = COALESCE($6, tags), max_tokens = COALESCE($7, max_tokens), updated_at = now()
		WHERE bank_id = $1 AND id = $2 RETURNING ` + mentalModelCols
	qMentalModelHistoryAdd = `INSERT INTO mental_model_history (mental_model_id, content) VALUES ($1, $2)`
	qMentalModelDelete     = `DELETE FROM mental_models WHERE bank_id = $1 AND id = $2`
	qMentalModelNotify     = `SELECT pg_notify($1, $2)`
)

func scanMentalModel(r scanner) (MentalModel, error) {
	var m MentalModel
	var n int32
	err := r.Scan(&m.ID, &m.BankID, &m.Name, &m.SourceQuery, &m.Content, &m.Tags, &n, &m.BasedOn,
		&m.LastRefreshedAt, &m.CreatedAt, &m.UpdatedAt)
	m.MaxTokens = int(n)
	if m.Tags == nil {
		m.Tags = []string{}
	}
	return m, err
}

// ListMentalModels returns a bank's mental models by name.
func (s *Store) ListMentalModels(ctx context.Context, bankID string) ([]MentalModel, error) {
	rows, err := s.pool.Query(ctx, qMentalModelList, bankID)
	if err != nil {
		return nil, fmt.Errorf("list mental models bank %s: %w", bankID, err)
	}
	defer rows.Close()
	out := []MentalModel{}
	for rows.Next() {
		m, err := scanMentalModel(rows)
		if err != nil {
			return nil, fmt.Errorf("list mental models bank %s: %w", bankID, err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// GetMentalModel returns one mental model or ErrNotFound.
func (s *Store) GetMentalModel(ctx context.Context, bankID string, id uuid.UUID) (MentalModel, error) {
	m, err := scanMentalModel(s.pool.QueryRow(ctx, qMentalModelGet, bankID, id))
	if err != nil {
		return m, fmt.Errorf("get mental model %s/%s: %w", bankID, id, translate(err))
	}
	return m, nil
}

// CreateMentalModel stores a new mental model under m.ID, or a fresh id
// when m.ID is zero (a caller's id is Hindsight's `id` on create). A second
// model with the same name in the bank, or an id taken, is ErrConflict; a
// bank deleted while the model is created is a BankNotFoundError.
func (s *Store) CreateMentalModel(ctx context.Context, m MentalModel) (MentalModel, error) {
	tags := m.Tags
	if tags == nil {
		tags = []string{}
	}
	id := m.ID
	if id == uuid.Nil {
		id = uuid.New()
	}
	var out MentalModel
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, qMentalModelEnsureBank, m.BankID); err != nil {
			return err
		}
		var err error
		out, err = scanMentalModel(tx.QueryRow(ctx, qMentalModelInsert, id, m.BankID, m.Name, m.SourceQuery,
			m.Content, tags, int32(m.MaxTokens)))
		return translateIn(m.BankID, err)
	})
	if err != nil {
		return out, fmt.Errorf("create mental model %s/%s: %w", m.BankID, m.Name, err)
	}
	return out, nil
}

// UpdateMentalModel applies p and announces the change on
// MentalModelChannel in the same transaction: replicas drop their cached
// copy exactly when the new row becomes visible, never before. A content
// change is kept in mental_model_history.
func (s *Store) UpdateMentalModel(ctx context.Context, bankID string, id uuid.UUID, p MentalModelPatch) (MentalModel, error) {
	var out MentalModel
	var maxTokens *int32
	if p.MaxTokens != nil {
		v := int32(*p.MaxTokens)
		maxTokens = &v
	}
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = scanMentalModel(tx.QueryRow(ctx, qMentalModelUpdate, bankID, id, p.Name, p.SourceQuery, p.Content, p.Tags, maxTokens))
		if err != nil {
			return translate(err)
		}
		if p.Content != nil {
			if _, err := tx.Exec(ctx, qMentalModelHistoryAdd, id, *p.Content); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, qMentalModelNotify, MentalModelChannel, bankID+"/"+id.String())
		return err
	})
	if err != nil {
		return out, fmt.Errorf("update mental model %s/%s: %w", bankID, id, err)
	}
	return out, nil
}

// DeleteMentalModel removes a mental model (and its history) and announces
// it on MentalModelChannel in the same transaction.
func (s *Store) DeleteMentalModel(ctx context.Context, bankID string, id uuid.UUID) error {
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, qMentalModelDelete, bankID, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		_, err = tx.Exec(ctx, qMentalModelNotify, MentalModelChannel, bankID+"/"+id.String())
		return err
	})
	if err != nil {
		return fmt.Errorf("delete mental model %s/%s: %w", bankID, id, err)
	}
	return nil
}

// NotifyMentalModel announces a change made elsewhere (a refresh writes
// through its own code path) so that every replica drops its copy.
func (s *Store) NotifyMentalModel(ctx context.Context, bankID string, id uuid.UUID) error {
	if _, err := s.pool.Exec(ctx, qMentalModelNotify, MentalModelChannel, bankID+"/"+id.String()); err != nil {
		return fmt.Errorf("notify mental model %s/%s: %w", bankID, id, err)
	}
	return nil
}

// NotifyBankMentalModels announces that every mental model of a bank
// changed (the bank was deleted); the payload's id is "*".
func (s *Store) NotifyBankMentalModels(ctx context.Context, bankID string) error {
	if _, err := s.pool.Exec(ctx, qMentalModelNotify, MentalModelChannel, bankID+"/*"); err != nil {
		return fmt.Errorf("notify mental models of bank %s: %w", bankID, err)
	}
	return nil
}

// ListenMentalModels is Listen on MentalModelChannel alone: onChange gets
// each changed model's bank and id ("*" for every model of the bank).
func (s *Store) ListenMentalModels(ctx context.Context, ready func(), onChange func(bankID, id string)) error {
	return s.Listen(ctx, []string{MentalModelChannel}, ready, func(_, payload string) {
		bank, id, _ := strings.Cut(payload, "/")
		onChange(bank, id)
	})
}

// MentalModelVersion is one content a mental model had.
type MentalModelVersion struct {
	Content   string    `json:"content"`
	ChangedAt time.Time `json:"changed_at"`
}

const qMentalModelHistory = `SELECT h.content, h.refreshed_at FROM mental_model_history h
	JOIN mental_models mm ON mm.id = h.mental_model_id
	WHERE mm.bank_id = $1 AND h.mental_model_id = $2 ORDER BY h.id DESC LIMIT 200`

// MentalModelHistory returns the contents a mental model had, newest
// first; ErrNotFound when the bank has no such model.
func (s *Store) MentalModelHistory(ctx context.Context, bankID string, id uuid.UUID) ([]MentalModelVersion, error) {
	if _, err := s.GetMentalModel(ctx, bankID, id); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, qMentalModelHistory, bankID, id)
	if err != nil {
		return nil, fmt.Errorf("mental model history %s/%s: %w", bankID, id, err)
	}
	defer rows.Close()
	out := []MentalModelVersion{}
	for rows.Next() {
		var v MentalModelVersion
		if err := rows.Scan(&v.Content, &v.ChangedAt); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
