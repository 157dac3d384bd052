package store_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/store"
)

// TestFoldMentionsCannotDeadlockWithAMerge folds mention deltas while an
// entity merge holds both entities and waits to move the source's deltas.
// The fold took its deltas and then waited for the entities, the merge
// held the entities and waited for the deltas: one of them failed with
// "deadlock detected (SQLSTATE 40P01)" after deadlock_timeout. The merge is
// held on one of the source's deltas, so the fold takes the others.
func TestFoldMentionsCannotDeadlockWithAMerge(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	src, into, hold := heldMergePair(t, st, at)
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FoldEntityMentions(ctx); err != nil {
		t.Fatal(err)
	}
	// Three more deltas of src; the first, held, stops the merge before it
	// has locked the others.
	for _, doc := range []string{"d3", "d4", "d5"} {
		if _, err := st.PersistBatch(ctx, []store.EventRecord{personEvent(doc, "Hana", 1, at.Add(time.Hour))}); err != nil {
			t.Fatal(err)
		}
	}
	hold = holdLock(t, st, `SELECT 1 FROM entity_mention_deltas WHERE id = (SELECT min(id) FROM entity_mention_deltas WHERE entity_id = $1) FOR UPDATE`, src)
	merged, folded := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := st.MergeEntity(ctx, "b", src, into)
		merged <- err
	}()
	waitForBlocked(t, st, hold, `UPDATE entity_mention_deltas%`)
	go func() {
		_, err := st.FoldEntityMentions(ctx)
		folded <- err
	}()
	// Either the fold is done (it skipped the merge's entities) or it
	// waits for the merge, which waits for hold.
	foldErr := releaseWhenDoneOrBehind(t, st, hold, folded, "the fold neither finished nor waited for the merge")
	if foldErr != nil {
		t.Fatalf("fold racing a merge: %v", foldErr)
	}
	if err := <-merged; err != nil {
		t.Fatal(err)
	}
	if _, err := st.FoldEntityMentions(ctx); err != nil {
		t.Fatal(err)
	}
	var n, left int
	if err := st.Pool().QueryRow(ctx, `SELECT (SELECT mention_count FROM entities WHERE id = $1), (SELECT count(*) FROM entity_mention_deltas)`, into).
		Scan(&n, &left); err != nil {
		t.Fatal(err)
	}
	if n != 5 || left != 0 {
		t.Fatalf("survivor's mention_count %d with %d deltas left, want 5 (Hana 4, Ivo 1) and none", n, left)
	}
}

// TestDeadLetterClaimOrderCannotDeadlock claims two dead letters, named in
// the order opposite to their keys, while another replay holds the first
// in key order uncommitted and then claims the second. Claimed in the
// caller's order, the claim held the second and waited for the first: a
// deadlock (SQLSTATE 40P01) once the other replay reached the second.
func TestDeadLetterClaimOrderCannotDeadlock(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	// Stored second first, so a scan of the table meets it first too.
	for _, off := range []int64{2, 1} {
		if err := st.RecordDeadLetter(ctx, "t", 0, off, "b", "extract", "extract"); err != nil {
			t.Fatal(err)
		}
	}
	hold, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx)
	claim := func(off int64) error {
		_, err := hold.Exec(ctx, `UPDATE dead_letters SET replayed_at = now() WHERE topic = 't' AND partition = 0 AND "offset" = $1 AND replayed_at IS NULL`, off)
		return err
	}
	if err := claim(1); err != nil {
		t.Fatal(err)
	}
	type result struct {
		got []store.DeadLetter
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := st.ClaimDeadLetters(ctx, "b", "", []store.DeadLetterPos{{Topic: "t", Offset: 2}, {Topic: "t", Offset: 1}})
		done <- result{got, err}
	}()
	waitForBlocked(t, st, hold, `UPDATE dead_letters%`)
	if err := claim(2); err != nil {
		t.Fatalf("the held replay's claim of offset 2: %v", err)
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("the claim of offsets 2 and 1: %v", r.err)
	}
	if len(r.got) != 0 {
		t.Fatalf("claimed %+v, which the other replay had claimed", r.got)
	}
	if err := st.RecordDeadLetter(ctx, "t", 0, 3, "b", "extract", "extract"); err != nil {
		t.Fatal(err)
	}
	got, err := st.ClaimDeadLetters(ctx, "b", "", []store.DeadLetterPos{{Topic: "t", Offset: 3}, {Topic: "t", Offset: 1}})
	if err != nil || len(got) != 1 || got[0].Offset != 3 || got[0].ReplayedAt == nil {
		t.Fatalf("claim of a fresh and a replayed dead letter: %+v %v, want offset 3 alone", got, err)
	}
}

