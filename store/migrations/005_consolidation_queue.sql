-- Facts waiting for consolidation live in a queue of their own.
--
-- The partial index memory_units_unconsolidated_idx (WHERE consolidated_at
-- IS NULL) made setting consolidated_at a non-HOT update: PostgreSQL had to
-- insert a new entry for the row into every index of memory_units, the
-- HNSW graph included, once per consolidated fact. With the queue, no index
-- of memory_units mentions consolidated_at, so marking a fact is a HOT
-- update when its page has room (fillfactor leaves some), and finding the
-- backlog reads this narrow table.
CREATE TABLE consolidation_queue (
    unit_id uuid PRIMARY KEY REFERENCES memory_units (id) ON DELETE CASCADE,
    bank_id text NOT NULL
);
CREATE INDEX consolidation_queue_bank_idx ON consolidation_queue (bank_id);

INSERT INTO consolidation_queue (unit_id, bank_id)
SELECT id, bank_id FROM memory_units
WHERE consolidated_at IS NULL AND fact_type <> 'observation';

DROP INDEX memory_units_unconsolidated_idx;

-- Every fact stored without consolidated_at joins the queue, whoever
-- inserts it; a statement-level trigger adds a batch's rows in one insert.
CREATE FUNCTION memory_units_enqueue_consolidation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO consolidation_queue (unit_id, bank_id)
    SELECT id, bank_id FROM new_units
    WHERE consolidated_at IS NULL AND fact_type <> 'observation'
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER memory_units_enqueue_consolidation AFTER INSERT ON memory_units
    REFERENCING NEW TABLE AS new_units
    FOR EACH STATEMENT EXECUTE FUNCTION memory_units_enqueue_consolidation();

-- Room on each page for the consolidated_at version of its rows.
ALTER TABLE memory_units SET (fillfactor = 50);
