-- Mention counts of entities that already exist are recorded as deltas and
-- folded into entities by the worker. Updating the entity row in the
-- ingest transaction row-locked a bank's common entities (the user, above
-- all) until commit, so parallel pipeline lanes queued behind each other.
CREATE TABLE entity_mention_deltas (
    id         bigserial PRIMARY KEY,
    entity_id  uuid NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    mentions   int NOT NULL,
    seen_at    timestamptz NOT NULL
);
CREATE INDEX entity_mention_deltas_entity_idx ON entity_mention_deltas (entity_id);
