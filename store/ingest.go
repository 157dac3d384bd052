package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"
)

// idNamespace makes derived ids stable across processes and replays.
var idNamespace = uuid.MustParse("6f1c2a52-8d0e-4b7a-9a51-3c0b6d5e7f10")

// DeriveID returns the stable id for a row identified by parts. Replays
// derive the same id, so every insert can be ON CONFLICT DO NOTHING.
func DeriveID(parts ...string) uuid.UUID {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return uuid.NewSHA1(idNamespace, h.Sum(nil))
}

// EventRecord is everything one Kafka event produced, ready to persist.
//
// An event too large for one transaction is persisted as several records
// (units). Each unit but the one that claims the event's own key sets
// UnitOf to that key and EventKey to a key of its own; its chunks and audit
// rows are filed under UnitOf, and it does not count as an ingested event.
type EventRecord struct {
	BankID   string
	EventKey string
	// UnitOf is the event's key when this record is one unit of it.
	UnitOf     string
	DocumentID string
	Topic      string
	Partition  int32
	Offset     int64
	Context    string
	Tags       []string
	Metadata   map[string]string
	Chunks     []ChunkRow
	Facts      []FactRow
	Entities   []EntityRow
	Links      []LinkRow
	Audit      []AuditRow
	// ReplaceDocument deletes, in the transaction that stores this record,
	// what earlier events of its document stored (an event with
	// update_mode replace; set on one record of it). A replayed record
	// deletes nothing.
	ReplaceDocument bool
}

// ChunkRow is one chunk of an event's text after defense.
type ChunkRow struct {
	ID        uuid.UUID
	Index     int
	Text      string
	Speaker   string
	StartedAt time.Time
}

// FactRow is one extracted fact.
type FactRow struct {
	ID       uuid.UUID
	FactType string
	Text     string
	Context  string
	// ReplyTo is the quote of the turn the fact answers, embedded before
	// its text (extract.EmbeddingTextOf); empty when it answers none.
	ReplyTo       string
	Embedding     []float32
	SearchAux     string
	OccurredStart *time.Time
	OccurredEnd   *time.Time
	MentionedAt   time.Time
	Tags          []string
	Metadata      map[string]string
	ChunkID       uuid.UUID
	MessageIndex  int
	IdemKey       string
	EntityIDs     []uuid.UUID
}

// EntityRow is a resolved entity mentioned by the batch, new or existing.
type EntityRow struct {
	ID       uuid.UUID
	Name     string
	Kind     string
	Seen     time.Time
	Mentions int
	Aliases  []AliasRow
}

// AliasRow maps a normalised lookup key to an entity.
type AliasRow struct {
	Key   string
	Alias string
}

// LinkRow is a directed, typed edge between two memory units.
type LinkRow struct {
	From, To uuid.UUID
	Type     string
	Weight   float32
}

// AuditRow records a defense finding without its value.
type AuditRow struct {
	Label, Action, Fingerprint string
}

// PersistResult reports what a batch wrote.
type PersistResult struct {
	NewEvents  int
	Duplicates int
	Facts      int
}

