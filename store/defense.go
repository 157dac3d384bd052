package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgvector/pgvector-go"

	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/text"
)

// Rescan applies a bank's current defense policy to what is already
// stored. The ingest gate only sees new events; when an operator tightens
// a policy (or the pattern library learns a new key format), facts and
// chunks stored earlier still hold what the new policy would remove.
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
	qRescanUnits = `SELECT id::text, '', COALESCE(source_event_id, ''), state, text, context, to_jsonb(tags)::text, metadata::text
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

	// The embedding and search_aux only follow the text: a change confined
	// to other fields passes NULL and keeps them. A fact is only
	// invalidated when it is still valid, so an earlier reason is not
	// overwritten.
	qRescanUpdateUnit = `UPDATE memory_units SET text = $2, context = $3,
			tags = ARRAY(SELECT jsonb_array_elements_text($4::jsonb)), metadata = $5::jsonb,
			embedding = COALESCE($6, embedding), search_aux = COALESCE($7, search_aux),
			state = CASE WHEN $8 AND state = 'valid' THEN 'invalidated' ELSE state END,
			invalid_reason = CASE WHEN $8 AND state = 'valid' THEN $9 ELSE invalid_reason END,
			updated_at = now()
		WHERE id = $1::uuid AND text = $10 AND context = $11 AND to_jsonb(tags) = $12::jsonb AND metadata = $13::jsonb`
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

// fieldKind says how a field's text is checked.
type fieldKind int

const (
	fieldText fieldKind = iota // plain text
	fieldJSON                  // JSON whose string values are checked
)

type rescanTarget struct {
	name   string
	list   string
	update string
	fields []fieldKind
}

var (
	oneText  = []fieldKind{fieldText}
	twoTexts = []fieldKind{fieldText, fieldText}
)

// rescanTargets is ordered so that aliases and entities go first (the
// facts' search_aux is rebuilt from what remains of them), then facts:
// they are what recall returns, so an interrupted run has fixed the most
// visible rows.
var rescanTargets = []rescanTarget{
	{RescanTargetAliases, qRescanAliases, qRescanDeleteAlias, oneText},
	{RescanTargetEntities, qRescanEntities, qRescanDeleteEntity, oneText},
	{RescanTargetUnits, qRescanUnits, qRescanUpdateUnit, []fieldKind{fieldText, fieldText, fieldJSON, fieldJSON}},
	{RescanTargetChunks, qRescanChunks, qRescanUpdateChunk, oneText},
	{RescanTargetEvidence, qRescanEvidence, qRescanUpdateEvidence, oneText},
	{RescanTargetObsHistory, qRescanObsHistory, qRescanUpdateObsHistory, twoTexts},
	{RescanTargetMentalModels, qRescanMentalModels, qRescanUpdateMentalModel, oneText},
	{RescanTargetMMHistory, qRescanMMHistory, qRescanUpdateMMHistory, oneText},
	{RescanTargetDocuments, qRescanDocuments, qRescanUpdateDocument, []fieldKind{fieldText, fieldJSON, fieldJSON}},
}

// DefenseGate is the defense check the rescan applies; *defense.Gate
// implements it.
type DefenseGate interface {
	Check(eventID, text string, p defense.Policy) (defense.Result, []defense.AuditRecord, error)
}

// TextEmbedder embeds redacted fact texts again, as documents; the
// configured embedder implements it.
type TextEmbedder interface {
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
}

// RescanConfig configures RescanDefense.
type RescanConfig struct {
	// BankID is the bank to rescan.
	BankID string
	// Policy is the bank's effective policy (its stored policy merged over
	// the configured default).
	Policy defense.Policy
	// DryRun counts what would change without writing anything.
	DryRun bool
	// BatchSize is the number of rows per transaction; default 256.
	BatchSize int
	// Progress, when set, is called after every batch.
	Progress func(RescanProgress)
}

// WithDefaults fills unset fields.
func (c RescanConfig) WithDefaults() RescanConfig {
	if c.BatchSize <= 0 {
		c.BatchSize = 256
	}
	return c
}

func (c RescanConfig) validate() error {
	if c.BankID == "" {
		return errors.New("rescan: bank_id is required")
	}
	if err := c.Policy.Validate(); err != nil {
		return fmt.Errorf("rescan bank %s: %w", c.BankID, err)
	}
	return nil
}

// RescanProgress is reported after each batch.
type RescanProgress struct {
	Target  string
	Scanned int // rows of this target so far
	Changed int // rows of this target redacted (or, in a dry run, to be)
}

// RescanReport summarises a rescan. Counts never include values.
type RescanReport struct {
	BankID string `json:"bank_id"`
	DryRun bool   `json:"dry_run"`
	// Scanned and Changed are per target; Changed counts rows whose stored
	// text was (or would be) rewritten, or for entities and aliases,
	// removed.
	Scanned map[string]int `json:"scanned"`
	Changed map[string]int `json:"changed"`
	// Findings counts findings per label and Actions per action, over
	// every scanned field, including allowed ones.
	Findings map[string]int `json:"findings"`
	Actions  map[string]int `json:"actions"`
	// Invalidated counts valid facts whose text is now blocked.
	Invalidated int `json:"invalidated"`
	// Reembedded counts facts whose embedding was recomputed.
	Reembedded int `json:"reembedded"`
	// AuxRebuilt counts facts whose search_aux was rebuilt because an
	// entity or alias they mention was removed.
	AuxRebuilt int `json:"aux_rebuilt"`
	// AuditRows counts audit rows inserted or updated: there is one per
	// event, label and fingerprint, and an existing row is only updated
	// when its action changed.
	AuditRows int `json:"audit_rows"`
	// Conflicts counts rows that changed between read and write; run the
	// rescan again to cover them.
	Conflicts int `json:"conflicts"`
}

// rescanRow is one row of any target, as the list queries return it.
type rescanRow struct {
	key, key2, eventKey, state string
	fields                     []string
}

// rescanChange is the outcome of checking one row.
type rescanChange struct {
	row     rescanRow
	out     []string
	changed bool
	blocked []string // labels that block it (facts only act on this)
}

// RescanDefense applies cfg.Policy to every stored text of the bank:
// facts (text and context), chunks, observation evidence quotes and
// history, mental models and their history, and document context.
// Redacted and blocked findings are replaced by their marker in place; a
// valid fact whose text the policy blocks is also invalidated with reason
// "blocked_by_policy: <labels>" rather than deleted, so its links and
// evidence stay explainable. Facts whose text changed get a new embedding
// and search_aux (the tsvector column is generated and follows). Audit
// rows are written for every finding. With DryRun nothing is written.
func (s *Store) RescanDefense(ctx context.Context, gate DefenseGate, emb TextEmbedder, cfg RescanConfig) (RescanReport, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return RescanReport{}, err
	}
	if gate == nil || (emb == nil && !cfg.DryRun) {
		return RescanReport{}, fmt.Errorf("rescan bank %s: gate and embedder are required", cfg.BankID)
	}
	// One connection streams the rows while others write the batches.
	if n := s.pool.Config().MaxConns; n < 2 {
		return RescanReport{}, fmt.Errorf("rescan bank %s: database.max_conns is %d; the rescan needs at least 2", cfg.BankID, n)
	}
	rep := RescanReport{
		BankID: cfg.BankID, DryRun: cfg.DryRun,
		Scanned: map[string]int{}, Changed: map[string]int{}, Findings: map[string]int{}, Actions: map[string]int{},
	}
	for _, t := range rescanTargets {
		if err := s.rescanTarget(ctx, gate, emb, cfg, t, &rep); err != nil {
			return rep, fmt.Errorf("rescan bank %s %s: %w", cfg.BankID, t.name, err)
		}
	}
	return rep, nil
}

// rescanTarget streams one target's rows on a dedicated connection and
// processes them in batches; writes go through other pool connections, so
// the read keeps its snapshot while batches commit.
func (s *Store) rescanTarget(ctx context.Context, gate DefenseGate, emb TextEmbedder, cfg RescanConfig, t rescanTarget, rep *RescanReport) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, t.list, cfg.BankID)
	if err != nil {
		return err
	}
	defer rows.Close()
	batch := make([]rescanRow, 0, cfg.BatchSize)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := s.rescanBatch(ctx, gate, emb, cfg, t, batch, rep)
		batch = batch[:0]
		if err == nil && cfg.Progress != nil {
			cfg.Progress(RescanProgress{Target: t.name, Scanned: rep.Scanned[t.name], Changed: rep.Changed[t.name]})
		}
		return err
	}
	for rows.Next() {
		r := rescanRow{fields: make([]string, len(t.fields))}
		dest := []any{&r.key, &r.key2, &r.eventKey, &r.state}
		for i := range r.fields {
			dest = append(dest, &r.fields[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		batch = append(batch, r)
		if len(batch) >= cfg.BatchSize {
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

// auditKey names the event an audit row belongs to: the source event when
// the row has one, otherwise the rescanned row itself.
func auditKey(t rescanTarget, r rescanRow) string {
	if r.eventKey != "" {
		return r.eventKey
	}
	return "rescan:" + t.name + ":" + r.key
}

func (s *Store) rescanBatch(ctx context.Context, gate DefenseGate, emb TextEmbedder, cfg RescanConfig, t rescanTarget, batch []rescanRow, rep *RescanReport) error {
	changes := make([]rescanChange, 0, len(batch))
	var audit rescanAudit
	for _, r := range batch {
		c := rescanChange{row: r, out: slices.Clone(r.fields)}
		ek := auditKey(t, r)
		var rows []AuditRow
		check := func(text string) (string, error) {
			if text == "" {
				return text, nil
			}
			res, recs, err := gate.Check(ek, text, cfg.Policy)
			var be *defense.BlockedError
			if err != nil && !errors.As(err, &be) {
				return "", err
			}
			// Blocked findings are masked in res.Text too: a blocked fact
			// is invalidated *and* redacted, so the value leaves the table.
			if be != nil {
				c.blocked = mergeLabels(c.blocked, be.Labels)
			}
			for _, a := range recs {
				rep.Findings[a.Label]++
				rep.Actions[string(a.Action)]++
				rows = append(rows, AuditRow{Label: a.Label, Action: string(a.Action), Fingerprint: a.Fingerprint})
			}
			return res.Text, nil
		}
		for i, text := range r.fields {
			out, changed, err := checkField(t.fields[i], text, check)
			if err != nil {
				return fmt.Errorf("%s %s: %w", t.name, r.key, err)
			}
			if changed {
				c.out[i] = out
				c.changed = true
			}
		}
		rep.Scanned[t.name]++
		for _, a := range rows {
			audit.add(cfg.BankID, ek, a)
		}
		if c.changed || (t.name == RescanTargetUnits && len(c.blocked) > 0 && r.state == "valid") {
			changes = append(changes, c)
		}
	}
	if cfg.DryRun {
		for _, c := range changes {
			if c.changed {
				rep.Changed[t.name]++
			}
			if t.name == RescanTargetUnits && len(c.blocked) > 0 && c.row.state == "valid" {
				rep.Invalidated++
			}
		}
		return nil
	}
	if len(changes) == 0 && len(audit.bank) == 0 {
		return nil
	}
	var vecs map[string][]float32
	var aux map[string]string
	if t.name == RescanTargetUnits {
		var err error
		if vecs, aux, err = s.rescanUnitDerived(ctx, emb, changes); err != nil {
			return err
		}
	}
	var changed, invalidated, reembedded, conflicts, audits, auxRebuilt int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		changed, invalidated, reembedded, conflicts, audits, auxRebuilt = 0, 0, 0, 0, 0, 0
		// Facts linked to an entity about to lose a name: read before the
		// delete, which cascades to unit_entities.
		var touched []uuid.UUID
		if t.name == RescanTargetAliases || t.name == RescanTargetEntities {
			var err error
			if touched, err = entityUnits(ctx, tx, changes); err != nil {
				return err
			}
		}
		var notify []string
		b := &pgx.Batch{}
		stmts := make([]int, len(changes))
		for i, c := range changes {
			stmts[i] = queueRescanUpdate(b, t, cfg.BankID, c, vecs, aux)
		}
		br := tx.SendBatch(ctx, b)
		for i, c := range changes {
			var tag pgconn.CommandTag
			for range stmts[i] {
				var err error
				if tag, err = br.Exec(); err != nil {
					br.Close()
					return fmt.Errorf("update %s %s: %w", t.name, c.row.key, err)
				}
			}
			if tag.RowsAffected() == 0 {
				conflicts++
				continue
			}
			if c.changed {
				changed++
			}
			notify = append(notify, c.row.key)
			if t.name == RescanTargetUnits {
				if len(c.blocked) > 0 && c.row.state == "valid" {
					invalidated++
				}
				if _, ok := vecs[c.row.key]; ok {
					reembedded++
				}
			}
		}
		if err := br.Close(); err != nil {
			return err
		}
		if len(touched) > 0 {
			var err error
			if auxRebuilt, err = rebuildAux(ctx, tx, touched); err != nil {
				return err
			}
		}
		// API replicas cache mental models; the same NOTIFY every other
		// write sends evicts the unredacted copy when this commits.
		if t.name == RescanTargetMentalModels {
			for _, id := range notify {
				if _, err := tx.Exec(ctx, qMentalModelNotify, MentalModelChannel, cfg.BankID+"/"+id); err != nil {
					return fmt.Errorf("notify mental model %s: %w", id, err)
				}
			}
		}
		if len(audit.bank) == 0 {
			return nil
		}
		tag, err := tx.Exec(ctx, qRescanAudit, audit.bank, audit.event, audit.label, audit.action, audit.fingerprint)
		if err != nil {
			return fmt.Errorf("defense audit: %w", err)
		}
		audits = int(tag.RowsAffected())
		return nil
	})
	if err != nil {
		return err
	}
	rep.Changed[t.name] += changed
	rep.Invalidated += invalidated
	rep.Reembedded += reembedded
	rep.AuxRebuilt += auxRebuilt
	rep.Conflicts += conflicts
	rep.AuditRows += audits
	return nil
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

// rescanAudit gathers a batch's audit rows as columns for qRescanAudit,
// one per key: an upsert may not touch the same row twice in a statement.
type rescanAudit struct {
	bank, event, label, action, fingerprint []string
	seen                                    map[[4]string]int
}

func (a *rescanAudit) add(bank, event string, r AuditRow) {
	k := [4]string{bank, event, r.Label, r.Fingerprint}
	if i, ok := a.seen[k]; ok {
		// The same value twice in one row or batch: the stricter action
		// is what happened to it.
		if actionRank(r.Action) > actionRank(a.action[i]) {
			a.action[i] = r.Action
		}
		return
	}
	if a.seen == nil {
		a.seen = map[[4]string]int{}
	}
	a.seen[k] = len(a.bank)
	a.bank, a.event, a.label = append(a.bank, bank), append(a.event, event), append(a.label, r.Label)
	a.action, a.fingerprint = append(a.action, r.Action), append(a.fingerprint, r.Fingerprint)
}

func actionRank(a string) int {
	switch defense.Action(a) {
	case defense.ActionBlock:
		return 2
	case defense.ActionRedact:
		return 1
	}
	return 0
}

// rescanUnitDerived embeds the new texts of changed facts and rebuilds
// their search_aux. Only facts whose text changed are returned; a change
// confined to context keeps both.
func (s *Store) rescanUnitDerived(ctx context.Context, emb TextEmbedder, changes []rescanChange) (map[string][]float32, map[string]string, error) {
	var ids []uuid.UUID
	var keys, texts []string
	for _, c := range changes {
		if c.out[0] == c.row.fields[0] {
			continue
		}
		id, err := uuid.Parse(c.row.key)
		if err != nil {
			return nil, nil, fmt.Errorf("fact id %q: %w", c.row.key, err)
		}
		ids, keys, texts = append(ids, id), append(keys, c.row.key), append(texts, c.out[0])
	}
	if len(texts) == 0 {
		return nil, nil, nil
	}
	vs, err := emb.EmbedDocuments(ctx, texts)
	if err != nil {
		return nil, nil, fmt.Errorf("embed %d redacted facts: %w", len(texts), err)
	}
	if len(vs) != len(texts) {
		return nil, nil, fmt.Errorf("embedder returned %d vectors for %d facts", len(vs), len(texts))
	}
	names, err := unitNames(ctx, s.pool, ids)
	if err != nil {
		return nil, nil, err
	}
	vecs, aux := make(map[string][]float32, len(texts)), make(map[string]string, len(texts))
	for i, k := range keys {
		if len(vs[i]) != s.dim {
			return nil, nil, fmt.Errorf("embedder returned dimension %d, store has %d", len(vs[i]), s.dim)
		}
		vecs[k] = vs[i]
		aux[k] = text.Aux(texts[i], names[k])
	}
	return vecs, aux, nil
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
func entityUnits(ctx context.Context, tx pgx.Tx, changes []rescanChange) ([]uuid.UUID, error) {
	var ents []uuid.UUID
	for _, c := range changes {
		id, err := uuid.Parse(c.row.key)
		if err != nil {
			return nil, fmt.Errorf("entity id %q: %w", c.row.key, err)
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
// their entities have now, as the pipeline builds it.
func rebuildAux(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) (int, error) {
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
		uids[i], auxes[i] = u.ID, text.Aux(u.Text, names[u.ID.String()])
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
func queueRescanUpdate(b *pgx.Batch, t rescanTarget, bankID string, c rescanChange, vecs map[string][]float32, aux map[string]string) int {
	r := c.row
	switch t.name {
	case RescanTargetAliases:
		b.Queue(t.update, bankID, r.key, r.key2, r.fields[0])
	case RescanTargetEntities:
		b.Queue(qRescanUnmergeEntity, r.key)
		b.Queue(t.update, r.key, bankID, r.fields[0])
		return 2
	case RescanTargetUnits:
		var vec, sa any
		if v, ok := vecs[r.key]; ok {
			vec, sa = pgvector.NewHalfVector(v), aux[r.key]
		}
		block := len(c.blocked) > 0
		reason := ""
		if block {
			reason = "blocked_by_policy: " + strings.Join(c.blocked, ", ")
		}
		b.Queue(t.update, r.key, c.out[0], c.out[1], c.out[2], c.out[3], vec, sa, block, reason,
			r.fields[0], r.fields[1], r.fields[2], r.fields[3])
	case RescanTargetChunks, RescanTargetMentalModels, RescanTargetMMHistory:
		b.Queue(t.update, r.key, c.out[0], r.fields[0])
	case RescanTargetDocuments:
		b.Queue(t.update, bankID, r.key, c.out[0], c.out[1], c.out[2], r.fields[0], r.fields[1], r.fields[2])
	case RescanTargetEvidence:
		b.Queue(t.update, r.key, r.key2, c.out[0], r.fields[0])
	case RescanTargetObsHistory:
		b.Queue(t.update, r.key, c.out[0], c.out[1], r.fields[0], r.fields[1])
	}
	return 1
}

// checkField applies check to a field: to the whole text, or to every
// string inside a JSON value (tags, metadata). JSON is only re-encoded
// when a string in it changed.
func checkField(kind fieldKind, text string, check func(string) (string, error)) (string, bool, error) {
	if kind == fieldText {
		out, err := check(text)
		return out, err == nil && out != text, err
	}
	if text == "" {
		return text, false, nil
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber() // keep numbers exactly as stored
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", false, fmt.Errorf("decode json field: %w", err)
	}
	changed := false
	var walk func(any) (any, error)
	walk = func(x any) (any, error) {
		switch x := x.(type) {
		case string:
			out, err := check(x)
			if out != x {
				changed = true
			}
			return out, err
		case []any:
			for i := range x {
				var err error
				if x[i], err = walk(x[i]); err != nil {
					return nil, err
				}
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				var err error
				if x[k], err = walk(x[k]); err != nil {
					return nil, err
				}
			}
		}
		return x, nil
	}
	v, err := walk(v)
	if err != nil || !changed {
		return text, false, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", false, fmt.Errorf("encode json field: %w", err)
	}
	return string(b), true, nil
}

func mergeLabels(have, add []string) []string {
	for _, l := range add {
		if !slices.Contains(have, l) {
			have = append(have, l)
		}
	}
	sort.Strings(have)
	return have
}
