package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Document is one conversation or text of a bank, with what was derived
// from it.
type Document struct {
	ID         string            `json:"id"`
	BankID     string            `json:"bank_id"`
	Context    string            `json:"context"`
	Tags       []string          `json:"tags"`
	Metadata   map[string]string `json:"metadata"`
	Memories   int               `json:"memory_unit_count"`
	Chunks     int               `json:"chunk_count"`
	TextLength int               `json:"text_length"`
	CreatedAt  time.Time         `json:"created_at"`
	UpdatedAt  time.Time         `json:"updated_at"`
}

// DocumentDeletion reports what DeleteDocument removed.
type DocumentDeletion struct {
	MemoryUnits int `json:"memory_units_deleted"`
	Chunks      int `json:"chunks_deleted"`
	Events      int `json:"events_deleted"`
	// Observations lost evidence; those left with none were invalidated.
	ObservationsUpdated     int `json:"observations_updated"`
	ObservationsInvalidated int `json:"observations_invalidated"`
	// Entities no fact mentions any more were deleted with their aliases.
	EntitiesDeleted int `json:"entities_deleted"`
}

const (
	qDocumentList = `SELECT d.id, d.bank_id, d.context, d.tags, d.metadata,
			(SELECT count(*) FROM memory_units m WHERE m.bank_id = d.bank_id AND m.document_id = d.id),
			(SELECT count(*) FROM chunks c WHERE c.bank_id = d.bank_id AND c.document_id = d.id),
			COALESCE((SELECT sum(length(c.text)) FROM chunks c WHERE c.bank_id = d.bank_id AND c.document_id = d.id), 0),
			d.created_at, d.updated_at, count(*) OVER ()
		FROM documents d WHERE d.bank_id = $1
		  AND ($4 = '' OR strpos(lower(d.id), lower($4)) > 0)
		  AND (cardinality($5::text[]) = 0 OR CASE $6
				WHEN 'all' THEN d.tags @> $5 OR d.tags = '{}'
				WHEN 'any_strict' THEN d.tags && $5
				WHEN 'all_strict' THEN d.tags @> $5
				WHEN 'exact' THEN d.tags @> $5 AND d.tags <@ $5
				ELSE d.tags && $5 OR d.tags = '{}' END)
		ORDER BY d.updated_at DESC, d.id
		LIMIT $2 OFFSET $3`
	qDocumentLock  = `SELECT 1 FROM documents WHERE bank_id = $1 AND id = $2 FOR UPDATE`
	qDocumentUnits = `SELECT id FROM memory_units WHERE bank_id = $1 AND document_id = $2`
	// Consolidation locks a batch's queue rows, then observations, then
	// (foreign-key key-share locks) entities and facts; deleting the facts
	// cascades to their queue rows, and the recount updates observations.
	// A delete takes its locks in the same order before it deletes
	// anything, or it and a drain of the bank each wait for the other.
	// Queue rows first: waiting for a drain holding one of the document's
	// facts, the next statements see what that drain committed.
	qDocumentLockQueue = `SELECT unit_id FROM consolidation_queue WHERE unit_id = ANY($1::uuid[]) ORDER BY unit_id FOR UPDATE`
	// The recount's own lock, taken early.
	qDocumentLockObservations = `SELECT id FROM memory_units WHERE id = ANY($1::uuid[]) ORDER BY id FOR NO KEY UPDATE`
	// Observations citing the doomed units lose that evidence; the ones
	// that are themselves doomed are not worth updating.
	qDocumentObservations = `SELECT DISTINCT observation_id FROM observation_evidence
		WHERE memory_id = ANY($1::uuid[]) AND NOT observation_id = ANY($1::uuid[])`
	// The observations that lost evidence, as this statement's snapshot
	// sees them, for the recount.
	qDocumentDropEvidence = `DELETE FROM observation_evidence WHERE memory_id = ANY($1::uuid[]) OR observation_id = ANY($1::uuid[])
		RETURNING observation_id`
	qDocumentDropLinks = `DELETE FROM memory_links WHERE from_id = ANY($1::uuid[]) OR to_id = ANY($1::uuid[])`
	qDocumentEntities  = `SELECT DISTINCT entity_id FROM unit_entities WHERE unit_id = ANY($1::uuid[])`
	// The doomed units' mentions are taken back from their entities as
	// negative deltas, folded like the ingest's (FoldEntityMentions), so a
	// delete never row-locks a hot entity either. Ingest counts one
	// mention per fact naming the entity, which is one unit_entities row.
	qDocumentUnmention = `INSERT INTO entity_mention_deltas (entity_id, mentions, seen_at)
		SELECT entity_id, -count(*)::int, min(mentioned_at) FROM unit_entities
		WHERE unit_id = ANY($1::uuid[]) GROUP BY entity_id`
	// Entities only the document's facts mentioned were derived from it
	// and go too (their names are personal data). Locking them first waits
	// for any ingest transaction that is linking a new fact to one of them
	// (its foreign-key check holds a key-share lock), so the next
	// statement, with a fresh snapshot, sees that fact's link and keeps the
	// entity. An ingest that comes later finds the entity gone, fails its
	// foreign key, and PersistBatch runs it again, which inserts the
	// entity again from the event. Merge targets are kept.
	qDocumentLockEntities   = `SELECT id FROM entities WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE`
	qDocumentOrphanEntities = `DELETE FROM entities e WHERE e.id = ANY($1::uuid[])
		AND NOT EXISTS (SELECT 1 FROM unit_entities ue WHERE ue.entity_id = e.id)
		AND NOT EXISTS (SELECT 1 FROM entities m WHERE m.merged_into = e.id)`
	// The document's facts are locked in id order, after their entities,
	// before any is deleted: an ingest key-share locks facts its temporal
	// links point at in id order (qInsertLinks), and a delete in scan
	// order held one while it waited for another the ingest held.
	// ClearMemories locks its facts with it too.
	qDocumentLockUnits    = `SELECT id FROM memory_units WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE`
	qDocumentDropUnitEnts = `DELETE FROM unit_entities WHERE unit_id = ANY($1::uuid[])`
	qDocumentDropUnits    = `DELETE FROM memory_units WHERE id = ANY($1::uuid[])`
	qDocumentDropChunks   = `DELETE FROM chunks WHERE bank_id = $1 AND document_id = $2`
	qDocumentDropEvents   = `DELETE FROM events WHERE bank_id = $1 AND document_id = $2`
	qDocumentDrop         = `DELETE FROM documents WHERE bank_id = $1 AND id = $2`
	// proof_count is recounted from the evidence that is left; an
	// observation left with no evidence has nothing to stand on.
	qDocumentRecount = `UPDATE memory_units m SET
			proof_count = GREATEST(ev.n, 1),
			state = CASE WHEN ev.n = 0 THEN 'invalidated' ELSE m.state END,
			invalid_reason = CASE WHEN ev.n = 0 THEN $2 ELSE m.invalid_reason END,
			updated_at = now()
		FROM (SELECT o.id, (SELECT count(*) FROM observation_evidence e WHERE e.observation_id = o.id) AS n
		      FROM unnest($1::uuid[]) AS o(id)) ev
		WHERE m.id = ev.id
		RETURNING m.id, ev.n = 0, m.text`
)

