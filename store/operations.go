package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Operation is async work a client can poll (Hindsight's operations API).
type Operation struct {
	ID             uuid.UUID       `json:"id"`
	BankID         string          `json:"bank_id"`
	Kind           string          `json:"kind"`
	Status         string          `json:"status"`
	ItemsCount     int             `json:"items_count"`
	DocumentID     string          `json:"document_id,omitempty"`
	MentalModelID  *uuid.UUID      `json:"mental_model_id,omitempty"`
	IdempotencyKey string          `json:"-"`
	RequestHash    string          `json:"-"`
	Request        json.RawMessage `json:"-"`
	Response       json.RawMessage `json:"-"`
	Result         json.RawMessage `json:"result,omitempty"`
	ErrorMessage   string          `json:"error_message,omitempty"`
	RetryCount     int             `json:"retry_count"`
	ClaimedUntil   *time.Time      `json:"-"`
	// ClaimedBy is the runner holding a processing operation's lease, or
	// the attempt holding an unanswered idempotent retain.
	ClaimedBy string `json:"-"`
	// ClaimFor, given to CreateOperation with ClaimedBy, is the lease the
	// new row's claim starts with (the database's clock, as every lease).
	ClaimFor time.Duration `json:"-"`
	// Runs counts the claims of an operation the API runs itself; a lease
	// that ran out means a run that died with its process.
	Runs        int        `json:"-"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
}

// OperationItem is one event a retain produced, and where it landed.
type OperationItem struct {
	Index     int    `json:"index"`
	EventKey  string `json:"event_id"`
	Topic     string `json:"-"`
	Partition int32  `json:"-"`
	Offset    int64  `json:"-"`
}

// ItemState is what became of one retained event.
type ItemState struct {
	OperationItem
	// Status is persisted, dead_lettered or pending.
	Status     string `json:"status"`
	ErrorClass string `json:"error_class,omitempty"`
	ErrorStage string `json:"error_stage,omitempty"`
}

// ErrNotTerminal and ErrTerminal refuse an operation change that its state
// does not allow (delete before it ends; cancel after it ended).
var (
	ErrNotTerminal = errors.New("operation has not finished")
	ErrTerminal    = errors.New("operation has already finished")
	ErrNotRetrying = errors.New("operation is neither failed nor cancelled")
)

const opCols = `id, bank_id, kind, status, items_count, COALESCE(document_id, ''), mental_model_id, COALESCE(idempotency_key, ''),
	COALESCE(request_hash, ''), request, response, result, COALESCE(error_message, ''), retry_count, claimed_until,
	COALESCE(claimed_by, ''), runs, created_at, updated_at, completed_at`

func scanOp(r scanner, extra ...any) (Operation, error) {
	var o Operation
	err := r.Scan(append([]any{&o.ID, &o.BankID, &o.Kind, &o.Status, &o.ItemsCount, &o.DocumentID, &o.MentalModelID, &o.IdempotencyKey,
		&o.RequestHash, &o.Request, &o.Response, &o.Result, &o.ErrorMessage, &o.RetryCount, &o.ClaimedUntil,
		&o.ClaimedBy, &o.Runs, &o.CreatedAt, &o.UpdatedAt, &o.CompletedAt}, extra...)...)
	return o, err
}

const (
	qOpInsert = `INSERT INTO operations (id, bank_id, kind, status, items_count, document_id, mental_model_id, idempotency_key,
			request_hash, request, claimed_by, claimed_until)
		VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), $7, NULLIF($8, ''), NULLIF($9, ''), $10, NULLIF($11, ''),
			CASE WHEN $11 <> '' THEN now() + $12::bigint * interval '1 microsecond' END)
		ON CONFLICT (bank_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
		RETURNING ` + opCols
	qOpByKey = `SELECT ` + opCols + ` FROM operations WHERE bank_id = $1 AND idempotency_key = $2`
	// A retry may take over a first attempt whose claim ran out (its
	// process died, or it gave up, between reserving and answering).
	// A retain the runner failed for want of events is open again.
	qRetainTakeOver = `UPDATE operations SET claimed_by = $3, claimed_until = now() + $4::bigint * interval '1 microsecond',
			status = CASE WHEN status = 'failed' THEN 'pending' ELSE status END,
			error_message = CASE WHEN status = 'failed' THEN NULL ELSE error_message END,
			completed_at = CASE WHEN status = 'failed' THEN NULL ELSE completed_at END, updated_at = now()
		WHERE bank_id = $1 AND id = $2 AND kind = 'retain' AND response IS NULL
			AND (claimed_until IS NULL OR claimed_until < now())
		RETURNING ` + opCols
	// Only the attempt holding the claim renews or gives it up.
	qRetainHeartbeat = `UPDATE operations SET claimed_until = now() + $3::bigint * interval '1 microsecond', updated_at = now()
		WHERE id = $1 AND claimed_by = $2 AND response IS NULL`
	qRetainRelease = `UPDATE operations SET claimed_until = now(), updated_at = now()
		WHERE id = $1 AND claimed_by = $2 AND response IS NULL`
	qOpGet  = `SELECT ` + opCols + ` FROM operations WHERE bank_id = $1 AND id = $2`
	qOpList = `SELECT ` + opCols + `, count(*) OVER () FROM operations
		WHERE bank_id = $1 AND ($2 = '' OR status = $2) AND ($3 = '' OR kind = $3)
		ORDER BY created_at DESC, id LIMIT $4 OFFSET $5`
	qOpItemsInsert = `INSERT INTO operation_items (operation_id, idx, event_key, topic, partition, "offset")
		SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[], $5::int[], $6::bigint[])
		ON CONFLICT (operation_id, idx) DO UPDATE SET topic = EXCLUDED.topic, partition = EXCLUDED.partition, "offset" = EXCLUDED."offset"`
	// Persisted wins over dead-lettered: a dead letter replayed later is
	// stored under the same event key.
	qOpItemStates = `SELECT i.idx, i.event_key, i.topic, i.partition, i."offset",
			EXISTS (SELECT 1 FROM events e WHERE e.bank_id = o.bank_id AND e.event_key = i.event_key),
			COALESCE(d.error_class, ''), COALESCE(d.error_stage, '')
		FROM operation_items i JOIN operations o ON o.id = i.operation_id
		LEFT JOIN dead_letters d ON d.topic = i.topic AND d.partition = i.partition AND d."offset" = i."offset"
		WHERE i.operation_id = $1 ORDER BY i.idx`
	qOpRespond = `UPDATE operations SET response = $2, claimed_by = NULL, claimed_until = NULL, updated_at = now() WHERE id = $1`
	qOpFinish  = `UPDATE operations SET status = $2, error_message = NULLIF($3, ''), result = COALESCE($4, result),
			completed_at = CASE WHEN $2 IN ('completed', 'failed', 'cancelled') THEN now() END, updated_at = now()
		WHERE id = $1 AND status IN ('pending', 'processing')`
	qOpCancel = `UPDATE operations SET status = 'cancelled', completed_at = now(), updated_at = now()
		WHERE bank_id = $1 AND id = $2 AND status IN ('pending', 'processing')`
	qOpRetry = `UPDATE operations SET status = 'pending', retry_count = retry_count + 1, error_message = NULL,
			completed_at = NULL, created_at = now(), updated_at = now(), runs = 0, claimed_by = NULL, claimed_until = NULL,
			next_check_at = now()
		WHERE bank_id = $1 AND id = $2 AND status IN ('failed', 'cancelled') RETURNING ` + opCols
	qOpDelete = `DELETE FROM operations WHERE bank_id = $1 AND id = $2 AND status IN ('completed', 'failed', 'cancelled')`
	qOpCounts = `SELECT status, count(*) FROM operations WHERE bank_id = $1 GROUP BY status`
	// Facts that were waiting when a consolidation run was asked for and
	// still are.
	qConsolidationLeft = `SELECT count(*) FROM consolidation_queue cq JOIN memory_units m ON m.id = cq.unit_id
		WHERE cq.bank_id = $1 AND m.state = 'valid' AND m.created_at <= $2`
)

// CreateOperation stores a new operation. With an IdempotencyKey that a
// row of the bank already holds, it stores nothing and returns that row
// with existing true.
func (s *Store) CreateOperation(ctx context.Context, o Operation) (out Operation, existing bool, err error) {
	if len(o.Request) == 0 {
		o.Request = json.RawMessage(`{}`)
	}
	if o.Status == "" {
		o.Status = "pending"
	}
	out, err = scanOp(s.pool.QueryRow(ctx, qOpInsert, o.ID, o.BankID, o.Kind, o.Status, o.ItemsCount, o.DocumentID, o.MentalModelID,
		o.IdempotencyKey, o.RequestHash, o.Request, o.ClaimedBy, o.ClaimFor.Microseconds()))
	if errors.Is(err, pgx.ErrNoRows) && o.IdempotencyKey != "" {
		out, err = scanOp(s.pool.QueryRow(ctx, qOpByKey, o.BankID, o.IdempotencyKey))
		if err != nil {
			return out, false, fmt.Errorf("operation bank %s key %s: %w", o.BankID, o.IdempotencyKey, translate(err))
		}
		return out, true, nil
	}
	if err != nil {
		return out, false, fmt.Errorf("create operation bank %s: %w", o.BankID, translate(err))
	}
	return out, false, nil
}

// TakeOverRetain lets a retry become the attempt (owner) of an idempotent
// retain whose first attempt never answered and whose claim has run out,
// with a claim of lease. It returns ErrNotFound when the retain answered or
// its claim is still held.
func (s *Store) TakeOverRetain(ctx context.Context, bankID string, id uuid.UUID, owner string, lease time.Duration) (Operation, error) {
	o, err := scanOp(s.pool.QueryRow(ctx, qRetainTakeOver, bankID, id, owner, lease.Microseconds()))
	if err != nil {
		return o, fmt.Errorf("take over retain %s/%s: %w", bankID, id, translate(err))
	}
	return o, nil
}

// HeartbeatRetain renews owner's claim on an unanswered retain for lease.
// It reports false when owner no longer holds it (it lapsed and a retry
// took over, or the retain answered).
func (s *Store) HeartbeatRetain(ctx context.Context, id uuid.UUID, owner string, lease time.Duration) (bool, error) {
	tag, err := s.pool.Exec(ctx, qRetainHeartbeat, id, owner, lease.Microseconds())
	if err != nil {
		return false, fmt.Errorf("renew retain %s claim: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReleaseRetain gives up owner's claim on a retain it could not answer (its
// produce failed, its client went away), so a retry may take over at once.
func (s *Store) ReleaseRetain(ctx context.Context, id uuid.UUID, owner string) error {
	if _, err := s.pool.Exec(ctx, qRetainRelease, id, owner); err != nil {
		return fmt.Errorf("release retain %s: %w", id, err)
	}
	return nil
}

// GetOperation returns one operation of a bank, or ErrNotFound.
func (s *Store) GetOperation(ctx context.Context, bankID string, id uuid.UUID) (Operation, error) {
	o, err := scanOp(s.pool.QueryRow(ctx, qOpGet, bankID, id))
	if err != nil {
		return o, fmt.Errorf("get operation %s/%s: %w", bankID, id, translate(err))
	}
	return o, nil
}

// ListOperations returns one page of a bank's operations, newest first,
// and the total; status and kind filter when set.
func (s *Store) ListOperations(ctx context.Context, bankID, status, kind string, limit, offset int) ([]Operation, int, error) {
	rows, err := s.pool.Query(ctx, qOpList, bankID, status, kind, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list operations bank %s: %w", bankID, err)
	}
	out, total, err := countedRows(rows, scanOp)
	if err != nil {
		return nil, 0, fmt.Errorf("list operations bank %s: %w", bankID, err)
	}
	return out, total, nil
}

// SetOperationItems records the events an operation produced and their
// Kafka positions.
func (s *Store) SetOperationItems(ctx context.Context, id uuid.UUID, items []OperationItem) error {
	idx, keys, topics, parts, offs := make([]int32, len(items)), make([]string, len(items)), make([]string, len(items)), make([]int32, len(items)), make([]int64, len(items))
	for i, it := range items {
		idx[i], keys[i], topics[i], parts[i], offs[i] = int32(it.Index), it.EventKey, it.Topic, it.Partition, it.Offset
	}
	if _, err := s.pool.Exec(ctx, qOpItemsInsert, id, idx, keys, topics, parts, offs); err != nil {
		return fmt.Errorf("operation %s items: %w", id, err)
	}
	return nil
}

// OperationItemStates tells, for each event of a retain operation, whether
// it was persisted, dead-lettered (with its class) or is still pending.
func (s *Store) OperationItemStates(ctx context.Context, id uuid.UUID) ([]ItemState, error) {
	rows, err := s.pool.Query(ctx, qOpItemStates, id)
	if err != nil {
		return nil, fmt.Errorf("operation %s item states: %w", id, err)
	}
	defer rows.Close()
	var out []ItemState
	for rows.Next() {
		var st ItemState
		var persisted bool
		if err := rows.Scan(&st.Index, &st.EventKey, &st.Topic, &st.Partition, &st.Offset, &persisted, &st.ErrorClass, &st.ErrorStage); err != nil {
			return nil, err
		}
		switch {
		case persisted:
			st.Status, st.ErrorClass, st.ErrorStage = "persisted", "", ""
		case st.ErrorClass != "":
			st.Status = "dead_lettered"
		default:
			st.Status = "pending"
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// SetOperationResponse stores the answer given for an operation, which an
// idempotent retry returns, and releases the first attempt's claim.
func (s *Store) SetOperationResponse(ctx context.Context, id uuid.UUID, response json.RawMessage) error {
	if _, err := s.pool.Exec(ctx, qOpRespond, id, response); err != nil {
		return fmt.Errorf("operation %s response: %w", id, err)
	}
	return nil
}

// FinishOperation moves an unfinished operation to status (processing,
// completed, failed or cancelled). It reports whether it changed the row:
// false when the operation had already finished (or was cancelled).
func (s *Store) FinishOperation(ctx context.Context, id uuid.UUID, status, errMsg string, result json.RawMessage) (bool, error) {
	var res any
	if len(result) > 0 {
		res = result
	}
	tag, err := s.pool.Exec(ctx, qOpFinish, id, status, errMsg, res)
	if err != nil {
		return false, fmt.Errorf("finish operation %s: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// CancelOperation cancels a pending or processing operation: ErrNotFound
// when there is none, ErrTerminal when it already finished.
func (s *Store) CancelOperation(ctx context.Context, bankID string, id uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, qOpCancel, bankID, id)
	if err != nil {
		return fmt.Errorf("cancel operation %s/%s: %w", bankID, id, err)
	}
	if tag.RowsAffected() == 0 {
		if _, err := s.GetOperation(ctx, bankID, id); err != nil {
			return err
		}
		return fmt.Errorf("cancel operation %s/%s: %w", bankID, id, ErrTerminal)
	}
	return nil
}

// RetryOperation puts a failed or cancelled operation back to pending.
func (s *Store) RetryOperation(ctx context.Context, bankID string, id uuid.UUID) (Operation, error) {
	o, err := scanOp(s.pool.QueryRow(ctx, qOpRetry, bankID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		if _, gerr := s.GetOperation(ctx, bankID, id); gerr != nil {
			return o, gerr
		}
		return o, fmt.Errorf("retry operation %s/%s: %w", bankID, id, ErrNotRetrying)
	}
	if err != nil {
		return o, fmt.Errorf("retry operation %s/%s: %w", bankID, id, err)
	}
	return o, nil
}

// DeleteOperation removes a finished operation's record.
func (s *Store) DeleteOperation(ctx context.Context, bankID string, id uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, qOpDelete, bankID, id)
	if err != nil {
		return fmt.Errorf("delete operation %s/%s: %w", bankID, id, err)
	}
	if tag.RowsAffected() == 0 {
		if _, err := s.GetOperation(ctx, bankID, id); err != nil {
			return err
		}
		return fmt.Errorf("delete operation %s/%s: %w", bankID, id, ErrNotTerminal)
	}
	return nil
}

// OperationCounts counts a bank's operations by status.
func (s *Store) OperationCounts(ctx context.Context, bankID string) (map[string]int, error) {
	rows, err := s.pool.Query(ctx, qOpCounts, bankID)
	if err != nil {
		return nil, fmt.Errorf("operation counts bank %s: %w", bankID, err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		out[st] = n
	}
	return out, rows.Err()
}

// ConsolidationLeft counts the facts of a bank created up to before that
// are still waiting for consolidation.
func (s *Store) ConsolidationLeft(ctx context.Context, bankID string, before time.Time) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, qConsolidationLeft, bankID, before).Scan(&n); err != nil {
		return 0, fmt.Errorf("consolidation left bank %s: %w", bankID, err)
	}
	return n, nil
}
