// Package bankindex keeps an HNSW index of their own for the few largest
// banks of the shared memory_units table, so that their semantic search
// does not walk the whole table's graph under a bank filter. The store
// decides the layout in one pass (store.BankIndexPass: bank sizes, the
// bounded policy, CREATE INDEX CONCURRENTLY); this package runs that pass
// in the background, at start and then every interval, with metrics and
// logs. docs/OPERATIONS.md says how the count is bounded and why.
package bankindex
