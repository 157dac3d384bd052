// Package retention bounds the tables that grow with use but are not
// memory: the LLM trace (llm_requests), the API audit log (audit_log) and
// the defense audit (defense_audit). Facts, documents and observations are
// never pruned here; they go with their document or bank.
//
// One Pruner runs every table's Rule on one schedule (at start, then every
// Interval) in every serve process, whatever its roles: the tables are
// written by different roles, and the store's deletes claim rows with SKIP
// LOCKED in bounded batches, so replicas pruning at once split the work
// instead of waiting on each other. Rows deleted are counted per table in
// memstream_retention_pruned_total; a failed prune is logged, counted in
// memstream_retention_errors_total and tried again at the next tick.
package retention
