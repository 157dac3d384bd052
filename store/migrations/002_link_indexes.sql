-- Entity co-mention links look up "the most recent facts that mention this
-- entity" for every new fact. Without the time on unit_entities that was a
-- sort over every fact of the entity (all of them, for the user), per new
-- fact: quadratic in a bank's size. Keeping mentioned_at here lets an index
-- answer it with a short scan.
ALTER TABLE unit_entities ADD COLUMN mentioned_at timestamptz;
UPDATE unit_entities ue SET mentioned_at = m.mentioned_at FROM memory_units m WHERE m.id = ue.unit_id;
CREATE INDEX unit_entities_recent_idx ON unit_entities (entity_id, mentioned_at DESC);
