package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// LLMRequest is one request memstream sent to the LLM for a bank
// (Hindsight's llm_requests row). Empty strings and zero token counts are
// stored as NULL: a count the provider did not report is unknown, not 0.
// Prompts and answers are not kept (see migration 017).
type LLMRequest struct {
	ID           uuid.UUID
	BankID       string
	Operation    string
	Scope        string
	TraceID      string
	SpanID       string
	ParentSpanID string
	Provider     string
	Model        string
	// Status is success or error.
	Status    string
	StartedAt time.Time
	EndedAt   time.Time
	// InputTokens … TotalTokens are the provider's usage report.
	InputTokens, OutputTokens, CachedTokens, ThoughtsTokens, TotalTokens int
	Error                                                                string
	// LLMInfo holds what describes the call (finish reason, HTTP status);
	// Metadata what it was for (document, chunks, source memories). Both
	// JSON objects. Read back, Metadata also holds memory_ids, the
	// memories the call created (see ListLLMRequests).
	LLMInfo  json.RawMessage
	Metadata json.RawMessage
}

// DurationMS is the request's latency in milliseconds.
func (r LLMRequest) DurationMS() int64 { return r.EndedAt.Sub(r.StartedAt).Milliseconds() }

// LLMRequestFilter selects a bank's LLM requests; zero fields do not
// filter.
type LLMRequestFilter struct {
	Status, Operation, Scope, Provider, TraceID string
	// CallType is llm, embedding, rerank or decision, told apart by scope
	// as Hindsight does (embedding_*, rerank, decision_*, anything else).
	CallType string
	// DocumentID matches metadata.document_id. MemoryID matches the calls
	// that created the memory (the retain extraction call of its chunk, or
	// for an observation the consolidation calls that decided its
	// evidence) or consumed it (metadata.source_memory_ids).
	DocumentID, MemoryID string
	// Start (inclusive) and End (exclusive) bound started_at.
	Start, End *time.Time
	// Group pages by run (trace_id; an untraced request is its own run)
	// instead of by request: Limit, Offset and the total count runs, and
	// every run on a page is whole.
	Group         bool
	Limit, Offset int
}

// LLMTokenSums are a stats bucket's summed usage.
type LLMTokenSums struct {
	Input    int64 `json:"input"`
	Output   int64 `json:"output"`
	Cached   int64 `json:"cached"`
	Thoughts int64 `json:"thoughts"`
	Total    int64 `json:"total"`
}

// LLMRequestBucket counts a bank's LLM requests in one time bucket.
type LLMRequestBucket struct {
	Time     time.Time      `json:"time"`
	Statuses map[string]int `json:"statuses"`
	Total    int            `json:"total"`
	Tokens   LLMTokenSums   `json:"tokens"`
}

