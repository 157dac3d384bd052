package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	// qBankClock reads the bank's latest event time backwards off the
	// (bank_id, mentioned_at) index. Observations are skipped (their time
	// is that of their newest evidence, so they do not lead it anyway).
	qBankClock = `SELECT max(mentioned_at) FROM memory_units WHERE bank_id = $1 AND fact_type <> 'observation'`
	qMetaGet   = `SELECT value FROM memstream_meta WHERE key = $1`
	qMetaPut   = `INSERT INTO memstream_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`
)

// BankClock returns the bank's event clock: the time of the latest thing
// said in it (the newest mentioned_at of its facts). Trends, recency and
// "now" are measured on it rather than on the wall clock, so a backfill of
// last year's logs is seen as it was lived. A bank with no memories has no
// clock: the zero time and no error.
func (s *Store) BankClock(ctx context.Context, bankID string) (time.Time, error) {
	var t *time.Time
	if err := s.pool.QueryRow(ctx, qBankClock, bankID).Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("bank clock of bank %s: %w", bankID, err)
	}
	if t == nil {
		return time.Time{}, nil
	}
	return t.UTC(), nil
}

// Meta returns the value stored under key in memstream_meta, and whether
// there is one.
func (s *Store) Meta(ctx context.Context, key string) (string, bool, error) {
	var v string
	err := s.pool.QueryRow(ctx, qMetaGet, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("meta %s: %w", key, err)
	}
	return v, true, nil
}

// PutMeta stores value under key in memstream_meta, replacing any value.
func (s *Store) PutMeta(ctx context.Context, key, value string) error {
	if _, err := s.pool.Exec(ctx, qMetaPut, key, value); err != nil {
		return fmt.Errorf("put meta %s: %w", key, err)
	}
	return nil
}
