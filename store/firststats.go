package store

import (
	"context"
	"log/slog"
)

// firstStatsFacts is how many facts a process stores before it makes sure
// the recall tables have planner statistics.
const firstStatsFacts = 500

const (
	qNeverAnalyzed = `SELECT coalesce(last_analyze, last_autoanalyze) IS NULL
	FROM pg_stat_user_tables WHERE relid = 'memory_units'::regclass`
	qAnalyzeRecallTables = `ANALYZE memory_units, unit_entities, entities, entity_aliases, memory_links`
)

// noteFacts counts the facts PersistBatch stored and, once this process
// has stored firstStatsFacts, analyzes the recall tables in the
// background if memory_units was never analyzed. Until autovacuum first
// gets to a new database (up to autovacuum_naptime, a minute by default),
// the planner has no statistics: it takes a bank for a few rows and reads
// it through the (bank, type, state) index, testing every row's tsvector,
// and the keyword arm's document-frequency query was four times slower
// (docs/BENCHMARKS.md, compare). It runs once per process, and costs
// nothing where the tables were analyzed before.
func (s *Store) noteFacts(n int) {
	if n == 0 || s.statsChecked.Load() {
		return
	}
	if s.persisted.Add(int64(n)) < firstStatsFacts || !s.statsChecked.CompareAndSwap(false, true) {
		return
	}
	s.bg.Go(func() { s.analyzeIfNever(s.bgCtx) })
}

func (s *Store) analyzeIfNever(ctx context.Context) {
	var never bool
	if err := s.pool.QueryRow(ctx, qNeverAnalyzed).Scan(&never); err != nil {
		if ctx.Err() == nil {
			s.log.Warn("first statistics: check failed", slog.String("error", err.Error()))
		}
		return
	}
	if !never {
		return
	}
	if _, err := s.pool.Exec(ctx, qAnalyzeRecallTables); err != nil && ctx.Err() == nil {
		s.log.Warn("first statistics: analyze failed", slog.String("error", err.Error()))
	}
}
