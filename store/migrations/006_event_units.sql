-- An event with more facts than pipeline.max_facts_per_event is persisted
-- in units, each in its own transaction. Every unit but one claims its own
-- key with unit_of naming the event; the remaining unit claims the event's
-- key itself, so the event counts as ingested (and a replay skips it) only
-- once all of it is stored. Chunks keep the event's key, so a restart finds
-- which of them are stored already.
ALTER TABLE events ADD COLUMN unit_of text;
CREATE INDEX chunks_event_idx ON chunks (bank_id, event_key);