// TestDeleteDocumentCannotDeadlockWithConsolidation deletes a document
// while a consolidation of one of its facts holds the fact's queue row
// and an observation citing another of its facts, and waits (on hold) to
// link its new observation to an entity. The delete deleted the facts
// and waited for the queue row (the cascade), then the consolidation's
// evidence insert waited for the deleted fact: "deadlock detected
// (SQLSTATE 40P01)", the delete run again by writeTx or the consolidation
// failed. The delete now locks the queue rows first and waits there.
func TestDeleteDocumentCannotDeadlockWithConsolidation(t *testing.T) {
	t.Parallel()
	st, retries := migratedCountingRetries(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	ivo := store.DeriveID("b", "entity", "ivo")
	if _, err := st.PersistBatch(ctx, []store.EventRecord{personEvent("d1", "Hana", 2, at), personEvent("d2", "Ivo", 1, at)}); err != nil {
		t.Fatal(err)
	}
	f0, f1 := store.DeriveID("b", "fact", "d1-0"), store.DeriveID("b", "fact", "d1-1")
	cited, fresh := store.DeriveID("b", "obs", "cited"), store.DeriveID("b", "obs", "fresh")
	if out, err := st.ApplyConsolidation(ctx, store.ConsolidationApply{BankID: "b", FactIDs: []uuid.UUID{f0}, Now: at, Trend: countTrend,
		Edits: []store.ObsEdit{{Kind: store.EditCreate, ObservationID: cited, Text: "Hana", Embedding: []float32{1, 0, 0, 0}, Evidence: evidenceAt(at, f0)}}}); err != nil || !out.Applied {
		t.Fatalf("first consolidation: %+v %v", out, err)
	}
	hold := holdLock(t, st, `SELECT 1 FROM entities WHERE id = $1 FOR UPDATE`, ivo)
	consolidated := applyInBackground(st, store.ConsolidationApply{BankID: "b", FactIDs: []uuid.UUID{f1}, Now: at.Add(time.Hour), Trend: countTrend,
		Edits: []store.ObsEdit{
			{Kind: store.EditEvidence, ObservationID: cited, Evidence: evidenceAt(at, f1)},
			{Kind: store.EditCreate, ObservationID: fresh, Text: "Hana and Ivo", Embedding: []float32{0, 1, 0, 0}, EntityIDs: []uuid.UUID{ivo}, Evidence: evidenceAt(at, f1)},
		}})
	waitForBlocked(t, st, hold, `INSERT INTO unit_entities%`)
	deleted := deleteInBackground(st, "d1")
	waitBehindBlocked(t, st, hold, "the delete never waited for the consolidation")
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c, d := <-consolidated, <-deleted
	if c.err != nil || !c.out.Applied {
		t.Fatalf("consolidation racing a document delete: %+v %v", c.out, c.err)
	}
	if d.err != nil {
		t.Fatalf("document delete racing a consolidation: %v", d.err)
	}
	retries.expectNone(t, "the consolidation")
	// It saw the consolidation's evidence: both observations lost all of it.
	if d.res.MemoryUnits != 2 || d.res.ObservationsInvalidated != 2 {
		t.Fatalf("deletion %+v; want 2 units and both observations invalidated", d.res)
	}
}

// TestMergeLeavesALockedNearDuplicate merges a new observation into three
// near-duplicates while another transaction holds the lowest id, as a
// document delete holds the observations it recounts. The merge waited
// for it, which was a deadlock (SQLSTATE 40P01) whenever the holder then
// waited for a lock the merge's transaction had (TestUpdateThenMerge...,
// TestLinkThenMerge...). It now leaves the held one, merges the others,
// and a later merge of the scope takes it.
func TestMergeLeavesALockedNearDuplicate(t *testing.T) {
	t.Parallel()
	st, ids, at := threePending(t)
	ctx := context.Background()
	low, mid, high := uuid.MustParse("00000000-0000-4000-8000-000000000001"), uuid.MustParse("00000000-0000-4000-8000-000000000002"),
		uuid.MustParse("00000000-0000-4000-8000-000000000003")
	// high survives (3), then mid (2), then low (1); high is the oldest,
	// so it survives the later merge too.
	for id, proofs := range map[uuid.UUID]int{low: 1, mid: 2, high: 3} {
		if _, err := st.Pool().Exec(ctx, `INSERT INTO memory_units (id, bank_id, fact_type, text, embedding, mentioned_at, idempotency_key, proof_count, created_at)
			VALUES ($1, 'a', 'observation', 'likes tea', '[1,0,0,0]', now(), $3, $2, now() - make_interval(hours => $2))`, id, proofs, id.String()); err != nil {
			t.Fatal(err)
		}
	}
	hold := holdLock(t, st, `SELECT 1 FROM memory_units WHERE id = $1 FOR NO KEY UPDATE`, low)
	apply := func(fact uuid.UUID, obs string) store.ConsolidationApply {
		return store.ConsolidationApply{BankID: "a", FactIDs: []uuid.UUID{fact}, Now: at, MergeThreshold: 0.97, Trend: countTrend,
			Edits: []store.ObsEdit{{Kind: store.EditCreate, ObservationID: store.DeriveID("a", "obs", obs), Text: "enjoys tea",
				Embedding: []float32{1, 0, 0, 0}, Evidence: evidenceAt(at, fact)}}}
	}
	done := applyInBackground(st, apply(ids[0], "new"))
	var r applied
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the merge waited for the near-duplicate another transaction holds")
	}
	if r.err != nil || !r.out.Applied || r.out.Merged != 2 {
		t.Fatalf("merge beside a held near-duplicate: %+v %v; want the new one and the middle one merged", r.out, r.err)
	}
	valid := func() []uuid.UUID {
		t.Helper()
		rows, err := st.Pool().Query(ctx, `SELECT id FROM memory_units WHERE fact_type = 'observation' AND state = 'valid' ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := valid(); !slices.Equal(got, []uuid.UUID{low, high}) {
		t.Fatalf("valid observations after the merge %v, want the held one and the survivor %v", got, []uuid.UUID{low, high})
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if out, err := st.ApplyConsolidation(ctx, apply(ids[1], "later")); err != nil || out.Merged != 2 {
		t.Fatalf("a later merge of the scope: %+v %v; want the later one and the one left merged", out, err)
	}
	if got := valid(); !slices.Equal(got, []uuid.UUID{high}) {
		t.Fatalf("valid observations after the later merge %v, want the survivor %s alone", got, high)
	}
}

// holdLock opens a transaction that takes lock (a SELECT … FOR …) with
// args and keeps it until the test commits it, or rolls it back at the
// end: the row a call under test is made to wait on.
func holdLock(t *testing.T, st *store.Store, lock string, args ...any) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	hold, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hold.Rollback(ctx) })
	if _, err := hold.Exec(ctx, lock, args...); err != nil {
		t.Fatal(err)
	}
	return hold
}

// deletion is what DeleteDocument returned.
type deletion struct {
	res store.DocumentDeletion
	err error
}

// deleteInBackground deletes document doc of bank b in a goroutine.
func deleteInBackground(st *store.Store, doc string) <-chan deletion {
	done := make(chan deletion, 1)
	go func() {
		res, err := st.DeleteDocument(context.Background(), "b", doc)
		done <- deletion{res, err}
	}()
	return done
}

// applied is what ApplyConsolidation returned.
type applied struct {
	out store.ApplyOutcome
	err error
}

// applyInBackground applies a consolidation in a goroutine.
func applyInBackground(st *store.Store, a store.ConsolidationApply) <-chan applied {
	done := make(chan applied, 1)
	go func() {
		out, err := st.ApplyConsolidation(context.Background(), a)
		done <- applied{out, err}
	}()
	return done
}

// releaseWhenDoneOrBehind commits hold once the call delivering on done
// has finished or some statement waits behind hold (either is right when
// the call may pass the held row by), and returns the call's result;
// what names the failure when neither comes.
func releaseWhenDoneOrBehind[T any](t *testing.T, st *store.Store, hold pgx.Tx, done <-chan T, what string) T {
	t.Helper()
	var r T
	finished := false
	for deadline := time.Now().Add(10 * time.Second); !finished && !behindBlocked(t, st, hold); {
		select {
		case r = <-done:
			finished = true
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
	if err := hold.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !finished {
		r = <-done
	}
	return r
}

// evidenceAt is one piece of evidence at at from each fact.
func evidenceAt(at time.Time, facts ...uuid.UUID) []store.ObsEvidence {
	var out []store.ObsEvidence
	for _, id := range facts {
		out = append(out, store.ObsEvidence{MemoryID: id, Quote: "q", Relevance: 1, At: at})
	}
	return out
}

// hanaAndIvo returns the ids of the entities Hana and Ivo of bank b, the
// lower first.
func hanaAndIvo() (low, high uuid.UUID) {
	low, high = store.DeriveID("b", "entity", "hana"), store.DeriveID("b", "entity", "ivo")
	if slices.Compare(low[:], high[:]) > 0 {
		low, high = high, low
	}
	return low, high
}

// bothEvent is personEvent of doc with one fact naming Hana and Ivo, the
// fact's entity ids in the order ents gives them.
func bothEvent(doc string, at time.Time, ents ...uuid.UUID) store.EventRecord {
	e, other := personEvent(doc, "Hana", 1, at), personEvent(doc, "Ivo", 1, at)
	e.Entities = append(e.Entities, other.Entities...)
	e.Facts[0].EntityIDs = ents
	return e
}

// migratedCountingRetries is migrated(t, 4), with a count of the write
// transactions writeTx ran again after losing to a concurrent writer.
func migratedCountingRetries(t *testing.T) (*store.Store, *retryCounter) {
	t.Helper()
	url, _ := pgtest.Schema(t)
	c := &retryCounter{}
	st, err := store.Open(context.Background(), store.Deps{Logger: slog.New(c)}, store.Config{URL: url, Dim: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st, c
}

// retryCounter is a log handler counting writeTx's "running it again",
// with the error of the first.
type retryCounter struct {
	mu    sync.Mutex
	n     int
	first string
}

func (c *retryCounter) counts() (int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, c.first
}

// expectNone fails t if a write transaction ran again after losing to
// another (to names it).
func (c *retryCounter) expectNone(t *testing.T, to string) {
	t.Helper()
	if n, first := c.counts(); n != 0 {
		t.Fatalf("the delete lost %d time(s) to %s and ran again: %s", n, to, first)
	}
}

func (c *retryCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *retryCounter) Handle(_ context.Context, r slog.Record) error {
	if !strings.Contains(r.Message, "running it again") {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n++; c.n == 1 {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "error" {
				c.first = a.Value.String()
			}
			return true
		})
	}
	return nil
}
func (c *retryCounter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *retryCounter) WithGroup(string) slog.Handler      { return c }

// TestUpdateThenMergeCannotDeadlockWithDeleteDocument deletes a document
// cited by two observations while a consolidation of another document's
// fact updates the higher-id one (locking it) into a near-duplicate of
// the lower-id one. The delete locked the lower one, as it locks
// observations in id order, and waited for the higher; the merge then
// waited for the lower: "deadlock detected (SQLSTATE 40P01)", the delete
// run again by writeTx. The consolidation is held on its evidence insert
// (the new fact's row) until the delete waits for it.
func TestUpdateThenMergeCannotDeadlockWithDeleteDocument(t *testing.T) {
	t.Parallel()
	st, retries := migratedCountingRetries(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	if _, err := st.PersistBatch(ctx, []store.EventRecord{personEvent("d1", "Hana", 2, at), personEvent("d2", "Hana", 1, at)}); err != nil {
		t.Fatal(err)
	}
	f0, f1, g0 := store.DeriveID("b", "fact", "d1-0"), store.DeriveID("b", "fact", "d1-1"), store.DeriveID("b", "fact", "d2-0")
	low, high := uuid.MustParse("00000000-0000-4000-8000-000000000001"), uuid.MustParse("00000000-0000-4000-8000-000000000002")
	if out, err := st.ApplyConsolidation(ctx, store.ConsolidationApply{BankID: "b", FactIDs: []uuid.UUID{f0, f1}, Now: at, Trend: countTrend,
		Edits: []store.ObsEdit{
			{Kind: store.EditCreate, ObservationID: low, Text: "Hana likes tea", Embedding: []float32{1, 0, 0, 0}, Evidence: evidenceAt(at, f0)},
			{Kind: store.EditCreate, ObservationID: high, Text: "Hana likes walks", Embedding: []float32{0, 1, 0, 0}, Evidence: evidenceAt(at, f1)},
		}}); err != nil || out.Created != 2 {
		t.Fatalf("first consolidation: %+v %v", out, err)
	}
	hold := holdLock(t, st, `SELECT 1 FROM memory_units WHERE id = $1 FOR UPDATE`, g0)
	consolidated := applyInBackground(st, store.ConsolidationApply{BankID: "b", FactIDs: []uuid.UUID{g0}, Now: at.Add(time.Hour),
		MergeThreshold: 0.97, Trend: countTrend,
		Edits: []store.ObsEdit{{Kind: store.EditUpdate, ObservationID: high, Text: "Hana likes green tea", Embedding: []float32{1, 0, 0, 0},
			Evidence: evidenceAt(at, g0)}}})
	waitForBlocked(t, st, hold, `INSERT INTO observation_evidence%`)
	deleted := deleteInBackground(st, "d1")
	waitBehindBlocked(t, st, hold, "the delete never waited for the consolidation")
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c, d := <-consolidated, <-deleted
	if c.err != nil || !c.out.Applied || c.out.Updated != 1 {
		t.Fatalf("consolidation racing a document delete: %+v %v", c.out, c.err)
	}
	if d.err != nil {
		t.Fatalf("document delete racing a consolidation: %v", d.err)
	}
	retries.expectNone(t, "the consolidation")
	// The delete held the lower one, so the merge left it; it lost its only
	// evidence, the updated one keeps the new fact's.
	if c.out.Merged != 0 || d.res.ObservationsUpdated != 1 || d.res.ObservationsInvalidated != 1 {
		t.Fatalf("merged %d, deletion %+v; want none merged, the updated observation kept and the other invalidated", c.out.Merged, d.res)
	}
}

// TestEntityLinksCannotDeadlockWithDeleteDocument deletes a document
// naming two entities while a consolidation creates an observation linked
// to both, named in the order opposite to their ids (a create's entities
// are its source facts', one fact after the other). The delete locked the
// lower entity and waited for the higher, whose foreign-key share lock
// the consolidation took first; the consolidation then waited for the
// lower: a deadlock (SQLSTATE 40P01). The delete is held on the higher
// entity (a lock that lets the share lock through) until both wait.
func TestEntityLinksCannotDeadlockWithDeleteDocument(t *testing.T) {
	t.Parallel()
	st, retries := migratedCountingRetries(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	lowEnt, highEnt := hanaAndIvo()
	// Both documents name both: the delete leaves the entities to d2.
	if _, err := st.PersistBatch(ctx, []store.EventRecord{bothEvent("d1", at, lowEnt, highEnt), bothEvent("d2", at, lowEnt, highEnt)}); err != nil {
		t.Fatal(err)
	}
	g0 := store.DeriveID("b", "fact", "d2-0")
	hold := holdLock(t, st, `SELECT 1 FROM entities WHERE id = $1 FOR NO KEY UPDATE`, highEnt)
	deleted := deleteInBackground(st, "d1")
	waitForBlocked(t, st, hold, `SELECT id FROM entities%`)
	consolidated := applyInBackground(st, store.ConsolidationApply{BankID: "b", FactIDs: []uuid.UUID{g0}, Now: at, Trend: countTrend,
		Edits: []store.ObsEdit{{Kind: store.EditCreate, ObservationID: store.DeriveID("b", "obs", "both"), Text: "Hana and Ivo",
			Embedding: []float32{1, 0, 0, 0}, EntityIDs: []uuid.UUID{highEnt, lowEnt},
			Evidence: evidenceAt(at, g0)}}})
	waitBehindBlocked(t, st, hold, "the consolidation never waited for the delete")
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c, d := <-consolidated, <-deleted
	if c.err != nil || !c.out.Applied || c.out.Created != 1 {
		t.Fatalf("consolidation racing a document delete: %+v %v", c.out, c.err)
	}
	if d.err != nil || d.res.MemoryUnits != 1 || d.res.EntitiesDeleted != 0 {
		t.Fatalf("document delete racing a consolidation: %+v %v; want its fact deleted and both entities kept", d.res, d.err)
	}
	retries.expectNone(t, "the consolidation")
	var links int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM unit_entities WHERE unit_id = $1`, store.DeriveID("b", "obs", "both")).Scan(&links); err != nil || links != 2 {
		t.Fatalf("the new observation's entity links: %d (%v), want 2", links, err)
	}
}

// TestLinkThenMergeCannotDeadlockWithDeleteDocument deletes a document
// while a consolidation creates an observation linked to the document's
// entity and near-duplicate of an observation citing the document. The
// consolidation took the entity's foreign-key share lock and then waited,
// in the merge, for the near-duplicate, which the delete held while it
// waited to lock the entity: a deadlock (SQLSTATE 40P01). The delete is
// held on the entity (a lock that lets the share lock through) until both
// wait.
func TestLinkThenMergeCannotDeadlockWithDeleteDocument(t *testing.T) {
	t.Parallel()
	st, retries := migratedCountingRetries(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	hana := store.DeriveID("b", "entity", "hana")
	if _, err := st.PersistBatch(ctx, []store.EventRecord{personEvent("d1", "Hana", 1, at), personEvent("d2", "Hana", 1, at)}); err != nil {
		t.Fatal(err)
	}
	f0, g0 := store.DeriveID("b", "fact", "d1-0"), store.DeriveID("b", "fact", "d2-0")
	cited, fresh := store.DeriveID("b", "obs", "cited"), store.DeriveID("b", "obs", "fresh")
	if out, err := st.ApplyConsolidation(ctx, store.ConsolidationApply{BankID: "b", FactIDs: []uuid.UUID{f0}, Now: at, Trend: countTrend,
		Edits: []store.ObsEdit{{Kind: store.EditCreate, ObservationID: cited, Text: "Hana likes tea", Embedding: []float32{1, 0, 0, 0},
			EntityIDs: []uuid.UUID{hana}, Evidence: evidenceAt(at, f0)}}}); err != nil || out.Created != 1 {
		t.Fatalf("first consolidation: %+v %v", out, err)
	}
	hold := holdLock(t, st, `SELECT 1 FROM entities WHERE id = $1 FOR NO KEY UPDATE`, hana)
	deleted := deleteInBackground(st, "d1")
	waitForBlocked(t, st, hold, `SELECT id FROM entities%`)
	consolidated := applyInBackground(st, store.ConsolidationApply{BankID: "b", FactIDs: []uuid.UUID{g0}, Now: at.Add(time.Hour),
		MergeThreshold: 0.97, Trend: countTrend,
		Edits: []store.ObsEdit{{Kind: store.EditCreate, ObservationID: fresh, Text: "Hana enjoys tea", Embedding: []float32{1, 0, 0, 0},
			EntityIDs: []uuid.UUID{hana}, Evidence: evidenceAt(at, g0)}}})
	// Either the consolidation is done (it left the near-duplicate the
	// delete holds) or it waits for the delete, which waits for hold.
	c := releaseWhenDoneOrBehind(t, st, hold, consolidated, "the consolidation neither finished nor waited for the delete")
	d := <-deleted
	if c.err != nil || !c.out.Applied || c.out.Created != 1 {
		t.Fatalf("consolidation racing a document delete: %+v %v", c.out, c.err)
	}
	if d.err != nil {
		t.Fatalf("document delete racing a consolidation: %v", d.err)
	}
	retries.expectNone(t, "the consolidation")
	// The delete held the near-duplicate, so the merge left it; it lost its
	// only evidence.
	if c.out.Merged != 0 || d.res.ObservationsInvalidated != 1 || d.res.EntitiesDeleted != 0 {
		t.Fatalf("merged %d, deletion %+v; want none merged, the cited observation invalidated and Hana kept", c.out.Merged, d.res)
	}
}

// TestIngestEntityLinksWaitForDeleteDocument ingests a fact naming two
// entities, in the order opposite to their ids, while a document delete
// holds the lower one and waits for the higher. The fact's entity links
// share-lock both, but the batch has key-share locked all its entities in
// id order before (followMerges), so it waits for the delete at that lock,
// holding neither, and the two finish one after the other. The delete is
// held on the higher entity (a lock that lets key-share locks through).
func TestIngestEntityLinksWaitForDeleteDocument(t *testing.T) {
	t.Parallel()
	st, retries := migratedCountingRetries(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	lowEnt, highEnt := hanaAndIvo()
	if _, err := st.PersistBatch(ctx, []store.EventRecord{bothEvent("d1", at, lowEnt, highEnt), bothEvent("d2", at, lowEnt, highEnt)}); err != nil {
		t.Fatal(err)
	}
	hold := holdLock(t, st, `SELECT 1 FROM entities WHERE id = $1 FOR NO KEY UPDATE`, highEnt)
	deleted := deleteInBackground(st, "d1")
	waitForBlocked(t, st, hold, `SELECT id FROM entities%`)
	persisted := make(chan error, 1)
	go func() {
		_, err := st.PersistBatch(ctx, []store.EventRecord{bothEvent("d3", at, highEnt, lowEnt)})
		persisted <- err
	}()
	waitBehindBlocked(t, st, hold, "the ingest never waited for the delete")
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-persisted; err != nil {
		t.Fatalf("ingest racing a document delete: %v", err)
	}
	d := <-deleted
	if d.err != nil || d.res.MemoryUnits != 1 || d.res.EntitiesDeleted != 0 {
		t.Fatalf("document delete racing an ingest: %+v %v; want its fact deleted and both entities kept", d.res, d.err)
	}
	retries.expectNone(t, "the ingest")
	var links int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM unit_entities WHERE unit_id = $1`, store.DeriveID("b", "fact", "d3-0")).Scan(&links); err != nil || links != 2 {
		t.Fatalf("the new fact's entity links: %d (%v), want 2", links, err)
	}
}

// TestIngestTemporalLinksCannotDeadlockWithDeleteDocument ingests a fact
// whose temporal links go to both facts of a document being deleted, and
// whose entity the document does not name, so no entity lock makes the
// ingest wait before its links. Each link's foreign key key-share locks
// the fact it points at, in the order the rows go in (nearest first);
// the delete deleted its facts in scan order. It deleted one and waited
// for the other, which the ingest had locked first and then held while it
// waited for the deleted one: a deadlock (SQLSTATE 40P01). A key-share
// lock (which lets the ingest's through) holds the fact the delete
// reached second. With the ids in stored order the ingest's order was
// wrong, against it the delete's.
func TestIngestTemporalLinksCannotDeadlockWithDeleteDocument(t *testing.T) {
	t.Parallel()
	lo, hi := uuid.MustParse("00000000-0000-4000-8000-000000000001"), uuid.MustParse("00000000-0000-4000-8000-000000000002")
	for _, c := range []struct {
		name string
		// ids of d1's facts in the order they are stored; the second is
		// nearer the new fact, so its link went in first.
		first, second uuid.UUID
		// held is the fact the delete reached second.
		held uuid.UUID
	}{
		{"stored in id order", lo, hi, hi},
		{"stored against id order", hi, lo, lo},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st, retries := migratedCountingRetries(t)
			ctx := context.Background()
			at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
			d1 := personEvent("d1", "Hana", 2, at)
			d1.Facts[0].ID, d1.Facts[1].ID = c.first, c.second
			d1.Facts[1].MentionedAt = at.Add(time.Hour)
			if _, err := st.PersistBatch(ctx, []store.EventRecord{d1}); err != nil {
				t.Fatal(err)
			}
			hold := holdLock(t, st, `SELECT 1 FROM memory_units WHERE id = $1 FOR KEY SHARE`, c.held)
			deleted := deleteInBackground(st, "d1")
			waitForBlocked(t, st, hold, `%memory_units%`)
			persisted := make(chan error, 1)
			go func() {
				_, err := st.PersistBatch(ctx, []store.EventRecord{personEvent("d2", "Ivo", 1, at.Add(3*time.Hour))})
				persisted <- err
			}()
			// Either the ingest is done (the delete waits for the held fact
			// before it has locked the other) or it waits for the delete.
			persistErr := releaseWhenDoneOrBehind(t, st, hold, persisted, "the ingest neither finished nor waited for the delete")
			if persistErr != nil {
				t.Fatalf("ingest racing a document delete: %v", persistErr)
			}
			d := <-deleted
			if d.err != nil || d.res.MemoryUnits != 2 {
				t.Fatalf("document delete racing an ingest: %+v %v; want both facts deleted", d.res, d.err)
			}
			retries.expectNone(t, "the ingest")
			var facts, links int
			if err := st.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM memory_units WHERE document_id = 'd2'), (SELECT count(*) FROM memory_links)`).
				Scan(&facts, &links); err != nil || facts != 1 || links != 0 {
				t.Fatalf("after the race: %d facts of d2, %d links (%v); want the new fact, with no link to the deleted ones", facts, links, err)
			}
		})
	}
}

