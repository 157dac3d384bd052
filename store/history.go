package store

import (
	"context"
	"fmt"
	"time"
)

// qRecentLines reads, for each (bank, document, before) triple, the last
// chunks stored before that time, newest first, off chunks_doc_idx.
const qRecentLines = `SELECT q.i, c.speaker, c.text, c.started_at
	FROM unnest($1::text[], $2::text[], $3::timestamptz[]) WITH ORDINALITY AS q(bank, doc, before, i)
	CROSS JOIN LATERAL (
		SELECT speaker, text, started_at FROM chunks
		WHERE bank_id = q.bank AND document_id = q.doc AND started_at < q.before
		ORDER BY started_at DESC, chunk_index DESC LIMIT $4) c
	ORDER BY q.i, c.started_at`

// DocumentLine is a stored piece of a conversation: who said it, what
// (after defense), and when.
type DocumentLine struct {
	Speaker string
	Text    string
	At      time.Time
}

// RecentLines returns, for each document docs[i] of bank banks[i], up to n
// of its latest stored chunks said before before[i], oldest first, keyed
// bank + "\x00" + document. The pipeline reads it when one message of a
// conversation arrives as its own event and the ones before it came in an
// earlier batch, so the extractor still sees what is being answered.
func (s *Store) RecentLines(ctx context.Context, banks, docs []string, before []time.Time, n int) (map[string][]DocumentLine, error) {
	out := map[string][]DocumentLine{}
	if len(banks) == 0 || n <= 0 {
		return out, nil
	}
	if len(docs) != len(banks) || len(before) != len(banks) {
		return nil, fmt.Errorf("recent lines: %d banks, %d documents, %d times", len(banks), len(docs), len(before))
	}
	rows, err := s.pool.Query(ctx, qRecentLines, banks, docs, before, n)
	if err != nil {
		return nil, fmt.Errorf("recent lines of %d documents: %w", len(banks), err)
	}
	defer rows.Close()
	for rows.Next() {
		var i int64
		var l DocumentLine
		var at *time.Time
		if err := rows.Scan(&i, &l.Speaker, &l.Text, &at); err != nil {
			return nil, fmt.Errorf("recent lines: %w", err)
		}
		if at != nil {
			l.At = *at
		}
		k := banks[i-1] + "\x00" + docs[i-1]
		out[k] = append(out[k], l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("recent lines: %w", err)
	}
	return out, nil
}
