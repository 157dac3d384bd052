package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// BankSummary is a bank in the bank list, with Hindsight's counters.
type BankSummary struct {
	Bank
	FactCount      int        `json:"fact_count"`
	LastDocumentAt *time.Time `json:"last_document_at"`
	LastWriteAt    *time.Time `json:"last_write_at"`
	Aliases        []string   `json:"aliases"`
}

const (
	qBankPage = `SELECT b.id, b.name, b.mission, b.skepticism, b.literalism, b.empathy, b.defense_policy, b.consolidation_state,
			b.created_at, b.updated_at,
			(SELECT count(*) FROM memory_units m WHERE m.bank_id = b.id AND m.state = 'valid'),
			(SELECT max(d.updated_at) FROM documents d WHERE d.bank_id = b.id),
			(SELECT max(e.ingested_at) FROM events e WHERE e.bank_id = b.id),
			COALESCE((SELECT array_agg(a.alias ORDER BY a.is_primary DESC, a.alias) FROM bank_aliases a WHERE a.bank_id = b.id), '{}'),
			count(*) OVER ()
		FROM banks b
		WHERE b.id = ANY($1::text[]) OR ($2 AND ($3 = '' OR strpos(lower(b.id), lower($3)) > 0 OR strpos(lower(b.name), lower($3)) > 0
			OR EXISTS (SELECT 1 FROM bank_aliases a WHERE a.bank_id = b.id AND strpos(lower(a.alias), lower($3)) > 0)))
		ORDER BY b.id LIMIT $4 OFFSET $5`
	qBankConfig      = `SELECT config FROM banks WHERE id = $1`
	qBankConfigSet   = `UPDATE banks SET config = config || $2, updated_at = now() WHERE id = $1 RETURNING config`
	qBankConfigReset = `UPDATE banks SET config = '{}'::jsonb, updated_at = now() WHERE id = $1 RETURNING config`
	qAliasList       = `SELECT alias, is_primary FROM bank_aliases WHERE bank_id = $1 ORDER BY is_primary DESC, alias`
	qAliasInsert     = `INSERT INTO bank_aliases (alias, bank_id, is_primary) VALUES ($1, $2, $3)`
	qAliasUnprimary  = `UPDATE bank_aliases SET is_primary = false WHERE bank_id = $1 AND alias <> $2`
	qAliasPrimary    = `UPDATE bank_aliases SET is_primary = $3 WHERE bank_id = $1 AND alias = $2`
	qAliasDelete     = `DELETE FROM bank_aliases WHERE bank_id = $1 AND alias = $2`
	qAliasAll        = `SELECT alias, bank_id FROM bank_aliases`
	// qAliasLockBank serialises the alias writes of one bank that make
	// one primary: each cleared the others' flag without seeing an alias
	// added at the same time, and both stayed primary. Key-share locks
	// (ingest's foreign keys) do not wait for it.
	qAliasLockBank = `SELECT 1 FROM banks WHERE id = $1 FOR NO KEY UPDATE`
)

// ListBankSummaries returns one page of banks with their counters, ordered
// by id, and the total. With all false only the banks in ids are listed
// (a key limited to some banks); q filters by id, name or alias.
func (s *Store) ListBankSummaries(ctx context.Context, ids []string, all bool, q string, limit, offset int) ([]BankSummary, int, error) {
	rows, err := s.pool.Query(ctx, qBankPage, ids, all, q, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list banks: %w", err)
	}
	defer rows.Close()
	out := []BankSummary{}
	total := 0
	for rows.Next() {
		var b BankSummary
		var sk, li, em int16
		var n int64
		if err := rows.Scan(&b.ID, &b.Name, &b.Mission, &sk, &li, &em, &b.DefensePolicy, &b.ConsolidationState, &b.CreatedAt, &b.UpdatedAt,
			&b.FactCount, &b.LastDocumentAt, &b.LastWriteAt, &b.Aliases, &n); err != nil {
			return nil, 0, err
		}
		b.Skepticism, b.Literalism, b.Empathy = int(sk), int(li), int(em)
		total = int(n)
		out = append(out, b)
	}
	return out, total, rows.Err()
}

