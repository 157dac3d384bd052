-- Operations and webhook deliveries that survive a crashed process and
-- cost nothing while there is no work.
--
-- An operation the API runs itself (mental-model refresh, export, import,
-- clone) is claimed by one replica with a lease (claimed_by,
-- claimed_until) that its runner renews; a lease that runs out belongs to
-- a process that died, and the operation is put back (or failed after
-- `runs` claims). claimed_until already meant "held by a process until"
-- for a retain's first attempt, which never becomes processing.
ALTER TABLE operations ADD COLUMN claimed_by text;
ALTER TABLE operations ADD COLUMN runs int NOT NULL DEFAULT 0;
-- When a runner should look at an open operation next: at once for work
-- to run, with a growing interval for a retain or consolidation whose
-- progress is read from the store.
ALTER TABLE operations ADD COLUMN next_check_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX operations_due_idx ON operations (next_check_at) WHERE status IN ('pending', 'processing');

-- A delivery's claim token: only the sender holding the current claim
-- records the attempt's outcome, so a sender whose lease ran out (and whose
-- delivery was sent again by another) cannot undo the other's record.
ALTER TABLE webhook_deliveries ADD COLUMN claim_token uuid;

-- Wake-ups: idle runners and senders wait on these channels instead of
-- polling. A notification only says "look now"; the tables are the truth.
CREATE FUNCTION memstream_notify_operations() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('memstream_operations', '');
    RETURN NULL;
END $$;
CREATE TRIGGER operations_pending_insert AFTER INSERT ON operations
    FOR EACH ROW WHEN (NEW.status = 'pending') EXECUTE FUNCTION memstream_notify_operations();
CREATE TRIGGER operations_pending_update AFTER UPDATE OF status ON operations
    FOR EACH ROW WHEN (NEW.status = 'pending' AND OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION memstream_notify_operations();

CREATE FUNCTION memstream_notify_webhooks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('memstream_webhooks', '');
    RETURN NULL;
END $$;
-- Per row, so an insert that queued nothing (a bank without webhooks)
-- sends nothing; PostgreSQL folds a transaction's identical notifications.
CREATE TRIGGER webhook_deliveries_insert AFTER INSERT ON webhook_deliveries
    FOR EACH ROW EXECUTE FUNCTION memstream_notify_webhooks();