const (
	llmCols = `id, bank_id, coalesce(operation, ''), coalesce(scope, ''), coalesce(trace_id, ''), coalesce(span_id, ''),
		coalesce(parent_span_id, ''), coalesce(provider, ''), coalesce(model, ''), status, started_at, ended_at,
		coalesce(input_tokens, 0), coalesce(output_tokens, 0), coalesce(cached_tokens, 0), coalesce(thoughts_tokens, 0),
		coalesce(total_tokens, 0), coalesce(error, ''), llm_info, ` + llmMetadata
	// llmMetadata is a row r's metadata with the memories the call
	// concerned as metadata.memory_ids, read now rather than written with
	// the row (the ids only exist once the call's answer is stored): for a
	// retain extraction call the facts of the chunks it carried
	// (chunk_ids), in chunk order; for a consolidation call the
	// observations its facts (source_memory_ids) are evidence of. Without
	// any, the key is absent, as in Hindsight.
	llmMetadata = `coalesce(r.metadata || (SELECT jsonb_build_object('memory_ids', jsonb_agg(u.id ORDER BY u.n, u.k, u.id)) FROM (
			SELECT m.id::text AS id, c.n, coalesce(m.source_message_index, 0) AS k
			FROM jsonb_array_elements_text(r.metadata->'chunk_ids') WITH ORDINALITY c(id, n)
			JOIN memory_units m ON m.chunk_id = c.id::uuid AND m.bank_id = r.bank_id
			UNION ALL
			SELECT e.observation_id::text, min(s.n), 0
			FROM jsonb_array_elements_text(r.metadata->'source_memory_ids') WITH ORDINALITY s(id, n)
			JOIN observation_evidence e ON e.memory_id = s.id::uuid
			GROUP BY e.observation_id) u HAVING count(*) > 0), r.metadata)`
	// qLLMAdd skips a request whose bank is gone (deleted while the row
	// waited in the recorder's buffer) instead of failing the batch. The
	// key-share lock waits for a delete of the bank in progress and then
	// finds the bank gone; without it the row passed the check, its
	// foreign key failed once the delete committed, and the batch was lost.
	qLLMAdd = `INSERT INTO llm_requests (id, bank_id, operation, scope, trace_id, span_id, parent_span_id, provider, model,
		status, started_at, ended_at, duration_ms, input_tokens, output_tokens, cached_tokens, thoughts_tokens, total_tokens,
		error, llm_info, metadata)
		SELECT $1, $2, NULLIF($3, ''), NULLIF($4, ''), NULLIF($5, ''), NULLIF($6, ''), NULLIF($7, ''), NULLIF($8, ''),
		       NULLIF($9, ''), $10, $11, $12, $13, NULLIF($14, 0), NULLIF($15, 0), NULLIF($16, 0), NULLIF($17, 0),
		       NULLIF($18, 0), NULLIF($19, ''), $20, $21
		WHERE EXISTS (SELECT 1 FROM banks WHERE id = $2 FOR KEY SHARE)
		ON CONFLICT (id) DO NOTHING`
	// llmFilter is the WHERE clause of the list queries ($1 bank, $2-$11
	// and $14 the filter's fields; empty and NULL filter nothing). A
	// memory ($9, $14 as a uuid) matches the calls that consumed it
	// (source_memory_ids), the extraction call of its chunk (chunk_ids),
	// and for an observation the consolidation calls of its evidence.
	llmFilter = `bank_id = $1 AND ($2 = '' OR status = $2) AND ($3 = '' OR operation = $3) AND ($4 = '' OR scope = $4)
		AND ($5 = '' OR provider = $5) AND ($6 = '' OR trace_id = $6)
		AND ($7 = '' OR CASE $7
			WHEN 'embedding' THEN scope LIKE 'embedding\_%'
			WHEN 'rerank' THEN scope = 'rerank'
			WHEN 'decision' THEN scope LIKE 'decision\_%'
			ELSE NOT (coalesce(scope, '') LIKE 'embedding\_%' OR coalesce(scope, '') = 'rerank' OR coalesce(scope, '') LIKE 'decision\_%')
			END)
		AND ($8 = '' OR metadata->>'document_id' = $8)
		AND ($9 = '' OR metadata->'source_memory_ids' ? $9
			OR metadata->'chunk_ids' ? (SELECT chunk_id::text FROM memory_units WHERE id = $14 AND bank_id = $1)
			OR metadata->'source_memory_ids' ?| ARRAY(SELECT memory_id::text FROM observation_evidence WHERE observation_id = $14))
		AND ($10::timestamptz IS NULL OR started_at >= $10) AND ($11::timestamptz IS NULL OR started_at < $11)`
	qLLMList = `SELECT ` + llmCols + `, count(*) OVER () FROM llm_requests r WHERE ` + llmFilter + `
		ORDER BY started_at DESC, id DESC LIMIT $12 OFFSET $13`
	// qLLMListRuns pages runs, most recently active first, and returns
	// every request of the runs on the page with the number of runs.
	qLLMListRuns = `WITH f AS (SELECT *, coalesce(trace_id, 'single:' || id::text) AS run FROM llm_requests WHERE ` + llmFilter + `),
		runs AS (SELECT run, max(started_at) AS last FROM f GROUP BY run),
		page AS (SELECT run FROM runs ORDER BY last DESC, run LIMIT $12 OFFSET $13)
		SELECT ` + llmCols + `, (SELECT count(*) FROM runs) FROM f r WHERE run IN (SELECT run FROM page)
		ORDER BY started_at DESC, id DESC`
	qLLMStats = `SELECT date_trunc($2, started_at) AS t, status, count(*),
		coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0), coalesce(sum(cached_tokens), 0),
		coalesce(sum(thoughts_tokens), 0), coalesce(sum(total_tokens), 0)
		FROM llm_requests WHERE bank_id = $1 AND started_at >= $3 AND ($4 = '' OR operation = $4)
		AND ($5 = '' OR CASE $5
			WHEN 'embedding' THEN scope LIKE 'embedding\_%'
			WHEN 'rerank' THEN scope = 'rerank'
			WHEN 'decision' THEN scope LIKE 'decision\_%'
			ELSE NOT (coalesce(scope, '') LIKE 'embedding\_%' OR coalesce(scope, '') = 'rerank' OR coalesce(scope, '') LIKE 'decision\_%')
			END)
		GROUP BY t, status ORDER BY t, status`
	// qLLMPruneAge deletes at most $2 requests older than $1 (see
	// pruneBefore).
	qLLMPruneAge = `DELETE FROM llm_requests WHERE id IN (
		SELECT id FROM llm_requests WHERE started_at < $1 ORDER BY started_at LIMIT $2 FOR UPDATE SKIP LOCKED)`
	// qLLMPruneCap deletes a bank's requests beyond its $2 newest.
	qLLMPruneCap = `DELETE FROM llm_requests WHERE bank_id = $1 AND (started_at, id) <= (
		SELECT started_at, id FROM llm_requests WHERE bank_id = $1 ORDER BY started_at DESC, id DESC OFFSET $2 LIMIT 1)`
)

