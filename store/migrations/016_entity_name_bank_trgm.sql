-- The trigram index on entity names leads with the bank.
--
-- Every statement that matches entity names by trigram filters by bank
-- (the graph arm's name seeds, resolve's candidates). With the index on
-- lower(canonical_name) alone, the generic plan of the graph arm's seed
-- statement read the bank's entities through entities_bank_idx and
-- compared each with each phrase: in a table of a thousand banks, the
-- largest bank's 1 744 entities times five phrases took 18-48 ms, most of
-- the graph arm's time (docs/BENCHMARKS.md, 1 000 banks). With bank_id as
-- the first column (btree_gin, as in migration 011) the index intersects
-- the bank's entries with the phrase's trigrams: 2.8 ms. Direct insertion
-- (fastupdate off) as in migration 014.
CREATE INDEX entities_bank_name_trgm_idx ON entities USING gin (bank_id, lower(canonical_name) gin_trgm_ops) WITH (fastupdate = off);
DROP INDEX entities_name_trgm_idx;
