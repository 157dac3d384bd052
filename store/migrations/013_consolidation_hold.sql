-- Clearing a bank's observations puts its facts back on the queue held:
-- they are consolidated again on the bank's next consolidation run (its
-- next stored fact, or a consolidation asked for), as Hindsight
-- re-consolidates them on its next pass. Consolidated at once, they undid
-- the clear before a client could list it; and a batch adjudicated against
-- the observations the clear deleted must not apply: it finds its facts
-- held and writes nothing.
ALTER TABLE consolidation_queue ADD COLUMN IF NOT EXISTS held boolean NOT NULL DEFAULT false;
CREATE INDEX IF NOT EXISTS consolidation_queue_held_idx ON consolidation_queue (bank_id) WHERE held;

-- A stored fact of the bank releases the held ones.
CREATE OR REPLACE FUNCTION memory_units_enqueue_consolidation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO consolidation_queue (unit_id, bank_id)
    SELECT id, bank_id FROM new_units
    WHERE fact_type <> 'observation'
    ON CONFLICT DO NOTHING;
    UPDATE consolidation_queue SET held = false
    WHERE held AND bank_id IN (SELECT DISTINCT bank_id FROM new_units WHERE fact_type <> 'observation');
    RETURN NULL;
END $$;