func scanLLMRequest(r scanner, extra ...any) (LLMRequest, error) {
	var q LLMRequest
	err := r.Scan(append([]any{&q.ID, &q.BankID, &q.Operation, &q.Scope, &q.TraceID, &q.SpanID, &q.ParentSpanID, &q.Provider, &q.Model,
		&q.Status, &q.StartedAt, &q.EndedAt, &q.InputTokens, &q.OutputTokens, &q.CachedTokens, &q.ThoughtsTokens, &q.TotalTokens,
		&q.Error, &q.LLMInfo, &q.Metadata}, extra...)...)
	return q, err
}

func jsonObject(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage(`{}`)
	}
	return b
}

// AddLLMRequests writes a batch of recorded requests in one round trip,
// committed without waiting for the WAL flush as the audit log is (a
// PostgreSQL crash may lose the last ~0.6 s of traces, nothing else). A
// request whose bank no longer exists is dropped; an id written before is
// skipped, so a retried batch is harmless.
func (s *Store) AddLLMRequests(ctx context.Context, rs []LLMRequest) error {
	if len(rs) == 0 {
		return nil
	}
	// One batch is one implicit transaction: the setting holds for these
	// inserts alone, and one refused row loses the batch (counted by the
	// recorder).
	var b pgx.Batch
	b.Queue(qAuditAsync)
	for _, r := range rs {
		b.Queue(qLLMAdd, r.ID, r.BankID, r.Operation, r.Scope, r.TraceID, r.SpanID, r.ParentSpanID, r.Provider, r.Model,
			r.Status, r.StartedAt, r.EndedAt, r.DurationMS(), r.InputTokens, r.OutputTokens, r.CachedTokens, r.ThoughtsTokens, r.TotalTokens,
			r.Error, jsonObject(r.LLMInfo), jsonObject(r.Metadata))
	}
	if err := s.pool.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("add %d llm requests: %w", len(rs), err)
	}
	return nil
}

