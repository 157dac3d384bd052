-- The tables behind Hindsight 1.1.0's API families that memstream serves
-- (issue 14): async operations, directives, webhooks with their delivery
-- queue, bank aliases and configuration, the audit log, the knowledge base
-- tree, and uploaded files.

-- Bank configuration overrides (Hindsight's PATCH …/config), by key.
ALTER TABLE banks ADD COLUMN config jsonb NOT NULL DEFAULT '{}'::jsonb;

-- Async work a client can poll: retains, consolidation runs, mental-model
-- refreshes, transfers. A retain's status is derived from its items
-- (persisted in events, or dead-lettered at its Kafka position) and
-- written back once final. No foreign key to banks: a retain is accepted
-- before ingest creates its bank.
CREATE TABLE operations (
    id               uuid PRIMARY KEY,
    bank_id          text NOT NULL,
    kind             text NOT NULL,
    status           text NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'processing', 'completed', 'failed', 'cancelled')),
    items_count      int NOT NULL DEFAULT 0,
    document_id      text,
    mental_model_id  uuid,
    -- A retain's Idempotency-Key (or Hindsight operation_id): a retry
    -- finds the first attempt's row and answers as it did.
    idempotency_key  text,
    request_hash     text,
    request          jsonb NOT NULL DEFAULT '{}'::jsonb,
    response         jsonb,
    result           jsonb,
    error_message    text,
    retry_count      int NOT NULL DEFAULT 0,
    -- Set while the first attempt of an idempotent retain is producing.
    claimed_until    timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    completed_at     timestamptz
);
CREATE UNIQUE INDEX operations_idem_idx ON operations (bank_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX operations_bank_idx ON operations (bank_id, created_at DESC);
CREATE INDEX operations_open_idx ON operations (created_at) WHERE status IN ('pending', 'processing');

-- The events one retain produced, and where each landed on Kafka, so the
-- operation can tell persisted from dead-lettered from pending.
CREATE TABLE operation_items (
    operation_id  uuid NOT NULL REFERENCES operations (id) ON DELETE CASCADE,
    idx           int NOT NULL,
    event_key     text NOT NULL,
    topic         text NOT NULL DEFAULT '',
    partition     int NOT NULL DEFAULT -1,
    "offset"      bigint NOT NULL DEFAULT -1,
    PRIMARY KEY (operation_id, idx)
);

-- Directives: hard rules reflect follows (Hindsight directives).
CREATE TABLE directives (
    id          uuid PRIMARY KEY,
    bank_id     text NOT NULL REFERENCES banks (id) ON DELETE CASCADE,
    name        text NOT NULL,
    content     text NOT NULL,
    priority    int NOT NULL DEFAULT 0,
    is_active   boolean NOT NULL DEFAULT true,
    tags        text[] NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX directives_bank_idx ON directives (bank_id, priority DESC, created_at);

CREATE TABLE webhooks (
    id           uuid PRIMARY KEY,
    bank_id      text NOT NULL REFERENCES banks (id) ON DELETE CASCADE,
    url          text NOT NULL,
    secret       text,
    event_types  text[] NOT NULL,
    enabled      boolean NOT NULL DEFAULT true,
    http_config  jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_bank_idx ON webhooks (bank_id);

-- Deliveries are queued in the transaction that finishes the work they
-- announce and retried from here with backoff; claimed with SKIP LOCKED so
-- any API replica may send them.
CREATE TABLE webhook_deliveries (
    id                    uuid PRIMARY KEY,
    webhook_id            uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    bank_id               text NOT NULL,
    event_id              uuid NOT NULL,
    event_type            text NOT NULL,
    payload               text NOT NULL,
    status                text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts              int NOT NULL DEFAULT 0,
    next_attempt_at       timestamptz NOT NULL DEFAULT now(),
    last_error            text,
    last_response_status  int,
    last_response_body    text,
    last_attempt_at       timestamptz,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_hook_idx ON webhook_deliveries (webhook_id, created_at DESC);

-- Other names a bank answers to.
CREATE TABLE bank_aliases (
    alias       text PRIMARY KEY,
    bank_id     text NOT NULL REFERENCES banks (id) ON DELETE CASCADE,
    is_primary  boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bank_aliases_bank_idx ON bank_aliases (bank_id);

-- What was done through the API, per bank (Hindsight's audit log). The
-- request is summarised, never stored whole: it may hold the content.
CREATE TABLE audit_log (
    id           uuid PRIMARY KEY,
    bank_id      text,
    action       text NOT NULL,
    transport    text NOT NULL DEFAULT 'http',
    status       int NOT NULL,
    started_at   timestamptz NOT NULL,
    ended_at     timestamptz NOT NULL,
    metadata     jsonb NOT NULL DEFAULT '{}'::jsonb,
    request      jsonb,
    response     jsonb
);
CREATE INDEX audit_log_bank_idx ON audit_log (bank_id, started_at DESC);

-- The knowledge base: folders and pages; a page is a mental model.
CREATE TABLE knowledge_nodes (
    id               uuid PRIMARY KEY,
    bank_id          text NOT NULL REFERENCES banks (id) ON DELETE CASCADE,
    kind             text NOT NULL CHECK (kind IN ('folder', 'page')),
    name             text NOT NULL,
    parent_id        uuid REFERENCES knowledge_nodes (id) ON DELETE CASCADE,
    mental_model_id  uuid REFERENCES mental_models (id) ON DELETE CASCADE,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX knowledge_nodes_bank_idx ON knowledge_nodes (bank_id, parent_id);

-- Uploaded files (retain_files attachments) and export archives.
CREATE TABLE files (
    key          text PRIMARY KEY,
    bank_id      text NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('attachment', 'archive')),
    document_id  text,
    filename     text,
    media_type   text NOT NULL,
    sha256       text NOT NULL,
    data         bytea NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX files_bank_doc_idx ON files (bank_id, document_id);

-- Each memory edit is kept, as observations' changes are.
ALTER TABLE observation_history DROP CONSTRAINT observation_history_action_check;
ALTER TABLE observation_history ADD CONSTRAINT observation_history_action_check
    CHECK (action IN ('create', 'update', 'invalidate', 'merge', 'edit', 'restore'));

-- A document's tags as the client last set them (PATCH …/documents/{id}).
ALTER TABLE documents ADD COLUMN edited_at timestamptz;
