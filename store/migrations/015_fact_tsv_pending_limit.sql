-- The keyword arm's full-text index is written with every fact and read by
-- every recall (a document-frequency probe per query term, then the arm's
-- search). With GIN's default fast update, new entries wait in a pending
-- list of up to gin_pending_list_limit (4 MB) that each probe scans in
-- full until autovacuum merges it: after two 300-event rounds the list held
-- 83 pages and a probe cost 2.5 ms instead of 0.05 ms (docs/BENCHMARKS.md,
-- "compare"). A 64 kB limit makes the inserting transaction merge the list
-- whenever it passes 8 pages: in bulk, which costs ingest about a third of
-- what direct insertion (fastupdate off) would.
ALTER INDEX memory_units_bank_tsv_idx SET (gin_pending_list_limit = 64);
SELECT gin_clean_pending_list('memory_units_bank_tsv_idx'::regclass);