// ListLLMRequests returns one page of a bank's LLM requests, newest first,
// and the total (of requests, or of runs when f.Group). A request's
// Metadata comes with memory_ids, the memories the call created as they
// stand now: a retain extraction call's facts (of the chunks it carried),
// a consolidation call's observations (those its facts are evidence of).
// A memory deleted since is no longer listed, and f.MemoryID then finds
// only the calls that consumed it.
func (s *Store) ListLLMRequests(ctx context.Context, bankID string, f LLMRequestFilter) ([]LLMRequest, int, error) {
	q := qLLMList
	if f.Group {
		q = qLLMListRuns
	}
	// A memory_id that is not a uuid names no memory of the bank; it can
	// still match a source_memory_ids entry as text.
	var memory *uuid.UUID
	if id, err := uuid.Parse(f.MemoryID); err == nil {
		memory = &id
	}
	rows, err := s.pool.Query(ctx, q, bankID, f.Status, f.Operation, f.Scope, f.Provider, f.TraceID, f.CallType,
		f.DocumentID, f.MemoryID, f.Start, f.End, f.Limit, f.Offset, memory)
	if err != nil {
		return nil, 0, fmt.Errorf("llm requests bank %s: %w", bankID, err)
	}
	out, total, err := countedRows(rows, scanLLMRequest)
	if err != nil {
		return nil, 0, fmt.Errorf("llm requests bank %s: %w", bankID, err)
	}
	if len(out) == 0 && f.Offset > 0 {
		// The count rides on the rows; past the last page there are none.
		f.Offset, f.Limit = 0, 1
		_, total, err = s.ListLLMRequests(ctx, bankID, f)
	}
	return out, total, err
}

// LLMRequestStats counts a bank's LLM requests by status and sums their
// tokens per trunc bucket since since; operation and callType filter when
// set.
func (s *Store) LLMRequestStats(ctx context.Context, bankID, operation, callType, trunc string, since time.Time) ([]LLMRequestBucket, error) {
	rows, err := s.pool.Query(ctx, qLLMStats, bankID, trunc, since, operation, callType)
	if err != nil {
		return nil, fmt.Errorf("llm request stats bank %s: %w", bankID, err)
	}
	defer rows.Close()
	out := []LLMRequestBucket{}
	for rows.Next() {
		var t time.Time
		var status string
		var n int
		var tok LLMTokenSums
		if err := rows.Scan(&t, &status, &n, &tok.Input, &tok.Output, &tok.Cached, &tok.Thoughts, &tok.Total); err != nil {
			return nil, fmt.Errorf("llm request stats bank %s: %w", bankID, err)
		}
		if len(out) == 0 || !out[len(out)-1].Time.Equal(t) {
			out = append(out, LLMRequestBucket{Time: t, Statuses: map[string]int{}})
		}
		b := &out[len(out)-1]
		b.Statuses[status] += n
		b.Total += n
		b.Tokens.Input += tok.Input
		b.Tokens.Output += tok.Output
		b.Tokens.Cached += tok.Cached
		b.Tokens.Thoughts += tok.Thoughts
		b.Tokens.Total += tok.Total
	}
	return out, rows.Err()
}

// PruneLLMRequests deletes requests that started before before, and each
// of banks' requests beyond its keep newest; it returns how many rows went.
func (s *Store) PruneLLMRequests(ctx context.Context, before time.Time, banks []string, keep int) (int64, error) {
	n, err := s.pruneBefore(ctx, qLLMPruneAge, "llm requests", before)
	if err != nil {
		return n, err
	}
	for _, b := range banks {
		tag, err := s.pool.Exec(ctx, qLLMPruneCap, b, keep)
		if err != nil {
			return n, fmt.Errorf("prune llm requests bank %s: %w", b, err)
		}
		n += tag.RowsAffected()
	}
	return n, nil
}
