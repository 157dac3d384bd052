-- The keyword arm's GIN index leads with the bank.
--
-- With the full-text index on search_tsv alone, a bank's keyword search read
-- the posting lists of its terms for every bank in the table and dropped the
-- other banks' rows afterwards: in a table of a million facts, a bank of 133
-- spent 69 ms there on a common word. With bank_id as the index's first
-- column (btree_gin gives text a GIN operator class), the scan intersects the
-- bank's posting list with the terms' inside the index, skipping through the
-- long lists, so a small bank pays for its own rows. Every full-text search
-- in memstream filters by bank, so the single-column index goes.
CREATE INDEX memory_units_bank_tsv_idx ON memory_units USING gin (bank_id, search_tsv);
DROP INDEX memory_units_tsv_idx;
