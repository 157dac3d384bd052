package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Webhook is an HTTP endpoint told about a bank's events.
type Webhook struct {
	ID         uuid.UUID       `json:"id"`
	BankID     string          `json:"bank_id"`
	URL        string          `json:"url"`
	Secret     *string         `json:"secret"`
	EventTypes []string        `json:"event_types"`
	Enabled    bool            `json:"enabled"`
	HTTPConfig json.RawMessage `json:"http_config"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
}

// WebhookPatch changes the fields that are set.
type WebhookPatch struct {
	URL        *string
	Secret     *string
	EventTypes *[]string
	Enabled    *bool
	HTTPConfig json.RawMessage
}

// WebhookDelivery is one queued or finished delivery of an event.
type WebhookDelivery struct {
	ID                 uuid.UUID  `json:"id"`
	WebhookID          uuid.UUID  `json:"webhook_id"`
	BankID             string     `json:"-"`
	EventID            uuid.UUID  `json:"event_id"`
	EventType          string     `json:"event_type"`
	URL                string     `json:"url"`
	Status             string     `json:"status"`
	Attempts           int        `json:"attempts"`
	NextRetryAt        *time.Time `json:"next_retry_at"`
	LastError          *string    `json:"last_error"`
	LastResponseStatus *int       `json:"last_response_status"`
	LastResponseBody   *string    `json:"last_response_body"`
	LastAttemptAt      *time.Time `json:"last_attempt_at"`
	CreatedAt          time.Time  `json:"created_at"`
	UpdatedAt          time.Time  `json:"updated_at"`
	// For the sender only.
	Payload    string          `json:"-"`
	Secret     *string         `json:"-"`
	HTTPConfig json.RawMessage `json:"-"`
	// ClaimToken names the sender's claim (ClaimDeliveries); the outcome
	// is recorded only under it.
	ClaimToken uuid.UUID `json:"-"`
}

// WebhookEvent is an event to announce to a bank's webhooks.
type WebhookEvent struct {
	ID      uuid.UUID
	BankID  string
	Type    string
	Payload string
}

const webhookCols = `id, bank_id, url, secret, event_types, enabled, http_config, created_at, updated_at`

func scanWebhook(r scanner, extra ...any) (Webhook, error) {
	var w Webhook
	err := r.Scan(append([]any{&w.ID, &w.BankID, &w.URL, &w.Secret, &w.EventTypes, &w.Enabled, &w.HTTPConfig, &w.CreatedAt, &w.UpdatedAt}, extra...)...)
	return w, err
}

const (
	qWebhookInsert = `INSERT INTO webhooks (id, bank_id, url, secret, event_types, enabled, http_config)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ` + webhookCols
	qWebhookList = `SELECT ` + webhookCols + `, count(*) OVER () FROM webhooks WHERE bank_id = $1
		ORDER BY created_at, id LIMIT $2 OFFSET $3`
	qWebhookGet    = `SELECT ` + webhookCols + ` FROM webhooks WHERE bank_id = $1 AND id = $2`
	qWebhookUpdate = `UPDATE webhooks SET url = COALESCE($3, url), secret = COALESCE($4, secret), event_types = COALESCE($5, event_types),
			enabled = COALESCE($6, enabled), http_config = COALESCE($7, http_config), updated_at = now()
		WHERE bank_id = $1 AND id = $2 RETURNING ` + webhookCols
	qWebhookDelete = `DELETE FROM webhooks WHERE bank_id = $1 AND id = $2`
	// The key-share lock waits for a delete of a webhook (or its bank) in
	// progress and then skips the webhook; without it the delivery's
	// foreign key failed once the delete committed, and the event was
	// queued for none of the bank's webhooks (an operation's finish failed
	// with it).
	qDeliveryQueue = `INSERT INTO webhook_deliveries (id, webhook_id, bank_id, event_id, event_type, payload)
		SELECT gen_random_uuid(), w.id, w.bank_id, $2, $3, $4 FROM webhooks w
		WHERE w.bank_id = $1 AND w.enabled AND $3 = ANY (w.event_types)
		FOR KEY SHARE OF w
		ON CONFLICT (webhook_id, event_id) DO NOTHING`
	// A claimed delivery is leased for its webhook's timeout and half a
	// minute more: a sender that dies mid-delivery leaves it to be sent
	// again, never lost, and a slow endpoint is not sent a second copy
	// while the first is still being answered. The claim token names this
	// claim, so only its holder records the outcome.
	qDeliveryClaim = `UPDATE webhook_deliveries d SET updated_at = now(), claim_token = gen_random_uuid(),
			next_attempt_at = now() + make_interval(secs => 30 + CASE WHEN w.http_config->>'timeout_seconds' ~ '^[0-9]{1,4}$'
				THEN (w.http_config->>'timeout_seconds')::int ELSE 30 END)
		FROM webhooks w
		WHERE w.id = d.webhook_id AND d.id IN (
			SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= now()
			ORDER BY next_attempt_at FOR UPDATE SKIP LOCKED LIMIT $1)
		RETURNING d.id, d.webhook_id, d.bank_id, d.event_id, d.event_type, w.url, d.status, d.attempts, d.payload, w.secret, w.http_config,
			d.claim_token`
	qDeliveryNextDue = `SELECT min(next_attempt_at) FROM webhook_deliveries WHERE status = 'pending'`
	qDeliveryDone    = `UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1, last_response_status = $2,
			last_response_body = $3, last_error = NULL, last_attempt_at = now(), updated_at = now(), claim_token = NULL
		WHERE id = $1 AND claim_token = $4 AND status = 'pending'`
	qDeliveryFailed = `UPDATE webhook_deliveries SET attempts = attempts + 1, last_response_status = $2, last_response_body = $3,
			last_error = $4, last_attempt_at = now(), updated_at = now(),
			status = CASE WHEN attempts + 1 >= $5 THEN 'failed' ELSE 'pending' END,
			next_attempt_at = now() + $6::interval, claim_token = NULL
		WHERE id = $1 AND claim_token = $7 AND status = 'pending'`
	qDeliveryList = `SELECT d.id, d.webhook_id, d.event_id, d.event_type, w.url, d.status, d.attempts,
			CASE WHEN d.status = 'pending' THEN d.next_attempt_at END, d.last_error, d.last_response_status, d.last_response_body,
			d.last_attempt_at, d.created_at, d.updated_at
		FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
		WHERE w.bank_id = $1 AND d.webhook_id = $2 AND ($3::timestamptz IS NULL OR d.created_at < $3)
		ORDER BY d.created_at DESC, d.id LIMIT $4`
)

// CreateWebhook stores a webhook, creating the bank if needed. A bank
// deleted between the two is a BankNotFoundError (the delete won).
func (s *Store) CreateWebhook(ctx context.Context, w Webhook) (Webhook, error) {
	if err := s.EnsureBank(ctx, w.BankID); err != nil {
		return w, err
	}
	out, err := scanWebhook(s.pool.QueryRow(ctx, qWebhookInsert, w.ID, w.BankID, w.URL, w.Secret, w.EventTypes, w.Enabled, w.HTTPConfig))
	if err != nil {
		return out, fmt.Errorf("create webhook bank %s: %w", w.BankID, translateIn(w.BankID, err))
	}
	return out, nil
}

// ListWebhooks returns one page of a bank's webhooks and the total.
func (s *Store) ListWebhooks(ctx context.Context, bankID string, limit, offset int) ([]Webhook, int, error) {
	rows, err := s.pool.Query(ctx, qWebhookList, bankID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list webhooks bank %s: %w", bankID, err)
	}
	out, total, err := countedRows(rows, scanWebhook)
	if err != nil {
		return nil, 0, fmt.Errorf("list webhooks bank %s: %w", bankID, err)
	}
	return out, total, nil
}

// GetWebhook returns one webhook of a bank, or ErrNotFound.
func (s *Store) GetWebhook(ctx context.Context, bankID string, id uuid.UUID) (Webhook, error) {
	w, err := scanWebhook(s.pool.QueryRow(ctx, qWebhookGet, bankID, id))
	if err != nil {
		return w, fmt.Errorf("get webhook %s/%s: %w", bankID, id, translate(err))
	}
	return w, nil
}

// UpdateWebhook changes the given fields of a webhook.
func (s *Store) UpdateWebhook(ctx context.Context, bankID string, id uuid.UUID, p WebhookPatch) (Webhook, error) {
	var types, cfg any
	if p.EventTypes != nil {
		types = *p.EventTypes
	}
	if len(p.HTTPConfig) > 0 {
		cfg = p.HTTPConfig
	}
	w, err := scanWebhook(s.pool.QueryRow(ctx, qWebhookUpdate, bankID, id, p.URL, p.Secret, types, p.Enabled, cfg))
	if err != nil {
		return w, fmt.Errorf("update webhook %s/%s: %w", bankID, id, translate(err))
	}
	return w, nil
}

// DeleteWebhook removes a webhook and its deliveries.
func (s *Store) DeleteWebhook(ctx context.Context, bankID string, id uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, qWebhookDelete, bankID, id)
	if err != nil {
		return fmt.Errorf("delete webhook %s/%s: %w", bankID, id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete webhook %s/%s: %w", bankID, id, ErrNotFound)
	}
	return nil
}

// QueueWebhookEvent queues a delivery of the event to every enabled
// webhook of its bank that subscribes to its type. Queuing one event twice
// (same ID) queues nothing more.
func (s *Store) QueueWebhookEvent(ctx context.Context, ev WebhookEvent) error {
	if _, err := s.pool.Exec(ctx, qDeliveryQueue, ev.BankID, ev.ID, ev.Type, ev.Payload); err != nil {
		return fmt.Errorf("queue webhook event %s bank %s: %w", ev.Type, ev.BankID, err)
	}
	return nil
}

// FinishOperationAnnounced is FinishOperation that also queues the
// webhook event announcing it, in the same transaction: the event is
// queued if and only if this call finished the operation.
func (s *Store) FinishOperationAnnounced(ctx context.Context, id uuid.UUID, status, errMsg string, result json.RawMessage, ev WebhookEvent) (bool, error) {
	var res any
	if len(result) > 0 {
		res = result
	}
	changed := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, qOpFinish, id, status, errMsg, res)
		if err != nil {
			return err
		}
		if changed = tag.RowsAffected() == 1; !changed {
			return nil
		}
		_, err = tx.Exec(ctx, qDeliveryQueue, ev.BankID, ev.ID, ev.Type, ev.Payload)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("finish operation %s: %w", id, err)
	}
	return changed, nil
}

// ClaimDeliveries leases up to limit deliveries that are due.
func (s *Store) ClaimDeliveries(ctx context.Context, limit int) ([]WebhookDelivery, error) {
	rows, err := s.pool.Query(ctx, qDeliveryClaim, limit)
	if err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	defer rows.Close()
	var out []WebhookDelivery
	for rows.Next() {
		var d WebhookDelivery
		if err := rows.Scan(&d.ID, &d.WebhookID, &d.BankID, &d.EventID, &d.EventType, &d.URL, &d.Status, &d.Attempts, &d.Payload,
			&d.Secret, &d.HTTPConfig, &d.ClaimToken); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// DeliverySucceeded records a delivery the endpoint accepted, under the
// sender's claim. It returns false, recording nothing, when the claim is
// no longer the delivery's (its lease ran out and another sender took it).
func (s *Store) DeliverySucceeded(ctx context.Context, d WebhookDelivery, status int, body string) (bool, error) {
	tag, err := s.pool.Exec(ctx, qDeliveryDone, d.ID, status, body, d.ClaimToken)
	if err != nil {
		return false, fmt.Errorf("webhook delivery %s: %w", d.ID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// DeliveryFailed records a failed attempt under the sender's claim: the
// delivery is tried again after retryIn, or marked failed once maxAttempts
// attempts were made. It returns false when the claim was lost.
func (s *Store) DeliveryFailed(ctx context.Context, d WebhookDelivery, status *int, body, errMsg string, maxAttempts int, retryIn time.Duration) (bool, error) {
	tag, err := s.pool.Exec(ctx, qDeliveryFailed, d.ID, status, body, errMsg, maxAttempts, retryIn.String(), d.ClaimToken)
	if err != nil {
		return false, fmt.Errorf("webhook delivery %s: %w", d.ID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// NextDeliveryDue tells when the earliest pending delivery is due (a
// retry's time, or a lost claim's end); ok is false when none is pending.
func (s *Store) NextDeliveryDue(ctx context.Context) (at time.Time, ok bool, err error) {
	var t *time.Time
	if err := s.pool.QueryRow(ctx, qDeliveryNextDue).Scan(&t); err != nil {
		return time.Time{}, false, fmt.Errorf("next webhook delivery due: %w", err)
	}
	if t == nil {
		return time.Time{}, false, nil
	}
	return *t, true, nil
}

// ListDeliveries returns a webhook's deliveries, newest first, created
// before the cursor when one is given.
func (s *Store) ListDeliveries(ctx context.Context, bankID string, webhookID uuid.UUID, before *time.Time, limit int) ([]WebhookDelivery, error) {
	rows, err := s.pool.Query(ctx, qDeliveryList, bankID, webhookID, before, limit)
	if err != nil {
		return nil, fmt.Errorf("list deliveries %s/%s: %w", bankID, webhookID, err)
	}
	defer rows.Close()
	out := []WebhookDelivery{}
	for rows.Next() {
		var d WebhookDelivery
		if err := rows.Scan(&d.ID, &d.WebhookID, &d.EventID, &d.EventType, &d.URL, &d.Status, &d.Attempts, &d.NextRetryAt,
			&d.LastError, &d.LastResponseStatus, &d.LastResponseBody, &d.LastAttemptAt, &d.CreatedAt, &d.UpdatedAt); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}