const (
	// Banks, like jobs (qEnqueueJob), are inserted in one order: two lanes
	// inserting the same new keys wait for each other's uncommitted rows,
	// and in opposite orders they deadlocked.
	qEnsureBank  = `INSERT INTO banks (id, name) SELECT b, b FROM unnest($1::text[]) AS b ORDER BY b ON CONFLICT (id) DO NOTHING`
	qClaimEvents = `INSERT INTO events (bank_id, event_key, document_id, topic, partition, "offset", facts, unit_of)
		SELECT b, k, d, t, p, o, f, NULLIF(u, '')
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::bigint[], $7::int[], $8::text[]) AS x(b, k, d, t, p, o, f, u)
		ON CONFLICT (bank_id, event_key) DO NOTHING
		RETURNING bank_id, event_key`
	qUpsertDocuments = `INSERT INTO documents (bank_id, id, context, tags, metadata)
		SELECT b, d, c, ARRAY(SELECT jsonb_array_elements_text(t)), m
		FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::jsonb[]) AS x(b, d, c, t, m)
		ON CONFLICT (bank_id, id) DO UPDATE SET updated_at = now()`
	qStageUnits = `CREATE TEMP TABLE stage_units (
		id uuid, bank_id text, fact_type text, text text, context text, reply_to text, embedding halfvec,
		search_aux text, occurred_start timestamptz, occurred_end timestamptz, mentioned_at timestamptz,
		tags text[], metadata jsonb, document_id text, chunk_id uuid, source_event_id text,
		source_message_index int, idempotency_key text) ON COMMIT DROP`
	qInsertUnits = `INSERT INTO memory_units (id, bank_id, fact_type, text, context, reply_to, embedding, search_aux,
		occurred_start, occurred_end, mentioned_at, tags, metadata, document_id, chunk_id, source_event_id,
		source_message_index, idempotency_key)
		SELECT id, bank_id, fact_type, text, context, reply_to, embedding, search_aux, occurred_start, occurred_end,
		mentioned_at, tags, metadata, document_id, chunk_id, source_event_id, source_message_index, idempotency_key
		FROM stage_units ON CONFLICT DO NOTHING`
	qInsertChunks = `INSERT INTO chunks (id, bank_id, document_id, event_key, chunk_index, text, content_hash, speaker, started_at)
		SELECT id, b, d, e, i, t, sha256(convert_to(t, 'UTF8')), s, ts
		FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[], $8::timestamptz[])
		AS x(id, b, d, e, i, t, s, ts)
		ON CONFLICT (id) DO NOTHING`
	// Entities are created without mentions (see ensureEntities); every
	// mention goes to entity_mention_deltas.
	qInsertEntities = `INSERT INTO entities (id, bank_id, canonical_name, kind, first_seen, last_seen, mention_count)
		SELECT i, b, n, k, s, s, 0 FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::timestamptz[]) AS x(i, b, n, k, s)
		ON CONFLICT (id) DO NOTHING`
	qInsertMentionDeltas = `INSERT INTO entity_mention_deltas (entity_id, mentions, seen_at)
		SELECT * FROM unnest($1::uuid[], $2::int[], $3::timestamptz[])`
	// The fold waits for no lock, so it is in no deadlock. It took its
	// deltas, then updated their entities, while a merge (and a document
	// delete, whose entity delete cascades to the deltas) locks the
	// entities, then the deltas: each waited for the other. Now an entity
	// another transaction holds is skipped, and its deltas with it, until
	// the next call.
	qFoldMentions = `WITH c AS MATERIALIZED (
			SELECT id, entity_id FROM entity_mention_deltas ORDER BY id LIMIT 50000 FOR UPDATE SKIP LOCKED),
		e AS MATERIALIZED (
			SELECT id FROM entities WHERE id IN (SELECT entity_id FROM c) ORDER BY id FOR NO KEY UPDATE SKIP LOCKED),
		d AS (
			DELETE FROM entity_mention_deltas WHERE id IN (SELECT c.id FROM c JOIN e ON e.id = c.entity_id)
			RETURNING entity_id, mentions, seen_at),
		g AS (SELECT entity_id, sum(mentions)::int AS n, min(seen_at) AS lo, max(seen_at) AS hi FROM d GROUP BY entity_id)
		UPDATE entities e SET mention_count = GREATEST(e.mention_count + g.n, 0),
			first_seen = LEAST(e.first_seen, g.lo), last_seen = GREATEST(e.last_seen, g.hi)
		FROM g WHERE e.id = g.entity_id`
	// In key order, as qEntityAddAliases: two lanes adding the same new
	// aliases of an existing entity wait for each other's uncommitted
	// rows, and in opposite orders they deadlocked.
	qInsertAliases = `INSERT INTO entity_aliases (bank_id, alias_key, alias, entity_id)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::uuid[]) AS x(b, k, a, e) ORDER BY b, k, e
		ON CONFLICT DO NOTHING`
	// In entity order, as a consolidation links observations
	// (qObsUnitEntities). The batch holds its entities already
	// (followMerges, in id order), so this order takes no new lock; it
	// keeps one order for anything added later.
	qInsertUnitEntities = `INSERT INTO unit_entities (unit_id, entity_id, mentioned_at)
		SELECT u, e, t FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[]) AS x(u, e, t) ORDER BY e, u
		ON CONFLICT DO NOTHING`
	// Each link's foreign key key-share locks the fact it points at, in
	// the order the rows go in, and a temporal link may point at a stored
	// fact of a document being deleted, which no entity lock orders. A
	// document delete locks its facts in id order, so the links go in
	// target order. Nearest first, the ingest held a later fact and waited
	// for an earlier one that the delete held while it waited for the
	// later: a deadlock (SQLSTATE 40P01).
	qInsertLinks = `INSERT INTO memory_links (bank_id, from_id, to_id, link_type, weight)
		SELECT b, f, t, k, w FROM unnest($1::text[], $2::uuid[], $3::uuid[], $4::text[], $5::real[]) AS x(b, f, t, k, w)
		ORDER BY t, f, k
		ON CONFLICT DO NOTHING`
	// Entity co-mention links to the few most recent facts sharing an
	// entity: set-based, so one statement serves the whole batch. Only
	// facts' rows carry a mention time (observations' have none), and
	// unit_entities_recent_idx holds exactly those, so each lookup reads
	// five or six index entries.
	qEntityLinks = `INSERT INTO memory_links (bank_id, from_id, to_id, link_type, weight)
		SELECT u.bank_id, ue.unit_id, o.unit_id, 'entity', 1.0
		FROM unit_entities ue
		JOIN memory_units u ON u.id = ue.unit_id
		CROSS JOIN LATERAL (
			SELECT ue2.unit_id FROM unit_entities ue2
			WHERE ue2.entity_id = ue.entity_id AND ue2.unit_id <> ue.unit_id AND ue2.mentioned_at IS NOT NULL
			ORDER BY ue2.mentioned_at DESC LIMIT 5) o
		WHERE ue.unit_id = ANY($1::uuid[])
		ON CONFLICT DO NOTHING`
	// Semantic links to the nearest facts (cosine similarity ≥ $2). One
	// index probe per fact costs more than the rest of persistence
	// together, so it runs in the background (LinkSemantic), not in the
	// ingest transaction. qLinkLargeBanks names the batch's banks with an
	// HNSW index of their own (BankIndexName) or more than
	// linkExactMaxRows rows (a bounded count each); each of those is
	// searched by its own qSemanticLinksBank, the others' facts by
	// qSemanticLinksExact, which reads their bank's rows exactly
	// ((embedding <=> v) + 0 is a distance no index can serve). Through
	// the table's HNSW index a bank of a shared table loses neighbours:
	// the filtered scan stops after hnsw.max_scan_tuples index tuples; and
	// with the bank a join column the planner can never match a bank's own
	// partial index (docs/BENCHMARKS.md). With the bank a parameter of a
	// custom plan (qLinkSearchSettings) it can.
	// (bankIndexNameSQL's bank_id is b's: pg_index has none.)
	qLinkLargeBanks = `SELECT b.bank_id FROM (SELECT DISTINCT u.bank_id FROM memory_units u
			WHERE u.id = ANY($1::uuid[]) AND u.embedding IS NOT NULL) b
		WHERE EXISTS (SELECT 1 FROM pg_index i
				WHERE i.indexrelid = to_regclass(` + bankIndexNameSQL + `)
				  AND i.indrelid = 'memory_units'::regclass AND i.indisvalid)
			OR (SELECT count(*) FROM (SELECT 1 FROM memory_units m WHERE m.bank_id = b.bank_id
				LIMIT $2::int + 1) x) > $2::int`
	// $3: the large banks, whose facts are left to qSemanticLinksBank.
	qSemanticLinksExact = `INSERT INTO memory_links (bank_id, from_id, to_id, link_type, weight)
		SELECT u.bank_id, u.id, o.id, 'semantic', o.sim
		FROM unnest($1::uuid[]) AS n(id) JOIN memory_units u ON u.id = n.id
		CROSS JOIN LATERAL (
			SELECT m.id, (1 - ((m.embedding <=> u.embedding) + 0))::real AS sim
			FROM memory_units m
			WHERE m.bank_id = u.bank_id AND m.id <> u.id AND m.fact_type <> 'observation'
			ORDER BY (m.embedding <=> u.embedding) + 0, m.id LIMIT 3) o
		WHERE u.embedding IS NOT NULL AND u.bank_id <> ALL($3::text[]) AND o.sim >= $2
		ON CONFLICT DO NOTHING`
	// $3: one bank; the facts of other banks are not its to link.
	qSemanticLinksBank = `INSERT INTO memory_links (bank_id, from_id, to_id, link_type, weight)
		SELECT u.bank_id, u.id, o.id, 'semantic', o.sim
		FROM memory_units u
		CROSS JOIN LATERAL (
			SELECT m.id, (1 - (m.embedding <=> u.embedding))::real AS sim
			FROM memory_units m
			WHERE m.bank_id = $3 AND m.id <> u.id AND m.fact_type <> 'observation'
			ORDER BY m.embedding <=> u.embedding LIMIT 3) o
		WHERE u.id = ANY($1::uuid[]) AND u.bank_id = $3 AND u.embedding IS NOT NULL AND o.sim >= $2
		ON CONFLICT DO NOTHING`
	// force_custom_plan: a generic plan cannot match a bank's partial
	// index, and pgx prepares the statements, so the server would switch
	// to one after five executions.
	qLinkSearchSettings = `SELECT set_config('hnsw.ef_search', '20', true), set_config('hnsw.iterative_scan', 'relaxed_order', true),
		set_config('plan_cache_mode', 'force_custom_plan', true)`
	qInsertAudit = `INSERT INTO defense_audit (bank_id, event_key, label, action, fingerprint)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) ON CONFLICT DO NOTHING`
	// In bank order: two transactions enqueueing for the same banks, none
	// with an available job, wait for each other's new index entries, and
	// in opposite orders (two lanes' batches, the housekeeping re-enqueue)
	// they deadlocked.
	qEnqueueJob = `INSERT INTO jobs (kind, bank_id, unique_key)
		SELECT $1, b, $1 || ':' || b FROM unnest($2::text[]) AS b ORDER BY b
		ON CONFLICT (unique_key) WHERE state = 'available' AND unique_key IS NOT NULL DO NOTHING`
)

// linkExactMaxRows is the most rows a bank without an HNSW index of its
// own may hold for its semantic links to be found by reading all its rows:
// up to it the exact read costs no more than a filtered scan of the
// table's index, which misses a quarter of the neighbours
// (docs/BENCHMARKS.md). A bank with its own index is read through it.
const linkExactMaxRows = 10000

// JobConsolidate is the kind of the per-bank consolidation wake-up job.
const JobConsolidate = "consolidate"

// PersistBatch writes a batch of events in one transaction. Events already
// recorded (a replay) are skipped whole, so replaying never writes twice.
// Consolidation jobs for the touched banks are enqueued in the same
// transaction, so work cannot be lost between the commit and the enqueue.
func (s *Store) PersistBatch(ctx context.Context, evs []EventRecord) (PersistResult, error) {
	if len(evs) == 0 {
		return PersistResult{}, nil
	}
	// Banks and entities are ensured before the batch's transaction, each
	// in a short one of its own. A document delete, a memory clear or the
	// orphan sweep may delete an entity (or a bank delete the bank) in
	// between, and the transaction then fails a foreign key. Run again,
	// the ensure puts the row back. The pipeline dead-letters a record
	// whose persist fails a foreign key (a data error) once it is alone in
	// its batch, so the retry has to be here.
	var res PersistResult
	var err error
	for range persistAttempts {
		if res, err = s.persistBatch(ctx, evs); !isForeignKeyViolation(err) {
			break
		}
		s.log.Debug("batch lost a bank or entity deleted while it was stored; storing it again", "error", err)
	}
	return res, err
}

// persistAttempts bounds how often PersistBatch runs a batch whose bank or
// entity was deleted under it.
const persistAttempts = 3

func isForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}

func (s *Store) persistBatch(ctx context.Context, evs []EventRecord) (PersistResult, error) {
	var res PersistResult
	all := make([]*EventRecord, len(evs))
	for i := range evs {
		all[i] = &evs[i]
	}
	// Banks are ensured in their own short transaction: inside the batch's,
	// a new bank's row stayed uncommitted until the whole batch was, and
	// every other lane with an event of that bank waited for it
	// (docs/BENCHMARKS.md has the measurement). A bank deleted in between
	// fails the batch's foreign key, and PersistBatch's retry ensures it
	// again.
	if _, err := s.pool.Exec(ctx, qEnsureBank, uniqueBanks(all)); err != nil {
		return res, fmt.Errorf("persist batch of %d events (first %s/%s): ensure banks: %w", len(evs), evs[0].BankID, evs[0].EventKey, err)
	}
	if err := ensureEntities(ctx, s.pool, collectEntities(all)); err != nil {
		return res, fmt.Errorf("persist batch of %d events (first %s/%s): %w", len(evs), evs[0].BankID, evs[0].EventKey, err)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		res = PersistResult{}
		evs, err := replaceDocuments(ctx, tx, evs)
		if err != nil {
			return err
		}
		fresh, err := claimEvents(ctx, tx, evs)
		if err != nil {
			return err
		}
		res.Duplicates = len(evs) - len(fresh)
		res.NewEvents = len(fresh)
		if len(fresh) == 0 {
			return nil
		}
		if err := insertDocuments(ctx, tx, fresh); err != nil {
			return err
		}
		if err := insertChunks(ctx, tx, fresh); err != nil {
			return err
		}
		// Where the first foreign key to an entity would lock it: the
		// batch takes documents' rows before entities', as a document
		// delete does, so the two cannot deadlock.
		if err := followMerges(ctx, tx, fresh); err != nil {
			return err
		}
		if err := countMentions(ctx, tx, collectEntities(fresh)); err != nil {
			return err
		}
		// Before the batch's facts are in memory_units, so that finding
		// their stored neighbours never reads the batch itself.
		temporal, err := temporalLinks(ctx, tx, fresh)
		if err != nil {
			return err
		}
		ids, err := insertUnits(ctx, tx, fresh)
		if err != nil {
			return err
		}
		res.Facts = len(ids)
		if err := insertUnitLinks(ctx, tx, fresh, ids, temporal); err != nil {
			return err
		}
		if err := insertAudit(ctx, tx, fresh); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, qEnqueueJob, JobConsolidate, uniqueBanks(fresh)); err != nil {
			return fmt.Errorf("enqueue consolidation: %w", err)
		}
		return nil
	})
	if err != nil {
		return PersistResult{}, fmt.Errorf("persist batch of %d events (first %s/%s): %w", len(evs), evs[0].BankID, evs[0].EventKey, err)
	}
	s.noteFacts(res.Facts)
	return res, nil
}

// qLockEntities takes the batch's entities FOR KEY SHARE, the lock its
// foreign keys take anyway, and reads where each was merged. A merge holds
// both its entities FOR UPDATE: the lock waits for a merge in progress and
// then reads its merged_into, and a merge that comes later waits for the
// batch to commit and moves its rows.
const qLockEntities = `SELECT id, merged_into FROM entities WHERE id = ANY($1::uuid[]) ORDER BY id FOR KEY SHARE`

// maxMergeHops bounds how far followMerges follows merged_into; merges
// repoint earlier ones to their target, so one hop is the rule.
const maxMergeHops = 8

// followMerges points the batch's entity references (its entities, their
// aliases, its facts' mentions) at the surviving entity of any merge
// committed since the batch was resolved. Resolution happens before the
// transaction, so a merge in between left the batch naming the merged-away
// entity: its facts, mention counts and aliases landed there, where
// recall's graph arm and resolve no longer look.
func followMerges(ctx context.Context, tx pgx.Tx, evs []*EventRecord) error {
	seen := map[uuid.UUID]bool{}
	var ids []uuid.UUID
	add := func(id uuid.UUID) {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for _, e := range evs {
		for _, en := range e.Entities {
			add(en.ID)
		}
		for _, f := range e.Facts {
			for _, id := range f.EntityIDs {
				add(id)
			}
		}
	}
	into := map[uuid.UUID]uuid.UUID{}
	for hop := 0; len(ids) > 0; hop++ {
		if hop == maxMergeHops {
			return fmt.Errorf("lock entities: merged_into chains longer than %d", maxMergeHops)
		}
		rows, err := tx.Query(ctx, qLockEntities, ids)
		if err != nil {
			return fmt.Errorf("lock entities: %w", err)
		}
		ids = ids[:0:0]
		for rows.Next() {
			var id uuid.UUID
			var m *uuid.UUID
			if err := rows.Scan(&id, &m); err != nil {
				rows.Close()
				return fmt.Errorf("lock entities: %w", err)
			}
			if m != nil {
				into[id] = *m
				add(*m) // locked in the next hop, so it cannot be merged away in turn
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("lock entities: %w", err)
		}
	}
	if len(into) == 0 {
		return nil
	}
	survivor := func(id uuid.UUID) uuid.UUID {
		for range maxMergeHops {
			next, ok := into[id]
			if !ok {
				break
			}
			id = next
		}
		return id
	}
	for _, e := range evs {
		for i := range e.Entities {
			e.Entities[i].ID = survivor(e.Entities[i].ID)
		}
		for i := range e.Facts {
			f := &e.Facts[i]
			if len(f.EntityIDs) == 0 {
				continue
			}
			ents := make([]uuid.UUID, 0, len(f.EntityIDs))
			for _, id := range f.EntityIDs {
				if id = survivor(id); !slices.Contains(ents, id) {
					ents = append(ents, id)
				}
			}
			f.EntityIDs = ents
		}
	}
	// The batch's aliases went in before the transaction (ensureEntities),
	// on the entity resolved then; a merge that moved the entity's aliases
	// before they were added left them behind. They follow it now.
	merged := make([]uuid.UUID, 0, len(into))
	for id := range into {
		merged = append(merged, id)
	}
	if _, err := tx.Exec(ctx, qDropMergedAliases, merged); err != nil {
		return fmt.Errorf("aliases of merged entities: %w", err)
	}
	if b := collectEntities(evs); len(b.aBank) > 0 {
		if _, err := tx.Exec(ctx, qInsertAliases, b.aBank, b.aKey, b.aAlias, b.aEnt); err != nil {
			return fmt.Errorf("aliases of merged entities: %w", err)
		}
	}
	return nil
}

// qDropMergedAliases deletes what aliases merged-away entities still hold:
// a merge moves them all to its target, so any left came in after it.
const qDropMergedAliases = `DELETE FROM entity_aliases WHERE entity_id = ANY($1::uuid[])`

// eventOf is the key of the event the record belongs to.
func (e *EventRecord) eventOf() string {
	if e.UnitOf != "" {
		return e.UnitOf
	}
	return e.EventKey
}

func uniqueBanks(evs []*EventRecord) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range evs {
		if !seen[e.BankID] {
			seen[e.BankID] = true
			out = append(out, e.BankID)
		}
	}
	return out
}

func claimEvents(ctx context.Context, tx pgx.Tx, evs []EventRecord) ([]*EventRecord, error) {
	n := len(evs)
	banks, keys, docs, topics, units := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	parts, facts, offs := make([]int32, n), make([]int32, n), make([]int64, n)
	for i, e := range evs {
		banks[i], keys[i], docs[i], topics[i], units[i] = e.BankID, e.EventKey, e.DocumentID, e.Topic, e.UnitOf
		parts[i], offs[i], facts[i] = e.Partition, e.Offset, int32(len(e.Facts))
	}
	rows, err := tx.Query(ctx, qClaimEvents, banks, keys, docs, topics, parts, offs, facts, units)
	if err != nil {
		return nil, fmt.Errorf("claim events: %w", err)
	}
	claimed := map[[2]string]bool{}
	for rows.Next() {
		var b, k string
		if err := rows.Scan(&b, &k); err != nil {
			return nil, err
		}
		claimed[[2]string{b, k}] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim events: %w", err)
	}
	var fresh []*EventRecord
	for i := range evs {
		k := [2]string{evs[i].BankID, evs[i].EventKey}
		if claimed[k] {
			fresh = append(fresh, &evs[i])
			delete(claimed, k) // a key twice in one batch is written once
		}
	}
	return fresh, nil
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func insertDocuments(ctx context.Context, tx pgx.Tx, evs []*EventRecord) error {
	var banks, ids, ctxs, tags, metas []string
	seen := map[[2]string]bool{}
	for _, e := range evs {
		k := [2]string{e.BankID, e.DocumentID}
		if seen[k] {
			continue
		}
		seen[k] = true
		banks, ids, ctxs = append(banks, e.BankID), append(ids, e.DocumentID), append(ctxs, e.Context)
		t := e.Tags
		if t == nil {
			t = []string{}
		}
		m := e.Metadata
		if m == nil {
			m = map[string]string{}
		}
		tags, metas = append(tags, jsonOf(t)), append(metas, jsonOf(m))
	}
	if _, err := tx.Exec(ctx, qUpsertDocuments, banks, ids, ctxs, tags, metas); err != nil {
		return fmt.Errorf("documents: %w", err)
	}
	return nil
}

func insertChunks(ctx context.Context, tx pgx.Tx, evs []*EventRecord) error {
	var ids []uuid.UUID
	var banks, docs, keys, texts, speakers []string
	var idx []int32
	var starts []time.Time
	for _, e := range evs {
		for _, c := range e.Chunks {
			ids, banks, docs, keys = append(ids, c.ID), append(banks, e.BankID), append(docs, e.DocumentID), append(keys, e.eventOf())
			idx, texts, speakers, starts = append(idx, int32(c.Index)), append(texts, c.Text), append(speakers, c.Speaker), append(starts, c.StartedAt)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, qInsertChunks, ids, banks, docs, keys, idx, texts, speakers, starts); err != nil {
		return fmt.Errorf("chunks: %w", err)
	}
	return nil
}

// entityBatch is a batch's entities, one row per id in one global order,
// with their summed mention counts and their aliases.
type entityBatch struct {
	ids                 []uuid.UUID
	banks, names, kinds []string
	seen                []time.Time
	counts              []int32
	aBank, aKey, aAlias []string
	aEnt                []uuid.UUID
}

func collectEntities(evs []*EventRecord) entityBatch {
	// One row per entity id: counts from several events fold together,
	// since ON CONFLICT cannot touch one row twice in a statement.
	type agg struct {
		row  EntityRow
		bank string
		n    int
	}
	byID := map[uuid.UUID]*agg{}
	var order []uuid.UUID
	var b entityBatch
	aliasSeen := map[string]bool{}
	for _, e := range evs {
		for _, en := range e.Entities {
			a, ok := byID[en.ID]
			if !ok {
				a = &agg{row: en, bank: e.BankID}
				byID[en.ID] = a
				order = append(order, en.ID)
			} else if en.Seen.After(a.row.Seen) {
				a.row.Seen = en.Seen
			}
			a.bank = e.BankID
			a.n += max(en.Mentions, 1)
			for _, al := range en.Aliases {
				k := e.BankID + "\x00" + al.Key + "\x00" + en.ID.String()
				if aliasSeen[k] {
					continue
				}
				aliasSeen[k] = true
				b.aBank, b.aKey, b.aAlias, b.aEnt = append(b.aBank, e.BankID), append(b.aKey, al.Key), append(b.aAlias, al.Alias), append(b.aEnt, en.ID)
			}
		}
	}
	// One global order, so two lanes creating the same new entities wait
	// for each other instead of deadlocking.
	slices.SortFunc(order, func(x, y uuid.UUID) int { return bytes.Compare(x[:], y[:]) })
	for _, id := range order {
		a := byID[id]
		b.ids = append(b.ids, id)
		b.banks, b.names, b.kinds = append(b.banks, a.bank), append(b.names, a.row.Name), append(b.kinds, a.row.Kind)
		b.seen, b.counts = append(b.seen, a.row.Seen), append(b.counts, int32(a.n))
	}
	return b
}

// ensureEntities creates the batch's entities that do not exist yet, with
// no mentions, and their aliases, in a transaction of their own before
// the batch's. Inside it, a new entity's row stayed uncommitted until the
// whole batch was, and every other lane naming the same new entity (the
// user, a shared friend) waited for that (docs/BENCHMARKS.md).
// An entity whose batch then fails is left with no facts and no
// mentions; the retry finds it.
func ensureEntities(ctx context.Context, pool *pgxpool.Pool, b entityBatch) error {
	if len(b.ids) == 0 {
		return nil
	}
	var q pgx.Batch
	q.Queue(qInsertEntities, b.ids, b.banks, b.names, b.kinds, b.seen)
	if len(b.aBank) > 0 {
		q.Queue(qInsertAliases, b.aBank, b.aKey, b.aAlias, b.aEnt)
	}
	if err := pool.SendBatch(ctx, &q).Close(); err != nil {
		return fmt.Errorf("entities: %w", err)
	}
	return nil
}

// countMentions records the fresh events' mentions as deltas, folded into
// the entity rows by the worker (FoldEntityMentions), so that no lane
// holds a lock on a hot entity row until its commit, and a mention is
// counted exactly when its event is claimed.
func countMentions(ctx context.Context, tx pgx.Tx, b entityBatch) error {
	if len(b.ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, qInsertMentionDeltas, b.ids, b.counts, b.seen); err != nil {
		return fmt.Errorf("entity mention deltas: %w", err)
	}
	return nil
}

func insertUnits(ctx context.Context, tx pgx.Tx, evs []*EventRecord) ([]uuid.UUID, error) {
	var rows [][]any
	var ids []uuid.UUID
	for _, e := range evs {
		for _, f := range e.Facts {
			tags := f.Tags
			if tags == nil {
				tags = []string{}
			}
			meta := f.Metadata
			if meta == nil {
				meta = map[string]string{}
			}
			var emb any
			if f.Embedding != nil {
				emb = pgvector.NewHalfVector(f.Embedding)
			}
			var chunk any
			if f.ChunkID != uuid.Nil {
				chunk = f.ChunkID
			}
			rows = append(rows, []any{f.ID, e.BankID, f.FactType, f.Text, f.Context, f.ReplyTo, emb, f.SearchAux,
				f.OccurredStart, f.OccurredEnd, f.MentionedAt, tags, jsonOf(meta), e.DocumentID, chunk,
				e.EventKey, int32(f.MessageIndex), f.IdemKey})
			ids = append(ids, f.ID)
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	if _, err := tx.Exec(ctx, qStageUnits); err != nil {
		return nil, fmt.Errorf("stage units: %w", err)
	}
	cols := []string{"id", "bank_id", "fact_type", "text", "context", "reply_to", "embedding", "search_aux", "occurred_start",
		"occurred_end", "mentioned_at", "tags", "metadata", "document_id", "chunk_id", "source_event_id",
		"source_message_index", "idempotency_key"}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"stage_units"}, cols, pgx.CopyFromRows(rows)); err != nil {
		return nil, fmt.Errorf("copy units: %w", err)
	}
	if _, err := tx.Exec(ctx, qInsertUnits); err != nil {
		return nil, fmt.Errorf("insert units: %w", err)
	}
	return ids, nil
}

func insertUnitLinks(ctx context.Context, tx pgx.Tx, evs []*EventRecord, ids []uuid.UUID, temporal linkArrays) error {
	var ueUnit, ueEnt []uuid.UUID
	var ueAt []time.Time
	var explicit linkArrays
	for _, e := range evs {
		for _, f := range e.Facts {
			for _, en := range f.EntityIDs {
				ueUnit, ueEnt, ueAt = append(ueUnit, f.ID), append(ueEnt, en), append(ueAt, f.MentionedAt)
			}
		}
		for _, l := range e.Links {
			explicit.add(e.BankID, l.From, l.To, l.Type, l.Weight)
		}
	}
	if len(ueUnit) > 0 {
		if _, err := tx.Exec(ctx, qInsertUnitEntities, ueUnit, ueEnt, ueAt); err != nil {
			return fmt.Errorf("unit entities: %w", err)
		}
	}
	if err := explicit.insert(ctx, tx, "links"); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, qEntityLinks, ids); err != nil {
		return fmt.Errorf("entity links: %w", err)
	}
	return temporal.insert(ctx, tx, "temporal links")
}

func insertAudit(ctx context.Context, tx pgx.Tx, evs []*EventRecord) error {
	var b, k, l, a, f []string
	for _, e := range evs {
		for _, r := range e.Audit {
			b, k, l, a, f = append(b, e.BankID), append(k, e.eventOf()), append(l, r.Label), append(a, r.Action), append(f, r.Fingerprint)
		}
	}
	if len(b) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, qInsertAudit, b, k, l, a, f); err != nil {
		return fmt.Errorf("defense audit: %w", err)
	}
	return announceDefense(ctx, tx, evs)
}

const qRecordDeadLetter = `INSERT INTO dead_letters (topic, partition, "offset", bank_id, error_class, error_stage)
	VALUES ($1, $2, $3, NULLIF($4, ''), $5, $6) ON CONFLICT DO NOTHING`

// RecordDeadLetter notes (without content) that a record was dead-lettered,
// so bank stats can count it. It is idempotent per topic/partition/offset.
func (s *Store) RecordDeadLetter(ctx context.Context, topic string, partition int32, offset int64, bankID, class, stage string) error {
	if _, err := s.pool.Exec(ctx, qRecordDeadLetter, topic, partition, offset, bankID, class, stage); err != nil {
		return fmt.Errorf("record dead letter %s/%d/%d: %w", topic, partition, offset, err)
	}
	return nil
}

// UUID is the id type of memory units, chunks and entities.
type UUID = uuid.UUID

// LinkSemantic adds semantic links (cosine similarity ≥ minSim, top 3) from
// the given facts to their nearest neighbours in the same bank. minSim is
// the caller's, derived from the embedder's own scale (simscale): no
// constant fits every embedder. It is idempotent.
func (s *Store) LinkSemantic(ctx context.Context, ids []uuid.UUID, minSim float64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(qLinkSearchSettings)
		b.Queue(qLinkLargeBanks, ids, linkExactMaxRows)
		br := tx.SendBatch(ctx, b)
		_, err := br.Exec()
		var large []string
		if err == nil {
			var rows pgx.Rows
			if rows, err = br.Query(); err == nil {
				large, err = pgx.CollectRows(rows, pgx.RowTo[string])
			}
		}
		if err = errors.Join(err, br.Close()); err != nil {
			return err
		}
		// One round trip: the small banks' facts, then each large bank's.
		b = &pgx.Batch{}
		b.Queue(qSemanticLinksExact, ids, minSim, large)
		for _, bank := range large {
			b.Queue(qSemanticLinksBank, ids, minSim, bank)
		}
		br = tx.SendBatch(ctx, b)
		for range b.Len() {
			tag, err := br.Exec()
			if err != nil {
				return errors.Join(err, br.Close())
			}
			n += tag.RowsAffected()
		}
		return br.Close()
	})
	if err != nil {
		return 0, fmt.Errorf("semantic links for %d facts: %w", len(ids), err)
	}
	return n, nil
}

// FoldEntityMentions adds the recorded mention deltas into entities'
// mention_count, first_seen and last_seen, up to 50 000 deltas per call. It
// returns how many entities changed. Concurrent callers skip each other's
// rows, so every delta is folded exactly once; the deltas of an entity a
// merge or delete holds wait for the next call.
func (s *Store) FoldEntityMentions(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, qFoldMentions)
	if err != nil {
		return 0, fmt.Errorf("fold entity mentions: %w", err)
	}
	return tag.RowsAffected(), nil
}

const (
	// qLockOrphanEntities picks entities no fact mentions, older than $1
	// seconds, with no unfolded mentions, neither merged away nor a merge
	// target. SKIP LOCKED passes over the ones an ingest transaction is
	// linking a fact to right now (its foreign-key check holds a key-share
	// lock).
	qLockOrphanEntities = `SELECT e.id FROM entities e
		WHERE e.mention_count <= 0 AND e.merged_into IS NULL AND e.created_at < now() - make_interval(secs => $1)
		  AND NOT EXISTS (SELECT 1 FROM unit_entities ue WHERE ue.entity_id = e.id)
		  AND NOT EXISTS (SELECT 1 FROM entity_mention_deltas d WHERE d.entity_id = e.id)
		  AND NOT EXISTS (SELECT 1 FROM entities m WHERE m.merged_into = e.id)
		ORDER BY e.id LIMIT 1000
		FOR UPDATE SKIP LOCKED`
	// qDeleteOrphanEntities checks again with a fresh snapshot, which sees
	// any link committed while the rows were being locked. Merged-away
	// entities are kept: GET by id explains old references with them.
	qDeleteOrphanEntities = `DELETE FROM entities e WHERE e.id = ANY($1::uuid[])
		AND NOT EXISTS (SELECT 1 FROM unit_entities ue WHERE ue.entity_id = e.id)
		AND NOT EXISTS (SELECT 1 FROM entity_mention_deltas d WHERE d.entity_id = e.id)
		AND NOT EXISTS (SELECT 1 FROM entities m WHERE m.merged_into = e.id)`
)

// DeleteOrphanEntities deletes entities that no fact mentions and that
// are older than minAge: those ensured for a batch that was then
// dead-lettered (see ensureEntities). minAge leaves batches in flight
// alone. It returns how many were deleted, at most 1000 per call.
func (s *Store) DeleteOrphanEntities(ctx context.Context, minAge time.Duration) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		ids, err := collectUUIDs(ctx, tx, qLockOrphanEntities, minAge.Seconds())
		if err != nil || len(ids) == 0 {
			return err
		}
		tag, err := tx.Exec(ctx, qDeleteOrphanEntities, ids)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete orphan entities: %w", err)
	}
	return n, nil
}