// ListDocuments returns one page of a bank's documents, most recently
// updated first, with the total.
//
// q keeps documents whose id contains it; tags with tagsMatch filter by
// the documents' tags.
func (s *Store) ListDocuments(ctx context.Context, bankID, q string, tags []string, tagsMatch string, limit, offset int) ([]Document, int, error) {
	if tags == nil {
		tags = []string{}
	}
	rows, err := s.pool.Query(ctx, qDocumentList, bankID, limit, offset, q, tags, tagsMatch)
	if err != nil {
		return nil, 0, fmt.Errorf("list documents bank %s: %w", bankID, err)
	}
	defer rows.Close()
	out := []Document{}
	total := 0
	for rows.Next() {
		var d Document
		var meta []byte
		var units, chunks, length, n int64
		if err := rows.Scan(&d.ID, &d.BankID, &d.Context, &d.Tags, &meta, &units, &chunks, &length,
			&d.CreatedAt, &d.UpdatedAt, &n); err != nil {
			return nil, 0, fmt.Errorf("list documents bank %s: %w", bankID, err)
		}
		if err := json.Unmarshal(meta, &d.Metadata); err != nil {
			return nil, 0, fmt.Errorf("document %s metadata: %w", d.ID, err)
		}
		if d.Tags == nil {
			d.Tags = []string{}
		}
		if d.Metadata == nil {
			d.Metadata = map[string]string{}
		}
		d.Memories, d.Chunks, d.TextLength, total = int(units), int(chunks), int(length), int(n)
		out = append(out, d)
	}
	return out, total, rows.Err()
}

