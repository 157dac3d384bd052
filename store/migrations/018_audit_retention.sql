-- http.audit_retention and defense.audit_retention prune these tables by
-- age across banks, oldest first: without an index on the time each
-- prune would read the whole table. (audit_log's (bank_id, started_at)
-- index serves one bank's listing, not a cut across banks.)
CREATE INDEX audit_log_started_idx ON audit_log (started_at);
CREATE INDEX defense_audit_created_idx ON defense_audit (created_at);
