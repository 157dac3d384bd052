-- One row per request memstream sent to the configured LLM for a bank
-- (Hindsight's llm_requests, served by GET …/llm-requests and …/stats).
-- Prompts and answers are not stored: they hold the bank's content, which
-- lives in its facts already, under their deletion rules. The table is
-- bounded by llm.trace_retention and llm.trace_max_per_bank (the recorder
-- prunes it), and a bank's rows go with the bank.
CREATE TABLE llm_requests (
    id              uuid PRIMARY KEY,
    bank_id         text NOT NULL REFERENCES banks (id) ON DELETE CASCADE,
    operation       text,
    scope           text,
    trace_id        text,
    span_id         text,
    parent_span_id  text,
    provider        text,
    model           text,
    status          text NOT NULL,
    started_at      timestamptz NOT NULL,
    ended_at        timestamptz NOT NULL,
    duration_ms     int NOT NULL,
    input_tokens    int,
    output_tokens   int,
    cached_tokens   int,
    thoughts_tokens int,
    total_tokens    int,
    error           text,
    llm_info        jsonb NOT NULL DEFAULT '{}'::jsonb,
    metadata        jsonb NOT NULL DEFAULT '{}'::jsonb
);
-- Listing and stats read one bank newest first (a backward scan); the
-- per-bank cap counts down the same index.
CREATE INDEX llm_requests_bank_idx ON llm_requests (bank_id, started_at, id);
-- Age pruning deletes across banks, oldest first.
CREATE INDEX llm_requests_started_idx ON llm_requests (started_at);