// DeleteDocument removes, in one transaction, a document and everything
// derived from it: its memory units with their entity mentions, links and
// evidence rows, its chunks and its events rows. Observations that cited
// its facts keep their other evidence, get proof_count recounted and a
// history entry; one left with no evidence is invalidated.
//
// Removing the events rows forgets that the document's Kafka records were
// ingested, so a deliberate replay of them would bring the document back.
func (s *Store) DeleteDocument(ctx context.Context, bankID, docID string) (DocumentDeletion, error) {
	var res DocumentDeletion
	// A deadlock with an ingest transaction of the same document is
	// possible (each waits for a row the other locked); writeTx runs the
	// loser again.
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		var err error
		res, err = deleteDocumentTx(ctx, tx, bankID, docID)
		return err
	})
	if err != nil {
		return DocumentDeletion{}, fmt.Errorf("delete document %s/%s: %w", bankID, docID, err)
	}
	return res, nil
}

// deleteDocumentTx is DeleteDocument inside tx; ErrNotFound when the bank
// holds no such document.
func deleteDocumentTx(ctx context.Context, tx pgx.Tx, bankID, docID string) (DocumentDeletion, error) {
	res := DocumentDeletion{}
	err := func() error {
		var one int
		if err := tx.QueryRow(ctx, qDocumentLock, bankID, docID).Scan(&one); err != nil {
			return translate(err)
		}
		ids, err := collectUUIDs(ctx, tx, qDocumentUnits, bankID, docID)
		if err != nil {
			return fmt.Errorf("units: %w", err)
		}
		if _, err := tx.Exec(ctx, qDocumentLockQueue, ids); err != nil {
			return fmt.Errorf("lock queued facts: %w", err)
		}
		obs, err := lockCitingObservations(ctx, tx, ids)
		if err != nil {
			return err
		}
		ents, err := collectUUIDs(ctx, tx, qDocumentEntities, ids)
		if err != nil {
			return fmt.Errorf("entities: %w", err)
		}
		// Before anything is deleted: an ingest transaction waited for
		// here may be linking a new fact to one of the document's facts,
		// which it could not do once they are gone.
		if len(ents) > 0 {
			if _, err := tx.Exec(ctx, qDocumentLockEntities, ents); err != nil {
				return fmt.Errorf("lock entities: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, qDocumentLockUnits, ids); err != nil {
			return fmt.Errorf("lock units: %w", err)
		}
		lost, err := collectUUIDs(ctx, tx, qDocumentDropEvidence, ids)
		if err != nil {
			return fmt.Errorf("evidence: %w", err)
		}
		// No evidence of the facts should have come since the last read
		// (a consolidation cites its own facts, whose queue rows are held
		// here, and a merge skips the observations held here); any that
		// did is recounted too, its observation locked late.
		known := map[uuid.UUID]bool{}
		for _, id := range slices.Concat(obs, ids) {
			known[id] = true
		}
		for _, id := range lost {
			if !known[id] {
				known[id] = true
				obs = append(obs, id)
			}
		}
		for _, q := range []string{qDocumentDropLinks, qDocumentUnmention, qDocumentDropUnitEnts} {
			if _, err := tx.Exec(ctx, q, ids); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, qDocumentDropUnits, ids)
		if err != nil {
			return fmt.Errorf("units: %w", err)
		}
		res.MemoryUnits = int(tag.RowsAffected())
		if tag, err = tx.Exec(ctx, qDocumentDropChunks, bankID, docID); err != nil {
			return fmt.Errorf("chunks: %w", err)
		}
		res.Chunks = int(tag.RowsAffected())
		if tag, err = tx.Exec(ctx, qDocumentDropEvents, bankID, docID); err != nil {
			return fmt.Errorf("events: %w", err)
		}
		res.Events = int(tag.RowsAffected())
		if len(obs) > 0 {
			if err := recountObservations(ctx, tx, obs, ids, docID, &res); err != nil {
				return err
			}
		}
		if len(ents) > 0 {
			if tag, err = tx.Exec(ctx, qDocumentOrphanEntities, ents); err != nil {
				return fmt.Errorf("entities: %w", err)
			}
			res.EntitiesDeleted = int(tag.RowsAffected())
		}
		_, err = tx.Exec(ctx, qDocumentDrop, bankID, docID)
		return err
	}()
	return res, err
}

// lockCitingObservations locks the observations citing units (not units
// themselves), in id order, and returns them. A near-duplicate merge
// holding one of them moves its evidence onto a survivor that was not
// cited when the set was read; once the merge commits and the lock is
// granted, the set is read again, and what is new is locked too, until
// it stops growing. Recounted from the first read alone, the survivor
// kept a proof_count of evidence the delete then removed.
func lockCitingObservations(ctx context.Context, tx pgx.Tx, units []uuid.UUID) ([]uuid.UUID, error) {
	held := []uuid.UUID{}
	seen := map[uuid.UUID]bool{}
	for {
		cited, err := collectUUIDs(ctx, tx, qDocumentObservations, units)
		if err != nil {
			return nil, fmt.Errorf("observations: %w", err)
		}
		cited = slices.DeleteFunc(cited, func(id uuid.UUID) bool { return seen[id] })
		if len(cited) == 0 {
			return held, nil
		}
		if _, err := tx.Exec(ctx, qDocumentLockObservations, cited); err != nil {
			return nil, fmt.Errorf("lock observations: %w", err)
		}
		for _, id := range cited {
			seen[id] = true
		}
		held = append(held, cited...)
	}
}

func recountObservations(ctx context.Context, tx pgx.Tx, obs, removed []uuid.UUID, docID string, res *DocumentDeletion) error {
	reason := "source document " + docID + " deleted"
	rows, err := tx.Query(ctx, qDocumentRecount, obs, reason)
	if err != nil {
		return fmt.Errorf("recount observations: %w", err)
	}
	type change struct {
		id    uuid.UUID
		empty bool
		text  string
	}
	var changes []change
	for rows.Next() {
		var c change
		if err := rows.Scan(&c.id, &c.empty, &c.text); err != nil {
			rows.Close()
			return fmt.Errorf("recount observations: %w", err)
		}
		changes = append(changes, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("recount observations: %w", err)
	}
	for _, c := range changes {
		action := "update"
		if c.empty {
			action = "invalidate"
			res.ObservationsInvalidated++
		} else {
			res.ObservationsUpdated++
		}
		if _, err := tx.Exec(ctx, qObservationHistoryAdd, c.id, action, c.text, c.text, reason, removed); err != nil {
			return fmt.Errorf("observation history: %w", err)
		}
	}
	return nil
}

func collectUUIDs(ctx context.Context, tx pgx.Tx, q string, args ...any) ([]uuid.UUID, error) {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []uuid.UUID{}
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

const qEventStored = `SELECT EXISTS (SELECT 1 FROM events WHERE bank_id = $1 AND event_key = $2)`

// replaceDocuments carries out, inside a persist transaction, the records
// that replace their document: the document's stored content goes, and so
// does the content of the batch's earlier records of it (their events stay
// claimed, so a replay does not bring them back). A replayed record (its
// event already stored) deletes nothing. It returns evs, copied when a
// record's content was dropped.
func replaceDocuments(ctx context.Context, tx pgx.Tx, evs []EventRecord) ([]EventRecord, error) {
	copied := false
	for j := range evs {
		e := &evs[j]
		if !e.ReplaceDocument {
			continue
		}
		var stored bool
		if err := tx.QueryRow(ctx, qEventStored, e.BankID, e.EventKey).Scan(&stored); err != nil {
			return nil, fmt.Errorf("replace document %s/%s: %w", e.BankID, e.DocumentID, err)
		}
		if stored {
			continue
		}
		if _, err := deleteDocumentTx(ctx, tx, e.BankID, e.DocumentID); err != nil && !errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("replace document %s/%s: %w", e.BankID, e.DocumentID, err)
		}
		for i := 0; i < j; i++ {
			if evs[i].BankID != e.BankID || evs[i].DocumentID != e.DocumentID || evs[i].eventOf() == e.eventOf() {
				continue
			}
			if !copied {
				evs = slices.Clone(evs)
				copied = true
			}
			evs[i].Chunks, evs[i].Facts, evs[i].Entities, evs[i].Links = nil, nil, nil, nil
		}
	}
	return evs, nil
}
