package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// AuditEntry is one action done through the API (Hindsight's audit log).
type AuditEntry struct {
	ID        uuid.UUID       `json:"id"`
	BankID    *string         `json:"bank_id"`
	Action    string          `json:"action"`
	Transport string          `json:"transport"`
	Status    int             `json:"status"`
	StartedAt time.Time       `json:"started_at"`
	EndedAt   time.Time       `json:"ended_at"`
	Metadata  json.RawMessage `json:"metadata"`
	Request   json.RawMessage `json:"request"`
	Response  json.RawMessage `json:"response"`
}

// AuditBucket counts actions in one time bucket.
type AuditBucket struct {
	Time    time.Time      `json:"time"`
	Actions map[string]int `json:"actions"`
	Total   int            `json:"total"`
}

const (
	auditCols = `id, bank_id, action, transport, status, started_at, ended_at, metadata, request, response`
	qAuditAdd = `INSERT INTO audit_log (` + auditCols + `) VALUES ($1, NULLIF($2, ''), $3, $4, $5, $6, $7, $8, $9, $10)`
	// qAuditAsync commits the audit row without waiting for its WAL flush
	// (see AddAudit).
	qAuditAsync = `SELECT set_config('synchronous_commit', 'off', true)`
	qAuditList  = `SELECT ` + auditCols + `, count(*) OVER () FROM audit_log
		WHERE bank_id = $1 AND ($2 = '' OR action = $2) AND ($3 = '' OR transport = $3)
		  AND ($4::timestamptz IS NULL OR started_at >= $4) AND ($5::timestamptz IS NULL OR started_at < $5)
		ORDER BY started_at DESC, id LIMIT $6 OFFSET $7`
	qAuditGet   = `SELECT ` + auditCols + ` FROM audit_log WHERE bank_id = $1 AND id = $2`
	qAuditStats = `SELECT date_trunc($2, started_at) AS t, action, count(*) FROM audit_log
		WHERE bank_id = $1 AND started_at >= $3 AND ($4 = '' OR action = $4) GROUP BY t, action ORDER BY t`
)

func scanAudit(r scanner, extra ...any) (AuditEntry, error) {
	var a AuditEntry
	err := r.Scan(append([]any{&a.ID, &a.BankID, &a.Action, &a.Transport, &a.Status, &a.StartedAt, &a.EndedAt, &a.Metadata, &a.Request, &a.Response}, extra...)...)
	return a, err
}

// AddAudit records one action. The row is committed, and visible to the
// next read, before AddAudit returns; only its WAL flush is left to the WAL
// writer (or the next synchronous commit), so an answer does not wait for
// a disk flush of its log line. A crash of PostgreSQL itself may lose the
// audit rows of its last ~0.6 s (3 x wal_writer_delay); facts, offsets and
// everything else keep synchronous commits.
func (s *Store) AddAudit(ctx context.Context, a AuditEntry) error {
	bank := ""
	if a.BankID != nil {
		bank = *a.BankID
	}
	if len(a.Metadata) == 0 {
		a.Metadata = json.RawMessage(`{}`)
	}
	var req, resp any
	if len(a.Request) > 0 {
		req = a.Request
	}
	if len(a.Response) > 0 {
		resp = a.Response
	}
	// One batch is one implicit transaction: the setting holds for the
	// insert alone.
	var b pgx.Batch
	b.Queue(qAuditAsync)
	b.Queue(qAuditAdd, a.ID, bank, a.Action, a.Transport, a.Status, a.StartedAt, a.EndedAt, a.Metadata, req, resp)
	if err := s.pool.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("audit %s bank %s: %w", a.Action, bank, err)
	}
	return nil
}

// ListAudit returns one page of a bank's audit log, newest first, and the
// total; action and transport filter when set, start and end bound it.
func (s *Store) ListAudit(ctx context.Context, bankID, action, transport string, start, end *time.Time, limit, offset int) ([]AuditEntry, int, error) {
	rows, err := s.pool.Query(ctx, qAuditList, bankID, action, transport, start, end, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("audit log bank %s: %w", bankID, err)
	}
	out, total, err := countedRows(rows, scanAudit)
	if err != nil {
		return nil, 0, fmt.Errorf("audit log bank %s: %w", bankID, err)
	}
	return out, total, nil
}

// GetAudit returns one audit entry of a bank, or ErrNotFound.
func (s *Store) GetAudit(ctx context.Context, bankID string, id uuid.UUID) (AuditEntry, error) {
	a, err := scanAudit(s.pool.QueryRow(ctx, qAuditGet, bankID, id))
	if err != nil {
		return a, fmt.Errorf("audit entry %s/%s: %w", bankID, id, translate(err))
	}
	return a, nil
}

// AuditStats counts a bank's audit entries per trunc bucket since since.
func (s *Store) AuditStats(ctx context.Context, bankID, action, trunc string, since time.Time) ([]AuditBucket, error) {
	rows, err := s.pool.Query(ctx, qAuditStats, bankID, trunc, since, action)
	if err != nil {
		return nil, fmt.Errorf("audit stats bank %s: %w", bankID, err)
	}
	defer rows.Close()
	out := []AuditBucket{}
	for rows.Next() {
		var t time.Time
		var a string
		var n int
		if err := rows.Scan(&t, &a, &n); err != nil {
			return nil, err
		}
		if len(out) == 0 || !out[len(out)-1].Time.Equal(t) {
			out = append(out, AuditBucket{Time: t, Actions: map[string]int{}})
		}
		b := &out[len(out)-1]
		b.Actions[a] += n
		b.Total += n
	}
	return out, rows.Err()
}
