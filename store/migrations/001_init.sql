-- memstream schema, version 1. {{EMBED_DIM}} is replaced by the validated
-- embed.dim at migration time; memstream_meta remembers it so a later
-- change of dimension is refused instead of corrupting the index.

CREATE TABLE memstream_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
INSERT INTO memstream_meta (key, value) VALUES ('embed_dim', '{{EMBED_DIM}}');

CREATE TABLE banks (
    id                  text PRIMARY KEY,
    name                text NOT NULL DEFAULT '',
    mission             text NOT NULL DEFAULT '',
    skepticism          smallint NOT NULL DEFAULT 3 CHECK (skepticism BETWEEN 1 AND 5),
    literalism          smallint NOT NULL DEFAULT 3 CHECK (literalism BETWEEN 1 AND 5),
    empathy             smallint NOT NULL DEFAULT 3 CHECK (empathy BETWEEN 1 AND 5),
    defense_policy      jsonb NOT NULL DEFAULT '{}'::jsonb,
    consolidation_state text NOT NULL DEFAULT 'running' CHECK (consolidation_state IN ('running', 'paused')),
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);

-- One row per ingested event: the event-level idempotency record and the
-- source of events_ingested.
CREATE TABLE events (
    bank_id      text NOT NULL REFERENCES banks (id) ON DELETE CASCADE,
    event_key    text NOT NULL,
    document_id  text NOT NULL,
    topic        text NOT NULL DEFAULT '',
    partition    int NOT NULL DEFAULT -1,
    "offset"     bigint NOT NULL DEFAULT -1,
    facts        int NOT NULL DEFAULT 0,
    ingested_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, event_key)
);

-- Dead-lettered records: metadata only, never the content (it may hold the
-- very secret that got it blocked).
CREATE TABLE dead_letters (
    topic        text NOT NULL,
    partition    int NOT NULL,
    "offset"     bigint NOT NULL,
    bank_id      text,
    error_class  text NOT NULL,
    error_stage  text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic, partition, "offset")
);
CREATE INDEX dead_letters_bank_idx ON dead_letters (bank_id);

CREATE TABLE documents (
    bank_id     text NOT NULL REFERENCES banks (id) ON DELETE CASCADE,
    id          text NOT NULL,
    context     text NOT NULL DEFAULT '',
    tags        text[] NOT NULL DEFAULT '{}',
    metadata    jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, id)
);

CREATE TABLE chunks (
    id            uuid PRIMARY KEY,
    bank_id       text NOT NULL,
    document_id   text NOT NULL,
    event_key     text NOT NULL,
    chunk_index   int NOT NULL,
    text          text NOT NULL,
    content_hash  bytea NOT NULL,
    speaker       text NOT NULL DEFAULT '',
    started_at    timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (bank_id, document_id) REFERENCES documents (bank_id, id) ON DELETE CASCADE
);
CREATE INDEX chunks_doc_idx ON chunks (bank_id, document_id);
CREATE INDEX chunks_hash_idx ON chunks (bank_id, content_hash);

CREATE TABLE memory_units (
    id                   uuid PRIMARY KEY,
    bank_id              text NOT NULL REFERENCES banks (id) ON DELETE CASCADE,
    fact_type            text NOT NULL CHECK (fact_type IN ('world', 'experience', 'observation')),
    text                 text NOT NULL,
    context              text NOT NULL DEFAULT '',
    embedding            halfvec({{EMBED_DIM}}),
    -- search_aux carries CJK bigrams and canonical entity names/aliases so
    -- the keyword arm matches Chinese text and cross-alias queries.
    search_aux           text NOT NULL DEFAULT '',
    search_tsv           tsvector GENERATED ALWAYS AS (
                             setweight(to_tsvector('english', text), 'A') ||
                             setweight(to_tsvector('simple', search_aux), 'B')) STORED,
    occurred_start       timestamptz,
    occurred_end         timestamptz,
    mentioned_at         timestamptz NOT NULL,
    tags                 text[] NOT NULL DEFAULT '{}',
    metadata             jsonb NOT NULL DEFAULT '{}'::jsonb,
    document_id          text,
    chunk_id             uuid,
    source_event_id      text,
    source_message_index int,
    idempotency_key      text NOT NULL,
    proof_count          int NOT NULL DEFAULT 1,
    state                text NOT NULL DEFAULT 'valid' CHECK (state IN ('valid', 'invalidated')),
    invalid_reason       text,
    trend                text,
    consolidated_at      timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    UNIQUE (bank_id, idempotency_key)
);
-- Keep the half-precision vector inline: out-of-line TOAST storage would
-- cost a second lookup per exact distance.
ALTER TABLE memory_units ALTER COLUMN embedding SET STORAGE PLAIN;
CREATE INDEX memory_units_embedding_idx ON memory_units USING hnsw (embedding halfvec_cosine_ops) WITH (m = 16, ef_construction = 64);
CREATE INDEX memory_units_tsv_idx ON memory_units USING gin (search_tsv);
CREATE INDEX memory_units_bank_type_idx ON memory_units (bank_id, fact_type, state);
CREATE INDEX memory_units_mentioned_idx ON memory_units (bank_id, mentioned_at);
CREATE INDEX memory_units_occurred_idx ON memory_units (bank_id, occurred_start, occurred_end);
CREATE INDEX memory_units_tags_idx ON memory_units USING gin (tags);
CREATE INDEX memory_units_doc_idx ON memory_units (bank_id, document_id);
CREATE INDEX memory_units_unconsolidated_idx ON memory_units (bank_id, created_at)
    WHERE consolidated_at IS NULL AND fact_type <> 'observation';