// TestDeleteDocumentRecountsAMergeSurvivor deletes a document while a
// near-duplicate merge moves the evidence of an observation citing it onto
// a survivor that did not. The delete read the observations citing its
// fact (the merged-away one alone), waited for the merge to commit, then
// deleted the fact's evidence rows, the survivor's new one with them, and
// recounted only what it had read: the survivor kept a proof_count of
// evidence it no longer had. The merge is held on its move of that
// evidence (the fact's row) until the delete waits for it.
func TestDeleteDocumentRecountsAMergeSurvivor(t *testing.T) {
	t.Parallel()
	st, retries := migratedCountingRetries(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	if _, err := st.PersistBatch(ctx, []store.EventRecord{personEvent("d1", "Hana", 1, at), personEvent("d2", "Hana", 2, at),
		personEvent("d3", "Hana", 1, at)}); err != nil {
		t.Fatal(err)
	}
	f0, g0, g1, h0 := store.DeriveID("b", "fact", "d1-0"), store.DeriveID("b", "fact", "d2-0"), store.DeriveID("b", "fact", "d2-1"),
		store.DeriveID("b", "fact", "d3-0")
	merged, survivor := store.DeriveID("b", "obs", "merged"), store.DeriveID("b", "obs", "survivor")
	if out, err := st.ApplyConsolidation(ctx, store.ConsolidationApply{BankID: "b", FactIDs: []uuid.UUID{f0, g0, g1}, Now: at, Trend: countTrend,
		Edits: []store.ObsEdit{
			{Kind: store.EditCreate, ObservationID: merged, Text: "Hana likes tea", Embedding: []float32{1, 0, 0, 0}, Evidence: evidenceAt(at, f0)},
			{Kind: store.EditCreate, ObservationID: survivor, Text: "Hana drinks tea", Embedding: []float32{1, 0, 0, 0}, Evidence: evidenceAt(at, g0, g1)},
		}}); err != nil || out.Created != 2 {
		t.Fatalf("first consolidation: %+v %v", out, err)
	}
	hold := holdLock(t, st, `SELECT 1 FROM memory_units WHERE id = $1 FOR UPDATE`, f0)
	consolidated := applyInBackground(st, store.ConsolidationApply{BankID: "b", FactIDs: []uuid.UUID{h0}, Now: at.Add(time.Hour),
		MergeThreshold: 0.97, Trend: countTrend,
		Edits: []store.ObsEdit{{Kind: store.EditCreate, ObservationID: store.DeriveID("b", "obs", "new"), Text: "Hana loves tea",
			Embedding: []float32{1, 0, 0, 0}, Evidence: evidenceAt(at, h0)}}})
	waitForBlocked(t, st, hold, `INSERT INTO observation_evidence%`)
	deleted := deleteInBackground(st, "d1")
	waitBehindBlocked(t, st, hold, "the delete never waited for the merge")
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c, d := <-consolidated, <-deleted
	if c.err != nil || !c.out.Applied || c.out.Merged != 2 {
		t.Fatalf("merge racing a document delete: %+v %v; want the new and the citing observation merged", c.out, c.err)
	}
	if d.err != nil || d.res.MemoryUnits != 1 {
		t.Fatalf("document delete racing a merge: %+v %v", d.res, d.err)
	}
	retries.expectNone(t, "the merge")
	var proofs, evidence int
	var state string
	if err := st.Pool().QueryRow(ctx, `SELECT proof_count, state, (SELECT count(*) FROM observation_evidence WHERE observation_id = $1)
		FROM memory_units WHERE id = $1`, survivor).Scan(&proofs, &state, &evidence); err != nil {
		t.Fatal(err)
	}
	if proofs != evidence || evidence != 3 || state != "valid" {
		t.Fatalf("survivor: proof_count %d, %d evidence rows, %s; want 3 and 3 (d2's two facts and d3's), valid", proofs, evidence, state)
	}
}

// TestIngestCannotDeadlockWithClearMemories ingests a fact naming an
// entity of a bank whose memories are being cleared. The clear locked the
// bank's facts and then its entities, the ingest key-share locks its
// entities (followMerges) and then the facts its links point at: the
// ingest waited for a stored fact the clear held, the clear for the
// entity the ingest held, a deadlock (SQLSTATE 40P01). The clear is held
// on a mention delta of the entity (after its fact lock, before its
// entity lock) until the ingest waits behind it.
func TestIngestCannotDeadlockWithClearMemories(t *testing.T) {
	t.Parallel()
	st, retries := migratedCountingRetries(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	hana := store.DeriveID("b", "entity", "hana")
	if _, err := st.PersistBatch(ctx, []store.EventRecord{personEvent("d1", "Hana", 1, at)}); err != nil {
		t.Fatal(err)
	}
	hold := holdLock(t, st, `SELECT 1 FROM entity_mention_deltas WHERE entity_id = $1 FOR UPDATE`, hana)
	type cleared struct {
		n   int
		err error
	}
	clear := make(chan cleared, 1)
	go func() {
		n, err := st.ClearMemories(ctx, "b", "")
		clear <- cleared{n, err}
	}()
	waitForBlocked(t, st, hold, `DELETE FROM entity_mention_deltas%`)
	persisted := make(chan error, 1)
	go func() {
		_, err := st.PersistBatch(ctx, []store.EventRecord{personEvent("d2", "Hana", 1, at.Add(time.Hour))})
		persisted <- err
	}()
	waitBehindBlocked(t, st, hold, "the ingest never waited for the clear")
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-persisted; err != nil {
		t.Fatalf("ingest racing a memory clear: %v", err)
	}
	c := <-clear
	if c.err != nil || c.n != 1 {
		t.Fatalf("memory clear racing an ingest: %d %v; want d1's fact cleared", c.n, c.err)
	}
	retries.expectNone(t, "the ingest")
	wantLinked(t, st, store.DeriveID("b", "fact", "d2-0"), hana)
	var facts int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM memory_units WHERE bank_id = 'b'`).Scan(&facts); err != nil || facts != 1 {
		t.Fatalf("after the race: %d facts (%v); want d2's alone", facts, err)
	}
}

// TestConsolidationCannotDeadlockWithClearMemories clears a bank's
// memories while a consolidation, holding its fact's queue row, waits (on
// hold) to lock the observation it updates. The clear locked the bank's
// facts, then waited to delete that observation, and the consolidation
// then waited for its fact (the evidence's foreign key): a deadlock
// (SQLSTATE 40P01), the clear run again by writeTx. Entities locked first
// moved it to the new observation's entity link; the clear now waits at
// the queue rows. The observation is held by a share lock.
func TestConsolidationCannotDeadlockWithClearMemories(t *testing.T) {
	t.Parallel()
	st, retries := migratedCountingRetries(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	hana := store.DeriveID("b", "entity", "hana")
	if _, err := st.PersistBatch(ctx, []store.EventRecord{personEvent("d1", "Hana", 1, at), personEvent("d2", "Hana", 1, at)}); err != nil {
		t.Fatal(err)
	}
	f0, g0 := store.DeriveID("b", "fact", "d1-0"), store.DeriveID("b", "fact", "d2-0")
	cited, fresh := store.DeriveID("b", "obs", "cited"), store.DeriveID("b", "obs", "fresh")
	if out, err := st.ApplyConsolidation(ctx, store.ConsolidationApply{BankID: "b", FactIDs: []uuid.UUID{f0}, Now: at, Trend: countTrend,
		Edits: []store.ObsEdit{{Kind: store.EditCreate, ObservationID: cited, Text: "Hana likes tea", Embedding: []float32{1, 0, 0, 0},
			Evidence: evidenceAt(at, f0)}}}); err != nil || out.Created != 1 {
		t.Fatalf("first consolidation: %+v %v", out, err)
	}
	hold := holdLock(t, st, `SELECT 1 FROM memory_units WHERE id = $1 FOR SHARE`, cited)
	consolidated := applyInBackground(st, store.ConsolidationApply{BankID: "b", FactIDs: []uuid.UUID{g0}, Now: at.Add(time.Hour), Trend: countTrend,
		Edits: []store.ObsEdit{
			{Kind: store.EditUpdate, ObservationID: cited, Text: "Hana likes green tea", Embedding: []float32{1, 0, 0, 0}, Evidence: evidenceAt(at, g0)},
			{Kind: store.EditCreate, ObservationID: fresh, Text: "Hana walks", Embedding: []float32{0, 1, 0, 0}, EntityIDs: []uuid.UUID{hana},
				Evidence: evidenceAt(at, g0)},
		}})
	waitForBlocked(t, st, hold, `SELECT id, text, state FROM memory_units%`)
	type cleared struct {
		n   int
		err error
	}
	clear := make(chan cleared, 1)
	go func() {
		n, err := st.ClearMemories(ctx, "b", "")
		clear <- cleared{n, err}
	}()
	waitBehindBlocked(t, st, hold, "the clear never waited for the consolidation")
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c, cl := <-consolidated, <-clear
	if c.err != nil || !c.out.Applied || c.out.Created != 1 || c.out.Updated != 1 {
		t.Fatalf("consolidation racing a memory clear: %+v %v", c.out, c.err)
	}
	if cl.err != nil || cl.n != 4 {
		t.Fatalf("memory clear racing a consolidation: %d %v; want both facts and both observations cleared", cl.n, cl.err)
	}
	retries.expectNone(t, "the consolidation")
	var units, ents int
	if err := st.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM memory_units), (SELECT count(*) FROM entities)`).Scan(&units, &ents); err != nil || units != 0 || ents != 0 {
		t.Fatalf("after the race: %d units, %d entities (%v); want none", units, ents, err)
	}
}
