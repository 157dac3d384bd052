-- The trigram indexes on entity names are read by every recall that names
-- someone (the graph arm's seeds) and written only when an entity or alias
-- is new. With GIN's fast update, new entries wait in an unsorted pending
-- list that each search scans in full until autovacuum or the list's limit
-- merges it: after a 300-event burst the lists held about 2 700 entries
-- and the graph arm took 35-75 ms instead of 5-8 ms (docs/BENCHMARKS.md,
-- "where the time goes"). Direct insertion costs a few index pages per new
-- name, once.
ALTER INDEX entities_name_trgm_idx SET (fastupdate = off);
ALTER INDEX entity_aliases_trgm_idx SET (fastupdate = off);
SELECT gin_clean_pending_list('entities_name_trgm_idx'::regclass);
SELECT gin_clean_pending_list('entity_aliases_trgm_idx'::regclass);
