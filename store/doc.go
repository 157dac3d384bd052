// Package store owns memstream's PostgreSQL schema and every query.
//
// It opens the pgx pool (with pgvector types registered), applies the
// embedded numbered migrations under an advisory lock, and exports concrete
// methods for the pipeline, the recall API and the background workers. SQL
// lives in named constants; errors are translated at this boundary
// (pgx.ErrNoRows becomes ErrNotFound).
package store
