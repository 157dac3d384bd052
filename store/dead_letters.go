package store

import (
	"context"
	"fmt"
	"time"
)

// DeadLetter is the metadata of one dead-lettered record: where it came
// from and why it failed. The content stays in the dead-letter topic.
type DeadLetter struct {
	Topic      string     `json:"topic"`
	Partition  int32      `json:"partition"`
	Offset     int64      `json:"offset"`
	BankID     string     `json:"bank_id"`
	ErrorClass string     `json:"error_class"`
	ErrorStage string     `json:"error_stage"`
	CreatedAt  time.Time  `json:"created_at"`
	ReplayedAt *time.Time `json:"replayed_at"`
}

// DeadLetterClass counts a bank's dead letters of one error class.
type DeadLetterClass struct {
	Class string `json:"class"`
	Count int    `json:"count"`
}

// DeadLetterPos names a dead letter by its source position.
type DeadLetterPos struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// maxReplayClaim bounds one replay call; the rest stays for the next.
const maxReplayClaim = 1000

const (
	dlCols  = `topic, partition, "offset", COALESCE(bank_id, ''), error_class, error_stage, created_at, replayed_at`
	qDLList = `SELECT ` + dlCols + ` FROM dead_letters
		WHERE bank_id = $1 AND ($2 = '' OR error_class = $2)
		ORDER BY created_at DESC, topic, partition, "offset" LIMIT $3 OFFSET $4`
	qDLClasses = `SELECT error_class, count(*)::int FROM dead_letters WHERE bank_id = $1
		GROUP BY error_class ORDER BY 2 DESC, 1`
	qDLGet = `SELECT ` + dlCols + ` FROM dead_letters WHERE bank_id = $1 AND topic = $2 AND partition = $3 AND "offset" = $4`
	// A claim marks records replayed before they are produced, so two
	// concurrent replays never produce one record twice. The rows are
	// locked in key order: in the caller's, two replays naming the same
	// records in opposite orders each waited for the other's first, and
	// one failed for a deadlock (SQLSTATE 40P01).
	qDLClaimPositions = `UPDATE dead_letters d SET replayed_at = now()
		FROM (SELECT l.topic, l.partition, l."offset" FROM dead_letters l
			WHERE l.bank_id = $1 AND l.replayed_at IS NULL
			  AND (l.topic, l.partition, l."offset") IN (SELECT * FROM unnest($2::text[], $3::int[], $4::bigint[]))
			ORDER BY l.topic, l.partition, l."offset" FOR UPDATE) p
		WHERE d.topic = p.topic AND d.partition = p.partition AND d."offset" = p."offset"
		RETURNING ` + `d.topic, d.partition, d."offset", COALESCE(d.bank_id, ''), d.error_class, d.error_stage, d.created_at, d.replayed_at`
	qDLClaimClass = `UPDATE dead_letters d SET replayed_at = now()
		WHERE (d.topic, d.partition, d."offset") IN (
			SELECT topic, partition, "offset" FROM dead_letters
			WHERE bank_id = $1 AND error_class = $2 AND replayed_at IS NULL
			ORDER BY created_at LIMIT $3 FOR UPDATE SKIP LOCKED)
		RETURNING d.topic, d.partition, d."offset", COALESCE(d.bank_id, ''), d.error_class, d.error_stage, d.created_at, d.replayed_at`
	qDLUnclaim = `UPDATE dead_letters SET replayed_at = NULL WHERE bank_id = $1 AND topic = $2 AND partition = $3 AND "offset" = $4`
)

func scanDeadLetter(r scanner) (DeadLetter, error) {
	var d DeadLetter
	err := r.Scan(&d.Topic, &d.Partition, &d.Offset, &d.BankID, &d.ErrorClass, &d.ErrorStage, &d.CreatedAt, &d.ReplayedAt)
	return d, err
}

// ListDeadLetters returns a page of a bank's dead letters, newest first,
// optionally of one error class, with the total and the count per class.
func (s *Store) ListDeadLetters(ctx context.Context, bankID, class string, limit, offset int) ([]DeadLetter, int, []DeadLetterClass, error) {
	rows, err := s.pool.Query(ctx, qDLList, bankID, class, limit, offset)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("list dead letters bank %s: %w", bankID, err)
	}
	out := []DeadLetter{}
	for rows.Next() {
		d, err := scanDeadLetter(rows)
		if err != nil {
			rows.Close()
			return nil, 0, nil, fmt.Errorf("list dead letters bank %s: %w", bankID, err)
		}
		out = append(out, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, nil, fmt.Errorf("list dead letters bank %s: %w", bankID, err)
	}
	rows, err = s.pool.Query(ctx, qDLClasses, bankID)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("dead letter classes bank %s: %w", bankID, err)
	}
	defer rows.Close()
	classes := []DeadLetterClass{}
	total := 0 // from the class counts, so a page past the end still knows it
	for rows.Next() {
		var c DeadLetterClass
		if err := rows.Scan(&c.Class, &c.Count); err != nil {
			return nil, 0, nil, fmt.Errorf("dead letter classes bank %s: %w", bankID, err)
		}
		classes = append(classes, c)
		if class == "" || class == c.Class {
			total += c.Count
		}
	}
	return out, total, classes, rows.Err()
}

// GetDeadLetter returns one of a bank's dead letters, or ErrNotFound.
func (s *Store) GetDeadLetter(ctx context.Context, bankID string, p DeadLetterPos) (DeadLetter, error) {
	d, err := scanDeadLetter(s.pool.QueryRow(ctx, qDLGet, bankID, p.Topic, p.Partition, p.Offset))
	if err != nil {
		return d, fmt.Errorf("dead letter %s %s/%d@%d: %w", bankID, p.Topic, p.Partition, p.Offset, translate(err))
	}
	return d, nil
}

// ClaimDeadLetters marks the given dead letters of a bank (or, with
// class set and no positions, up to 1000 of that class) as replayed and
// returns those that were not replayed before. The caller produces them,
// and calls UnclaimDeadLetter for any it could not.
func (s *Store) ClaimDeadLetters(ctx context.Context, bankID, class string, pos []DeadLetterPos) ([]DeadLetter, error) {
	var rowsErr error
	out := []DeadLetter{}
	collect := func(q string, args ...any) {
		rows, err := s.pool.Query(ctx, q, args...)
		if err != nil {
			rowsErr = err
			return
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scanDeadLetter(rows)
			if err != nil {
				rowsErr = err
				return
			}
			out = append(out, d)
		}
		rowsErr = rows.Err()
	}
	if len(pos) > 0 {
		topics := make([]string, len(pos))
		parts := make([]int32, len(pos))
		offs := make([]int64, len(pos))
		for i, p := range pos {
			topics[i], parts[i], offs[i] = p.Topic, p.Partition, p.Offset
		}
		collect(qDLClaimPositions, bankID, topics, parts, offs)
	} else {
		collect(qDLClaimClass, bankID, class, maxReplayClaim)
	}
	if rowsErr != nil {
		return nil, fmt.Errorf("claim dead letters bank %s: %w", bankID, rowsErr)
	}
	return out, nil
}

// UnclaimDeadLetter undoes a claim whose record could not be replayed, so
// a later replay tries it again.
func (s *Store) UnclaimDeadLetter(ctx context.Context, bankID string, p DeadLetterPos) error {
	if _, err := s.pool.Exec(ctx, qDLUnclaim, bankID, p.Topic, p.Partition, p.Offset); err != nil {
		return fmt.Errorf("unclaim dead letter %s %s/%d@%d: %w", bankID, p.Topic, p.Partition, p.Offset, err)
	}
	return nil
}