CREATE TABLE entities (
    id              uuid PRIMARY KEY,
    bank_id         text NOT NULL REFERENCES banks (id) ON DELETE CASCADE,
    canonical_name  text NOT NULL,
    kind            text NOT NULL DEFAULT 'other',
    first_seen      timestamptz NOT NULL,
    last_seen       timestamptz NOT NULL,
    mention_count   int NOT NULL DEFAULT 0,
    merged_into     uuid REFERENCES entities (id),
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX entities_bank_idx ON entities (bank_id, kind);
CREATE INDEX entities_name_trgm_idx ON entities USING gin (lower(canonical_name) gin_trgm_ops);

CREATE TABLE entity_aliases (
    bank_id     text NOT NULL,
    alias_key   text NOT NULL,
    alias       text NOT NULL,
    entity_id   uuid NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, alias_key, entity_id)
);
CREATE INDEX entity_aliases_entity_idx ON entity_aliases (entity_id);
CREATE INDEX entity_aliases_trgm_idx ON entity_aliases USING gin (alias_key gin_trgm_ops);

CREATE TABLE unit_entities (
    unit_id    uuid NOT NULL REFERENCES memory_units (id) ON DELETE CASCADE,
    entity_id  uuid NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    PRIMARY KEY (unit_id, entity_id)
);
CREATE INDEX unit_entities_entity_idx ON unit_entities (entity_id);

CREATE TABLE memory_links (
    bank_id    text NOT NULL,
    from_id    uuid NOT NULL REFERENCES memory_units (id) ON DELETE CASCADE,
    to_id      uuid NOT NULL REFERENCES memory_units (id) ON DELETE CASCADE,
    link_type  text NOT NULL CHECK (link_type IN ('entity', 'temporal', 'semantic', 'causes', 'caused_by', 'enables', 'prevents')),
    weight     real NOT NULL DEFAULT 1,
    PRIMARY KEY (from_id, to_id, link_type)
);
CREATE INDEX memory_links_to_idx ON memory_links (to_id);

CREATE TABLE observation_evidence (
    observation_id  uuid NOT NULL REFERENCES memory_units (id) ON DELETE CASCADE,
    memory_id       uuid NOT NULL REFERENCES memory_units (id) ON DELETE CASCADE,
    quote           text NOT NULL,
    relevance       real NOT NULL DEFAULT 1,
    evidence_at     timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (observation_id, memory_id)
);
CREATE INDEX observation_evidence_memory_idx ON observation_evidence (memory_id);

CREATE TABLE observation_history (
    id              bigserial PRIMARY KEY,
    observation_id  uuid NOT NULL REFERENCES memory_units (id) ON DELETE CASCADE,
    action          text NOT NULL CHECK (action IN ('create', 'update', 'invalidate', 'merge')),
    old_text        text,
    new_text        text,
    reason          text NOT NULL DEFAULT '',
    memory_ids      uuid[] NOT NULL DEFAULT '{}',
    changed_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX observation_history_obs_idx ON observation_history (observation_id, id);

CREATE TABLE mental_models (
    id                 uuid PRIMARY KEY,
    bank_id            text NOT NULL REFERENCES banks (id) ON DELETE CASCADE,
    name               text NOT NULL,
    source_query       text NOT NULL,
    content            text NOT NULL DEFAULT '',
    tags               text[] NOT NULL DEFAULT '{}',
    max_tokens         int NOT NULL DEFAULT 2048,
    based_on           jsonb NOT NULL DEFAULT '{}'::jsonb,
    last_refreshed_at  timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (bank_id, name)
);

CREATE TABLE mental_model_history (
    id               bigserial PRIMARY KEY,
    mental_model_id  uuid NOT NULL REFERENCES mental_models (id) ON DELETE CASCADE,
    content          text NOT NULL,
    refreshed_at     timestamptz NOT NULL DEFAULT now()
);

-- Background work, enqueued in the same transaction as the facts it
-- concerns and claimed with FOR UPDATE SKIP LOCKED. unique_key collapses
-- repeated wake-ups for one bank into one pending job.
CREATE TABLE jobs (
    id            bigserial PRIMARY KEY,
    kind          text NOT NULL,
    bank_id       text NOT NULL,
    payload       jsonb NOT NULL DEFAULT '{}'::jsonb,
    unique_key    text,
    state         text NOT NULL DEFAULT 'available' CHECK (state IN ('available', 'running', 'done', 'failed')),
    attempts      int NOT NULL DEFAULT 0,
    max_attempts  int NOT NULL DEFAULT 10,
    run_at        timestamptz NOT NULL DEFAULT now(),
    locked_at     timestamptz,
    locked_by     text,
    last_error    text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz
);
CREATE UNIQUE INDEX jobs_unique_pending_idx ON jobs (unique_key) WHERE state = 'available' AND unique_key IS NOT NULL;
CREATE INDEX jobs_claim_idx ON jobs (run_at) WHERE state = 'available';

-- Defense audit: what was found, never the value itself.
CREATE TABLE defense_audit (
    bank_id      text NOT NULL,
    event_key    text NOT NULL,
    label        text NOT NULL,
    action       text NOT NULL,
    fingerprint  text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, event_key, label, fingerprint)
);
