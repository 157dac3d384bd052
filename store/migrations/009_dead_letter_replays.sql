-- The console replays dead letters one record or one error class at a
-- time. replayed_at marks a record once it has been re-produced, so it is
-- never produced twice from there: a record without an event_id gets a new
-- idempotency key (its new offset) on every replay. The index serves the
-- console's list by bank and class, newest first.
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS replayed_at timestamptz;
CREATE INDEX IF NOT EXISTS dead_letters_bank_class_idx ON dead_letters (bank_id, error_class, created_at DESC);
