-- The job queue's upkeep (issue 15 item 11).
--
-- The claim skips banks that have a running job. Without an index that
-- check read the whole jobs table, finished rows included (one per drain,
-- never deleted); this partial index holds only running rows.
CREATE INDEX jobs_running_idx ON jobs (bank_id, kind) WHERE state = 'running';
-- Finished rows are deleted after their retention; superseded jobs were
-- retired without a finish time.
UPDATE jobs SET finished_at = coalesce(locked_at, created_at) WHERE state IN ('done', 'failed') AND finished_at IS NULL;
CREATE INDEX jobs_finished_idx ON jobs (finished_at) WHERE state IN ('done', 'failed');
