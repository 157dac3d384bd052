package store

import "github.com/jackc/pgx/v5/pgxpool"

// Pool lets the store's own tests (package store_test) reach the store's
// pool: the codec test checks the pool's type map, and the link tests read
// the statistics of the store's own connection. It exists only in this
// package's test binary; other packages' tests use pgtest.Pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }
