package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgvector/pgvector-go"
)

// The statements of the defense rescan (package defense/rescan), which
// applies a bank's current defense policy to what is already stored.
//
// Each stored text kind is a rescan target. Every list query returns the
// same four text columns, then the target's fields, so one loop serves
// them all:
//
//	key, key2, event_key, state, field...
//
// A field is plain text, or JSON (tags as a JSON array, metadata as an
// object) whose string values are checked one by one.
//
// Rows are streamed from one read-only query per target and written back in
// batches, one transaction per batch. Updates compare the old value, so a
// row changed concurrently (consolidation rewriting an observation) is
// skipped and reported as a conflict instead of being overwritten with a
// redaction of stale text; a second run picks it up.
const (
	qRescanUnits = `SELECT id::text, '', COALESCE(source_event_id, ''), state, text, context, to_jsonb(tags)::text, metadata::text, reply_to
		FROM memory_units WHERE bank_id = $1 ORDER BY id`
	qRescanChunks = `SELECT id::text, '', event_key, '', text
		FROM chunks WHERE bank_id = $1 ORDER BY id`
	qRescanDocuments = `SELECT id, '', '', '', context, to_jsonb(tags)::text, metadata::text
		FROM documents WHERE bank_id = $1 ORDER BY id`
	qRescanEvidence = `SELECT e.observation_id::text, e.memory_id::text, COALESCE(m.source_event_id, ''), '', e.quote
		FROM observation_evidence e
		JOIN memory_units o ON o.id = e.observation_id
		LEFT JOIN memory_units m ON m.id = e.memory_id
		WHERE o.bank_id = $1 ORDER BY e.observation_id, e.memory_id`
	qRescanObsHistory = `SELECT h.id::text, '', '', '', COALESCE(h.old_text, ''), COALESCE(h.new_text, '')
		FROM observation_history h JOIN memory_units o ON o.id = h.observation_id
		WHERE o.bank_id = $1 ORDER BY h.id`
	qRescanMentalModels = `SELECT id::text, '', '', '', content
		FROM mental_models WHERE bank_id = $1 ORDER BY id`
	qRescanMMHistory = `SELECT h.id::text, '', '', '', h.content
		FROM mental_model_history h JOIN mental_models mm ON mm.id = h.mental_model_id
		WHERE mm.bank_id = $1 ORDER BY h.id`

	// The embedding and search_aux only follow what is embedded, the
	// text and reply_to (the quote before it): a change confined to other
	// fields passes NULL and keeps them. A fact is only invalidated when
	// it is still valid, so an earlier reason is not overwritten.
	qRescanUpdateUnit = `UPDATE memory_units SET text = $2, context = $3,
			tags = ARRAY(SELECT jsonb_array_elements_text($4::jsonb)), metadata = $5::jsonb, reply_to = $14,
			embedding = COALESCE($6, embedding), search_aux = COALESCE($7, search_aux),
			state = CASE WHEN $8 AND state = 'valid' THEN 'invalidated' ELSE state END,
			invalid_reason = CASE WHEN $8 AND state = 'valid' THEN $9 ELSE invalid_reason END,
			updated_at = now()
		WHERE id = $1::uuid AND text = $10 AND context = $11 AND to_jsonb(tags) = $12::jsonb AND metadata = $13::jsonb
			AND reply_to = $15`
	// An observation of one fact with the fact's text carries a copy of
	// the fact's vector (consolidate: the quote it answers included), so a
	// fact embedded again hands its new vector to the observations that
	// still hold the old one; otherwise a redacted quote would live on in
	// their vectors. It runs before the fact's own update, which it
	// requires to apply (the same old values).
	qRescanCopyObsVector = `UPDATE memory_units o SET embedding = $2, updated_at = now()
		FROM memory_units f
		WHERE f.id = $1::uuid AND f.text = $3 AND f.reply_to = $4
			AND o.bank_id = f.bank_id AND o.fact_type = 'observation' AND o.embedding = f.embedding
			AND EXISTS (SELECT 1 FROM observation_evidence e WHERE e.observation_id = o.id AND e.memory_id = f.id)`
	qRescanUpdateChunk = `UPDATE chunks SET text = $2, content_hash = sha256(convert_to($2, 'UTF8'))
		WHERE id = $1::uuid AND text = $3`
	qRescanUpdateDocument = `UPDATE documents SET context = $3,
			tags = ARRAY(SELECT jsonb_array_elements_text($4::jsonb)), metadata = $5::jsonb, updated_at = now()
		WHERE bank_id = $1 AND id = $2 AND context = $6 AND to_jsonb(tags) = $7::jsonb AND metadata = $8::jsonb`
	qRescanUpdateEvidence = `UPDATE observation_evidence SET quote = $3
		WHERE observation_id = $1::uuid AND memory_id = $2::uuid AND quote = $4`
	qRescanUpdateObsHistory = `UPDATE observation_history
		SET old_text = CASE WHEN old_text IS NULL THEN NULL ELSE $2 END,
			new_text = CASE WHEN new_text IS NULL THEN NULL ELSE $3 END
		WHERE id = $1::bigint AND COALESCE(old_text, '') = $4 AND COALESCE(new_text, '') = $5`
	qRescanUpdateMentalModel = `UPDATE mental_models SET content = $2, updated_at = now()
		WHERE id = $1::uuid AND content = $3`
	qRescanUpdateMMHistory = `UPDATE mental_model_history SET content = $2
		WHERE id = $1::bigint AND content = $3`

	// Entities and aliases are not redacted but removed: the offline
	// extractor takes a capitalised key id for a name, and an entity
	// called "[REDACTED:…]" would link every fact that had a secret. The
	// facts that mentioned it keep their text; their search_aux, which
	// carries entity names and aliases, is rebuilt.
	qRescanAliases = `SELECT entity_id::text, alias_key, '', '', alias
		FROM entity_aliases WHERE bank_id = $1 ORDER BY entity_id, alias_key`
	qRescanEntities = `SELECT id::text, '', '', '', canonical_name
		FROM entities WHERE bank_id = $1 ORDER BY id`
	qRescanDeleteAlias = `DELETE FROM entity_aliases
		WHERE bank_id = $1 AND entity_id = $2::uuid AND alias_key = $3 AND alias = $4`
	qRescanUnmergeEntity = `UPDATE entities SET merged_into = NULL WHERE merged_into = $1::uuid`
	qRescanDeleteEntity  = `DELETE FROM entities WHERE id = $1::uuid AND bank_id = $2 AND canonical_name = $3`
	qRescanEntityUnits   = `SELECT DISTINCT unit_id FROM unit_entities WHERE entity_id = ANY($1::uuid[])`
	qRescanUnitTexts     = `SELECT id, text FROM memory_units WHERE id = ANY($1::uuid[])`
	qRescanSetAux        = `UPDATE memory_units m SET search_aux = x.aux
		FROM unnest($1::uuid[], $2::text[]) AS x(id, aux)
		WHERE m.id = x.id AND m.search_aux <> x.aux`

	// qRescanAudit records the action the current policy takes on a
	// finding. Unlike ingest (DO NOTHING, for replays) it updates the
	// action: the row for a value first allowed and now redacted must say
	// redact, or the audit would claim the value is still stored.
	qRescanAudit = `INSERT INTO defense_audit (bank_id, event_key, label, action, fingerprint)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
		ON CONFLICT (bank_id, event_key, label, fingerprint) DO UPDATE SET action = EXCLUDED.action, created_at = now()
		WHERE defense_audit.action <> EXCLUDED.action`

	// qRescanUnitNames gives each unit the canonical names and aliases of
	// its entities, which search_aux carries next to the CJK bigrams (the
	// same inputs the pipeline passes to text.Aux).
	qRescanUnitNames = `SELECT ue.unit_id, e.canonical_name,
			ARRAY(SELECT DISTINCT a.alias FROM entity_aliases a
				WHERE a.entity_id = e.id AND a.alias <> e.canonical_name ORDER BY a.alias)
		FROM unit_entities ue JOIN entities e ON e.id = ue.entity_id
		WHERE ue.unit_id = ANY($1::uuid[])
		ORDER BY ue.unit_id, e.canonical_name`
)

// Rescan target names, as reported in RescanReport.
const (
	RescanTargetUnits        = "memory_units"
	RescanTargetChunks       = "chunks"
	RescanTargetDocuments    = "documents"
	RescanTargetAliases      = "entity_aliases"
	RescanTargetEntities     = "entities"
	RescanTargetEvidence     = "observation_evidence"
	RescanTargetObsHistory   = "observation_history"
	RescanTargetMentalModels = "mental_models"
	RescanTargetMMHistory    = "mental_model_history"
)

// RescanField says how a stored field's text is checked.
type RescanField int

// Field kinds of RescanTarget.Fields.
const (
	RescanText RescanField = iota // plain text
	RescanJSON                    // JSON whose string values are checked
)

// RescanTarget is one kind of stored text the rescan covers, with the
// kinds of the fields its rows carry (RescanRow.Fields, in this order).
type RescanTarget struct {
	Name   string
	Fields []RescanField
	list   string
	update string
}

var (
	oneText  = []RescanField{RescanText}
	twoTexts = []RescanField{RescanText, RescanText}
)

// rescanTargets is ordered so that aliases and entities go first (the
// facts' search_aux is rebuilt from what remains of them), then facts:
// they are what recall returns, so an interrupted run has fixed the most
// visible rows.
var rescanTargets = []RescanTarget{
	{Name: RescanTargetAliases, Fields: oneText, list: qRescanAliases, update: qRescanDeleteAlias},
	{Name: RescanTargetEntities, Fields: oneText, list: qRescanEntities, update: qRescanDeleteEntity},
	{Name: RescanTargetUnits, Fields: []RescanField{RescanText, RescanText, RescanJSON, RescanJSON, RescanText}, list: qRescanUnits, update: qRescanUpdateUnit},
	{Name: RescanTargetChunks, Fields: oneText, list: qRescanChunks, update: qRescanUpdateChunk},
	{Name: RescanTargetEvidence, Fields: oneText, list: qRescanEvidence, update: qRescanUpdateEvidence},
	{Name: RescanTargetObsHistory, Fields: twoTexts, list: qRescanObsHistory, update: qRescanUpdateObsHistory},
	{Name: RescanTargetMentalModels, Fields: oneText, list: qRescanMentalModels, update: qRescanUpdateMentalModel},
	{Name: RescanTargetMMHistory, Fields: oneText, list: qRescanMMHistory, update: qRescanUpdateMMHistory},
	{Name: RescanTargetDocuments, Fields: []RescanField{RescanText, RescanJSON, RescanJSON}, list: qRescanDocuments, update: qRescanUpdateDocument},
}

// RescanTargets are the targets in the order a rescan runs them.
func RescanTargets() []RescanTarget { return slices.Clone(rescanTargets) }

func rescanTargetNamed(name string) (RescanTarget, error) {
	for _, t := range rescanTargets {
		if t.Name == name {
			return t, nil
		}
	}
	return RescanTarget{}, fmt.Errorf("unknown rescan target %q", name)
}

// MaxConns is the pool's connection limit: a rescan streams a target's
// rows on one connection while it writes batches on others.
func (s *Store) MaxConns() int { return int(s.pool.Config().MaxConns) }

// RescanRow is one stored row of a target: its keys, the key of the event
// it came from (if it has one), the fact state (facts only) and the texts
// to check, in the order of RescanTarget.Fields.
type RescanRow struct {
	Key, Key2, EventKey, State string
	Fields                     []string
}

// ScanRescan streams the bank's rows of target in batches of at most n,
// in key order, on a connection of its own: the read keeps its snapshot
// while the writes of each batch commit through the other connections.
func (s *Store) ScanRescan(ctx context.Context, bank, target string, n int, each func([]RescanRow) error) error {
	t, err := rescanTargetNamed(target)
	if err != nil {
		return err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, t.list, bank)
	if err != nil {
		return err
	}
	defer rows.Close()
	batch := make([]RescanRow, 0, n)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := each(batch)
		batch = batch[:0]
		return err
	}
	for rows.Next() {
		r := RescanRow{Fields: make([]string, len(t.Fields))}
		dest := []any{&r.Key, &r.Key2, &r.EventKey, &r.State}
		for i := range r.Fields {
			dest = append(dest, &r.Fields[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		batch = append(batch, r)
		if len(batch) >= n {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return flush()
}

// RescanChange is what checking one row decided: its new field values, and
// for facts the labels that block it and, when its text changed, its new
// embedding and search_aux.
type RescanChange struct {
	Row       RescanRow
	Out       []string
	Changed   bool
	Blocked   []string
	Embedding []float32
	SearchAux string
}

// RescanAudit is one audit row of a rescan: what the current policy does
// to a finding of an event. Rows are unique per event, label and
// fingerprint (an upsert may not touch the same row twice).
type RescanAudit struct {
	EventKey string
	AuditRow
}

// RescanApplied counts what ApplyRescan wrote.
type RescanApplied struct {
	// Changed counts rows whose text was rewritten (or entity and alias
	// rows removed); Invalidated facts newly blocked; Reembedded facts
	// given a new embedding; AuxRebuilt facts whose search_aux followed a
	// removed entity name; AuditRows audit rows inserted or updated.
	Changed, Invalidated, Reembedded, AuxRebuilt, AuditRows int
	// ObservationVectors counts observations that held a copy of a
	// re-embedded fact's vector and were given its new one.
	ObservationVectors int
	// Conflicts counts rows that changed between read and write; a
	// second rescan covers them.
	Conflicts int
}

// ApplyRescan writes one batch of a target's changes and audit rows in one
// transaction. Updates compare the old value, so a row changed meanwhile
// is counted as a conflict instead of being overwritten with a redaction
// of stale text. A valid fact with blocking labels is invalidated with
// reason "blocked_by_policy: <labels>". Removing an entity or alias
// rebuilds the search_aux of the facts that mentioned it, with aux (the
// pipeline's text.Aux). A rewritten mental model is announced on
// MentalModelChannel, so API replicas evict their cached copy.
func (s *Store) ApplyRescan(ctx context.Context, bank, target string, changes []RescanChange, audit []RescanAudit,
	aux func(text string, names []string) string) (RescanApplied, error) {
	t, err := rescanTargetNamed(target)
	if err != nil {
		return RescanApplied{}, err
	}
	for _, c := range changes {
		if c.Embedding != nil && len(c.Embedding) != s.dim {
			return RescanApplied{}, fmt.Errorf("embedder returned dimension %d, store has %d", len(c.Embedding), s.dim)
		}
	}
	var cols rescanAuditColumns
	for _, a := range audit {
		cols.add(bank, a)
	}
	var out RescanApplied
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out = RescanApplied{}
		// Facts linked to an entity about to lose a name: read before the
		// delete, which cascades to unit_entities.
		var touched []uuid.UUID
		if t.Name == RescanTargetAliases || t.Name == RescanTargetEntities {
			var err error
			if touched, err = entityUnits(ctx, tx, changes); err != nil {
				return err
			}
		}
		var notify []string
		b := &pgx.Batch{}
		stmts := make([]int, len(changes))
		for i, c := range changes {
			stmts[i] = queueRescanUpdate(b, t, bank, c)
		}
		br := tx.SendBatch(ctx, b)
		for i, c := range changes {
			var tag pgconn.CommandTag
			for j := range stmts[i] {
				var err error
				if tag, err = br.Exec(); err != nil {
					br.Close()
					return fmt.Errorf("update %s %s: %w", t.Name, c.Row.Key, err)
				}
				if t.Name == RescanTargetUnits && j < stmts[i]-1 {
					out.ObservationVectors += int(tag.RowsAffected()) // qRescanCopyObsVector
				}
			}
			if tag.RowsAffected() == 0 {
				out.Conflicts++
				continue
			}
			if c.Changed {
				out.Changed++
			}
			notify = append(notify, c.Row.Key)
			if t.Name == RescanTargetUnits {
				if len(c.Blocked) > 0 && c.Row.State == "valid" {
					out.Invalidated++
				}
				if c.Embedding != nil {
					out.Reembedded++
				}
			}
		}
		if err := br.Close(); err != nil {
			return err
		}
		if len(touched) > 0 {
			var err error
			if out.AuxRebuilt, err = rebuildAux(ctx, tx, touched, aux); err != nil {
				return err
			}
		}
		if t.Name == RescanTargetMentalModels {
			for _, id := range notify {
				if _, err := tx.Exec(ctx, qMentalModelNotify, MentalModelChannel, bank+"/"+id); err != nil {
					return fmt.Errorf("notify mental model %s: %w", id, err)
				}
			}
		}
		if len(cols.bank) == 0 {
			return nil
		}
		tag, err := tx.Exec(ctx, qRescanAudit, cols.bank, cols.event, cols.label, cols.action, cols.fingerprint)
		if err != nil {
			return fmt.Errorf("defense audit: %w", err)
		}
		out.AuditRows = int(tag.RowsAffected())
		return nil
	})
	if err != nil {
		return RescanApplied{}, fmt.Errorf("rescan bank %s %s: %w", bank, target, err)
	}
	return out, nil
}

// RecordAudit writes the audit rows of one event outside PersistBatch:
// the pipeline calls it for an event the defense policy blocked, which is
// dead-lettered and never persisted. Replays insert nothing twice.
func (s *Store) RecordAudit(ctx context.Context, bankID, eventKey string, rows []AuditRow) error {
	if len(rows) == 0 {
		return nil
	}
	ev := &EventRecord{BankID: bankID, EventKey: eventKey, Audit: rows}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return insertAudit(ctx, tx, []*EventRecord{ev}) })
	if err != nil {
		return fmt.Errorf("record audit bank %s event %s: %w", bankID, eventKey, err)
	}
	return nil
}

// rescanAuditColumns are a batch's audit rows as the columns of
// qRescanAudit.
type rescanAuditColumns struct {
	bank, event, label, action, fingerprint []string
}

func (c *rescanAuditColumns) add(bank string, a RescanAudit) {
	c.bank, c.event, c.label = append(c.bank, bank), append(c.event, a.EventKey), append(c.label, a.Label)
	c.action, c.fingerprint = append(c.action, a.Action), append(c.fingerprint, a.Fingerprint)
}

// UnitNames returns, per fact id, the canonical names and aliases of its
// entities: what search_aux carries next to the CJK bigrams.
func (s *Store) UnitNames(ctx context.Context, ids []UUID) (map[string][]string, error) {
	return unitNames(ctx, s.pool, ids)
}

// querier is what the name lookups need from a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// unitNames returns, per fact id, the names and aliases of its entities.
func unitNames(ctx context.Context, q querier, ids []uuid.UUID) (map[string][]string, error) {
	names := map[string][]string{}
	rows, err := q.Query(ctx, qRescanUnitNames, ids)
	if err != nil {
		return nil, fmt.Errorf("entity names: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var canonical string
		var aliases []string
		if err := rows.Scan(&id, &canonical, &aliases); err != nil {
			return nil, fmt.Errorf("entity names: %w", err)
		}
		names[id.String()] = append(append(names[id.String()], canonical), aliases...)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("entity names: %w", err)
	}
	return names, nil
}

// entityUnits returns the facts linked to the entities of the changed
// entity or alias rows (the entity id is the row key of both).
func entityUnits(ctx context.Context, tx pgx.Tx, changes []RescanChange) ([]uuid.UUID, error) {
	var ents []uuid.UUID
	for _, c := range changes {
		id, err := uuid.Parse(c.Row.Key)
		if err != nil {
			return nil, fmt.Errorf("entity id %q: %w", c.Row.Key, err)
		}
		ents = append(ents, id)
	}
	rows, err := tx.Query(ctx, qRescanEntityUnits, ents)
	if err != nil {
		return nil, fmt.Errorf("facts of entities: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("facts of entities: %w", err)
	}
	return ids, nil
}

// rebuildAux recomputes search_aux of facts from their text and the names
// their entities have now, with aux, as the pipeline builds it.
func rebuildAux(ctx context.Context, tx pgx.Tx, ids []uuid.UUID, aux func(text string, names []string) string) (int, error) {
	rows, err := tx.Query(ctx, qRescanUnitTexts, ids)
	if err != nil {
		return 0, fmt.Errorf("fact texts: %w", err)
	}
	type unitText struct {
		ID   uuid.UUID
		Text string
	}
	units, err := pgx.CollectRows(rows, pgx.RowToStructByPos[unitText])
	if err != nil {
		return 0, fmt.Errorf("fact texts: %w", err)
	}
	names, err := unitNames(ctx, tx, ids)
	if err != nil {
		return 0, err
	}
	uids, auxes := make([]uuid.UUID, len(units)), make([]string, len(units))
	for i, u := range units {
		uids[i], auxes[i] = u.ID, aux(u.Text, names[u.ID.String()])
	}
	tag, err := tx.Exec(ctx, qRescanSetAux, uids, auxes)
	if err != nil {
		return 0, fmt.Errorf("rebuild search_aux: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// queueRescanUpdate queues the statements that write one change and
// returns how many it queued; the last one's row count tells whether the
// row was still as read.
func queueRescanUpdate(b *pgx.Batch, t RescanTarget, bankID string, c RescanChange) int {
	r := c.Row
	switch t.Name {
	case RescanTargetAliases:
		b.Queue(t.update, bankID, r.Key, r.Key2, r.Fields[0])
	case RescanTargetEntities:
		b.Queue(qRescanUnmergeEntity, r.Key)
		b.Queue(t.update, r.Key, bankID, r.Fields[0])
		return 2
	case RescanTargetUnits:
		var vec, sa any
		if c.Embedding != nil {
			vec, sa = pgvector.NewHalfVector(c.Embedding), c.SearchAux
		}
		block := len(c.Blocked) > 0
		reason := ""
		if block {
			reason = "blocked_by_policy: " + strings.Join(c.Blocked, ", ")
		}
		n := 1
		if c.Embedding != nil {
			b.Queue(qRescanCopyObsVector, r.Key, vec, r.Fields[0], r.Fields[4])
			n++
		}
		b.Queue(t.update, r.Key, c.Out[0], c.Out[1], c.Out[2], c.Out[3], vec, sa, block, reason,
			r.Fields[0], r.Fields[1], r.Fields[2], r.Fields[3], c.Out[4], r.Fields[4])
		return n
	case RescanTargetChunks, RescanTargetMentalModels, RescanTargetMMHistory:
		b.Queue(t.update, r.Key, c.Out[0], r.Fields[0])
	case RescanTargetDocuments:
		b.Queue(t.update, bankID, r.Key, c.Out[0], c.Out[1], c.Out[2], r.Fields[0], r.Fields[1], r.Fields[2])
	case RescanTargetEvidence:
		b.Queue(t.update, r.Key, r.Key2, c.Out[0], r.Fields[0])
	case RescanTargetObsHistory:
		b.Queue(t.update, r.Key, c.Out[0], c.Out[1], r.Fields[0], r.Fields[1])
	}
	return 1
}