// BankConfig returns a bank's configuration overrides, or ErrNotFound.
func (s *Store) BankConfig(ctx context.Context, bankID string) (map[string]any, error) {
	var raw []byte
	if err := s.pool.QueryRow(ctx, qBankConfig, bankID).Scan(&raw); err != nil {
		return nil, fmt.Errorf("bank config %s: %w", bankID, translate(err))
	}
	out := map[string]any{}
	return out, json.Unmarshal(raw, &out)
}

// SetBankConfig merges overrides into a bank's configuration and returns
// the result; a null value removes an override.
func (s *Store) SetBankConfig(ctx context.Context, bankID string, overrides map[string]any) (map[string]any, error) {
	set := map[string]any{}
	var drop []string
	for k, v := range overrides {
		if v == nil {
			drop = append(drop, k)
			continue
		}
		set[k] = v
	}
	raw, _ := json.Marshal(set)
	var out []byte
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, qBankConfigSet, bankID, raw).Scan(&out); err != nil {
			return translate(err)
		}
		if len(drop) > 0 {
			return tx.QueryRow(ctx, `UPDATE banks SET config = config - $2::text[] WHERE id = $1 RETURNING config`, bankID, drop).Scan(&out)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("set bank config %s: %w", bankID, err)
	}
	res := map[string]any{}
	return res, json.Unmarshal(out, &res)
}

// ResetBankConfig removes every configuration override of a bank.
func (s *Store) ResetBankConfig(ctx context.Context, bankID string) error {
	var raw []byte
	if err := s.pool.QueryRow(ctx, qBankConfigReset, bankID).Scan(&raw); err != nil {
		return fmt.Errorf("reset bank config %s: %w", bankID, translate(err))
	}
	return nil
}

// BankAlias is another name of a bank.
type BankAlias struct {
	Alias   string `json:"alias"`
	Primary bool   `json:"primary"`
}

