-- Consolidating a fact no longer writes its memory_units row.
--
-- consolidated_at lived in memory_units, so every consolidated fact was an
-- UPDATE of its (wide) row: either a non-HOT update, which re-inserts the
-- row into every index of the table and the HNSW graph, or, with the
-- fillfactor 50 of migration 005, a HOT update that needed half of every
-- heap page kept free, about doubling the table. The time a fact was
-- consolidated now lives in a narrow table of its own, written in the same
-- transaction that takes the fact off consolidation_queue; memory_units rows
-- are written once at ingest, and the table goes back to full pages.
CREATE TABLE unit_consolidations (
    unit_id         uuid PRIMARY KEY REFERENCES memory_units (id) ON DELETE CASCADE,
    bank_id         text NOT NULL,
    consolidated_at timestamptz NOT NULL
);
CREATE INDEX unit_consolidations_bank_idx ON unit_consolidations (bank_id, consolidated_at);

INSERT INTO unit_consolidations (unit_id, bank_id, consolidated_at)
SELECT id, bank_id, consolidated_at FROM memory_units
WHERE consolidated_at IS NOT NULL AND fact_type <> 'observation';

-- Every fact but an observation joins the queue when it is stored.
CREATE OR REPLACE FUNCTION memory_units_enqueue_consolidation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO consolidation_queue (unit_id, bank_id)
    SELECT id, bank_id FROM new_units
    WHERE fact_type <> 'observation'
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

ALTER TABLE memory_units DROP COLUMN consolidated_at;
-- New pages are filled again; pages written at fillfactor 50 keep their
-- free space until the table is rewritten (VACUUM FULL or pg_repack, in a
-- maintenance window: docs/OPERATIONS.md).
ALTER TABLE memory_units RESET (fillfactor);