// ListBankAliases returns a bank's aliases, the primary first.
func (s *Store) ListBankAliases(ctx context.Context, bankID string) ([]BankAlias, error) {
	rows, err := s.pool.Query(ctx, qAliasList, bankID)
	if err != nil {
		return nil, fmt.Errorf("bank aliases %s: %w", bankID, err)
	}
	defer rows.Close()
	out := []BankAlias{}
	for rows.Next() {
		var a BankAlias
		if err := rows.Scan(&a.Alias, &a.Primary); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// AddBankAlias gives a bank another name. An alias that is taken, or that
// is a bank's id, is ErrConflict.
func (s *Store) AddBankAlias(ctx context.Context, bankID, alias string, primary bool) error {
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		if primary {
			var one int
			if err := tx.QueryRow(ctx, qAliasLockBank, bankID).Scan(&one); err != nil {
				if errors.Is(err, pgx.ErrNoRows) {
					return BankNotFoundError{BankID: bankID}
				}
				return translate(err)
			}
		}
		var taken bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM banks WHERE id = $1)`, alias).Scan(&taken); err != nil {
			return err
		}
		if taken {
			return fmt.Errorf("%w: alias is a bank id", ErrConflict)
		}
		if _, err := tx.Exec(ctx, qAliasInsert, alias, bankID, primary); err != nil {
			return translateIn(bankID, err)
		}
		if primary {
			_, err := tx.Exec(ctx, qAliasUnprimary, bankID, alias)
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("add alias %s to bank %s: %w", alias, bankID, err)
	}
	return nil
}

// SetBankAliasPrimary makes an alias the bank's primary one, or not.
func (s *Store) SetBankAliasPrimary(ctx context.Context, bankID, alias string, primary bool) error {
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		if primary {
			var one int
			if err := tx.QueryRow(ctx, qAliasLockBank, bankID).Scan(&one); err != nil {
				return translate(err)
			}
		}
		tag, err := tx.Exec(ctx, qAliasPrimary, bankID, alias, primary)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		if primary {
			_, err = tx.Exec(ctx, qAliasUnprimary, bankID, alias)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("alias %s of bank %s: %w", alias, bankID, err)
	}
	return nil
}

// DeleteBankAlias removes an alias, or returns ErrNotFound.
func (s *Store) DeleteBankAlias(ctx context.Context, bankID, alias string) error {
	tag, err := s.pool.Exec(ctx, qAliasDelete, bankID, alias)
	if err != nil {
		return fmt.Errorf("delete alias %s of bank %s: %w", alias, bankID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete alias %s of bank %s: %w", alias, bankID, ErrNotFound)
	}
	return nil
}

// AllBankAliases maps every alias to its bank.
func (s *Store) AllBankAliases(ctx context.Context) (map[string]string, error) {
	rows, err := s.pool.Query(ctx, qAliasAll)
	if err != nil {
		return nil, fmt.Errorf("bank aliases: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var a, b string
		if err := rows.Scan(&a, &b); err != nil {
			return nil, err
		}
		out[a] = b
	}
	return out, rows.Err()
}

// HindsightStats are the counters of Hindsight's BankStatsResponse.
type HindsightStats struct {
	NodesByFactType     map[string]int            `json:"nodes_by_fact_type"`
	LinksByLinkType     map[string]int            `json:"links_by_link_type"`
	LinksByFactType     map[string]int            `json:"links_by_fact_type"`
	LinksBreakdown      map[string]map[string]int `json:"links_breakdown"`
	LastConsolidatedAt  *time.Time                `json:"last_consolidated_at"`
	LastMemoryWriteAt   *time.Time                `json:"last_memory_write_at"`
	FailedConsolidation int                       `json:"failed_consolidation"`
	OperationsByStatus  map[string]int            `json:"operations_by_status"`
	InvalidatedMemories int                       `json:"invalidated_memories"`
}

const (
	qStatsNodes = `SELECT fact_type, count(*) FROM memory_units WHERE bank_id = $1 AND state = 'valid' GROUP BY fact_type`
	qStatsLinks = `SELECT l.link_type, m.fact_type, count(*) FROM memory_links l JOIN memory_units m ON m.id = l.from_id
		WHERE l.bank_id = $1 GROUP BY l.link_type, m.fact_type`
	qStatsTimes = `SELECT (SELECT max(consolidated_at) FROM unit_consolidations WHERE bank_id = $1),
			(SELECT max(created_at) FROM memory_units WHERE bank_id = $1),
			(SELECT count(*) FROM memory_units WHERE bank_id = $1 AND state = 'invalidated')`
)

// BankHindsightStats returns the counters Hindsight's stats report beyond
// memstream's own.
func (s *Store) BankHindsightStats(ctx context.Context, bankID string) (HindsightStats, error) {
	st := HindsightStats{NodesByFactType: map[string]int{}, LinksByLinkType: map[string]int{}, LinksByFactType: map[string]int{},
		LinksBreakdown: map[string]map[string]int{}}
	rows, err := s.pool.Query(ctx, qStatsNodes, bankID)
	if err != nil {
		return st, fmt.Errorf("stats bank %s: %w", bankID, err)
	}
	for rows.Next() {
		var t string
		var n int
		if err := rows.Scan(&t, &n); err != nil {
			rows.Close()
			return st, err
		}
		st.NodesByFactType[t] = n
	}
	rows.Close()
	if rows, err = s.pool.Query(ctx, qStatsLinks, bankID); err != nil {
		return st, fmt.Errorf("stats bank %s: %w", bankID, err)
	}
	for rows.Next() {
		var lt, ft string
		var n int
		if err := rows.Scan(&lt, &ft, &n); err != nil {
			rows.Close()
			return st, err
		}
		st.LinksByLinkType[lt] += n
		st.LinksByFactType[ft] += n
		if st.LinksBreakdown[ft] == nil {
			st.LinksBreakdown[ft] = map[string]int{}
		}
		st.LinksBreakdown[ft][lt] = n
	}
	rows.Close()
	if err := s.pool.QueryRow(ctx, qStatsTimes, bankID).Scan(&st.LastConsolidatedAt, &st.LastMemoryWriteAt, &st.InvalidatedMemories); err != nil {
		return st, fmt.Errorf("stats bank %s: %w", bankID, err)
	}
	if st.OperationsByStatus, err = s.OperationCounts(ctx, bankID); err != nil {
		return st, err
	}
	return st, nil
}

// TimeBucket counts the memories of each fact type in one time bucket.
type TimeBucket struct {
	Time        time.Time `json:"time"`
	World       int       `json:"world"`
	Experience  int       `json:"experience"`
	Observation int       `json:"observation"`
}

// The time field is one of a fixed set of column names, chosen by index so
// that no SQL is assembled from input.
var timeseriesQueries = map[string]string{
	"created_at":     qTimeseries("created_at"),
	"mentioned_at":   qTimeseries("mentioned_at"),
	"occurred_start": qTimeseries("occurred_start"),
	"updated_at":     qTimeseries("updated_at"),
}

func qTimeseries(col string) string {
	return `SELECT date_trunc($2, ` + col + `) AS t,
			count(*) FILTER (WHERE fact_type = 'world'), count(*) FILTER (WHERE fact_type = 'experience'),
			count(*) FILTER (WHERE fact_type = 'observation')
		FROM memory_units WHERE bank_id = $1 AND state = 'valid' AND ` + col + ` >= $3 AND ` + col + ` IS NOT NULL
		GROUP BY t ORDER BY t`
}

// MemoriesTimeseries counts a bank's valid memories per trunc bucket
// (hour, day, week, month) of field since since.
func (s *Store) MemoriesTimeseries(ctx context.Context, bankID, field, trunc string, since time.Time) ([]TimeBucket, error) {
	q, ok := timeseriesQueries[field]
	if !ok {
		return nil, fmt.Errorf("timeseries: unknown time field %q", field)
	}
	rows, err := s.pool.Query(ctx, q, bankID, trunc, since)
	if err != nil {
		return nil, fmt.Errorf("timeseries bank %s: %w", bankID, err)
	}
	defer rows.Close()
	out := []TimeBucket{}
	for rows.Next() {
		var b TimeBucket
		if err := rows.Scan(&b.Time, &b.World, &b.Experience, &b.Observation); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// TagCount is a tag in use and how many memories carry it.
type TagCount struct {
	Tag   string `json:"tag"`
	Count int    `json:"count"`
}

const qTags = `SELECT t, count(*), count(*) OVER () FROM memory_units m, unnest(m.tags) AS t
	WHERE m.bank_id = $1 AND m.state = 'valid' AND ($2 = '' OR t ILIKE $2)
	GROUP BY t ORDER BY count(*) DESC, t LIMIT $3 OFFSET $4`

// ListTags returns the tags of a bank's valid memories with their counts,
// most used first; pattern is an ILIKE pattern ("" for all).
func (s *Store) ListTags(ctx context.Context, bankID, pattern string, limit, offset int) ([]TagCount, int, error) {
	rows, err := s.pool.Query(ctx, qTags, bankID, pattern, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("tags bank %s: %w", bankID, err)
	}
	defer rows.Close()
	out := []TagCount{}
	total := 0
	for rows.Next() {
		var t TagCount
		var n int64
		if err := rows.Scan(&t.Tag, &t.Count, &n); err != nil {
			return nil, 0, err
		}
		total = int(n)
		out = append(out, t)
	}
	return out, total, rows.Err()
}

// TagScope is one set of tags memories share, with how many do.
type TagScope struct {
	Tags  []string `json:"tags"`
	Count int      `json:"count"`
}

const (
	qObservationScopes = `SELECT tags, count(*), count(*) OVER () FROM (
			SELECT ARRAY(SELECT DISTINCT t FROM unnest(tags) t ORDER BY t) AS tags FROM memory_units
			WHERE bank_id = $1 AND fact_type = 'observation' AND state = 'valid') x
		GROUP BY tags ORDER BY count(*) DESC, tags LIMIT $2 OFFSET $3`
	qFactScopes = `SELECT tags, count(*) FROM (
			SELECT ARRAY(SELECT DISTINCT t FROM unnest(tags) t ORDER BY t) AS tags FROM memory_units
			WHERE bank_id = $1 AND fact_type <> 'observation' AND state = 'valid') x
		GROUP BY tags ORDER BY count(*) DESC, tags LIMIT 10000`
)

// ObservationScopes returns the tag sets of a bank's observations.
func (s *Store) ObservationScopes(ctx context.Context, bankID string, limit, offset int) ([]TagScope, int, error) {
	rows, err := s.pool.Query(ctx, qObservationScopes, bankID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("observation scopes bank %s: %w", bankID, err)
	}
	defer rows.Close()
	out := []TagScope{}
	total := 0
	for rows.Next() {
		var sc TagScope
		var n int64
		if err := rows.Scan(&sc.Tags, &sc.Count, &n); err != nil {
			return nil, 0, err
		}
		total = int(n)
		out = append(out, sc)
	}
	return out, total, rows.Err()
}

// FactScopes returns the tag sets of a bank's valid facts (not
// observations), with counts.
func (s *Store) FactScopes(ctx context.Context, bankID string) ([]TagScope, error) {
	rows, err := s.pool.Query(ctx, qFactScopes, bankID)
	if err != nil {
		return nil, fmt.Errorf("fact scopes bank %s: %w", bankID, err)
	}
	defer rows.Close()
	out := []TagScope{}
	for rows.Next() {
		var sc TagScope
		if err := rows.Scan(&sc.Tags, &sc.Count); err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, rows.Err()
}

const (
	// Locking the bank's facts first waits for a consolidation applying to
	// them (it locks them too): the deletes that follow, with a snapshot
	// taken after, then see the observations it wrote.
	qLockBankFacts     = `SELECT id FROM memory_units WHERE bank_id = $1 AND fact_type <> 'observation' ORDER BY id FOR UPDATE`
	qClearObservations = `DELETE FROM memory_units WHERE bank_id = $1 AND fact_type = 'observation'`
	// Facts whose observations are gone are consolidated again on the
	// bank's next run: back on the queue, held (migration 013), with the
	// facts still waiting, so that no batch read before the clear applies.
	qReconsolidate = `WITH d AS (DELETE FROM unit_consolidations WHERE bank_id = $1 RETURNING unit_id, bank_id)
		INSERT INTO consolidation_queue (unit_id, bank_id, held) SELECT unit_id, bank_id, true FROM d ON CONFLICT DO NOTHING`
	qHoldQueued = `UPDATE consolidation_queue SET held = true WHERE bank_id = $1 AND NOT held`
	// ClearMemories takes its locks in DeleteDocument's order: queue rows,
	// entities, facts, each in id order. Facts before entities, it held a
	// fact an ingest's link waited for while it waited for an entity the
	// ingest held (followMerges): a deadlock (SQLSTATE 40P01). Queue rows
	// first wait for a consolidation of the bank, whose observations the
	// deletes then see.
	qLockBankQueue = `SELECT unit_id FROM consolidation_queue WHERE bank_id = $1 ORDER BY unit_id FOR UPDATE`
	// Read before any lock: a fact whose ingest the entity lock then
	// waits for is not cleared, as when the lock came after the delete.
	qBankFacts     = `SELECT id FROM memory_units WHERE bank_id = $1 AND fact_type <> 'observation'`
	qClearMemories = `DELETE FROM memory_units WHERE bank_id = $1 AND ($2 = '' OR fact_type = $2) AND (fact_type = 'observation' OR id = ANY($3::uuid[]))`
	qClearMentions = `DELETE FROM entity_mention_deltas d USING entities e WHERE e.id = d.entity_id AND e.bank_id = $1`
	// As in DeleteDocument (qDocumentLockEntities): locking the bank's
	// entities waits for an ingest transaction linking a new fact to one of
	// them (its foreign-key check holds a key-share lock), so that
	// qClearEntities, with a snapshot taken after, sees the link and keeps
	// the entity. Deleting it once the lane had committed cascaded the new
	// fact's link away.
	qLockBankEntities = `SELECT id FROM entities WHERE bank_id = $1 ORDER BY id FOR UPDATE`
	qClearEntities    = `DELETE FROM entities e WHERE e.bank_id = $1
		AND NOT EXISTS (SELECT 1 FROM unit_entities ue WHERE ue.entity_id = e.id)
		AND NOT EXISTS (SELECT 1 FROM entities m WHERE m.merged_into = e.id)`
	qMemoryObservations = `SELECT DISTINCT e.observation_id FROM observation_evidence e JOIN memory_units o ON o.id = e.observation_id
		WHERE o.bank_id = $1 AND e.memory_id = $2`
	qDropUnits       = `DELETE FROM memory_units WHERE bank_id = $1 AND id = ANY($2::uuid[])`
	qUnconsolidateOf = `WITH d AS (DELETE FROM unit_consolidations WHERE bank_id = $1 AND unit_id = $2 RETURNING unit_id, bank_id)
		INSERT INTO consolidation_queue (unit_id, bank_id) SELECT unit_id, bank_id FROM d ON CONFLICT DO NOTHING`
)

// ClearObservations deletes every observation of a bank and puts its facts
// back in the consolidation queue, held until the bank's next
// consolidation run (a fact stored, ReleaseHeldConsolidation). It returns
// how many it deleted.
func (s *Store) ClearObservations(ctx context.Context, bankID string) (int, error) {
	var n int
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, qLockBankFacts, bankID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, qClearObservations, bankID)
		if err != nil {
			return err
		}
		n = int(tag.RowsAffected())
		if _, err := tx.Exec(ctx, qHoldQueued, bankID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, qReconsolidate, bankID)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("clear observations bank %s: %w", bankID, err)
	}
	return n, nil
}

// ClearMemories deletes a bank's memories of one type ("" for all, with
// the entities only they named). Events stay recorded, so a replay of the
// stream does not bring them back.
func (s *Store) ClearMemories(ctx context.Context, bankID, factType string) (int, error) {
	var n int
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		facts, err := collectUUIDs(ctx, tx, qBankFacts, bankID)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, qLockBankQueue, bankID); err != nil {
			return err
		}
		if factType == "" {
			if _, err := tx.Exec(ctx, qLockBankEntities, bankID); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, qDocumentLockUnits, facts); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, qClearMemories, bankID, factType, facts)
		if err != nil {
			return err
		}
		n = int(tag.RowsAffected())
		if factType == "" {
			if _, err := tx.Exec(ctx, qClearMentions, bankID); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, qClearEntities, bankID)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("clear memories bank %s: %w", bankID, err)
	}
	return n, nil
}

// ClearMemoryObservations deletes the observations built on one memory and
// puts the memory back in the consolidation queue.
func (s *Store) ClearMemoryObservations(ctx context.Context, bankID string, id uuid.UUID) (int, error) {
	if _, err := s.GetMemory(ctx, bankID, id); err != nil {
		return 0, err
	}
	var n int
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		obs, err := collectUUIDs(ctx, tx, qMemoryObservations, bankID, id)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, qDropUnits, bankID, obs)
		if err != nil {
			return err
		}
		n = int(tag.RowsAffected())
		_, err = tx.Exec(ctx, qUnconsolidateOf, bankID, id)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("clear observations of memory %s/%s: %w", bankID, id, err)
	}
	return n, nil
}

// errNoBank is wrapped into ErrNotFound by callers that need a bank.
var errNoBank = errors.New("bank does not exist")
