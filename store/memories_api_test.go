package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/store"
)

// apiFixture holds two documents of bank b1 (d1: Alice facts, d2: a Bob
// fact), one fact in bank b2, and two observations written the way
// consolidation writes them: o1 rests on a d1 and a d2 fact, o2 only on a
// d1 fact.
type apiFixture struct {
	st                *store.Store
	f1, f2, f3, other uuid.UUID
	o1, o2            uuid.UUID
	alice, bob, carol uuid.UUID
	at                time.Time
}

func newAPIFixture(t *testing.T) *apiFixture {
	t.Helper()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	fx := &apiFixture{st: st, at: at,
		f1: store.DeriveID("b1", "f1"), f2: store.DeriveID("b1", "f2"), f3: store.DeriveID("b1", "f3"),
		other: store.DeriveID("b2", "x"), o1: store.DeriveID("b1", "o1"), o2: store.DeriveID("b1", "o2"),
		alice: store.DeriveID("b1", "alice"), bob: store.DeriveID("b1", "bob"), carol: store.DeriveID("b1", "carol"),
	}
	vec := []float32{1, 0, 0, 0}
	evs := []store.EventRecord{
		{BankID: "b1", EventKey: "e1", DocumentID: "d1", Tags: []string{"t1"},
			Chunks: []store.ChunkRow{{ID: store.DeriveID("b1", "c1"), Text: "Alice moved to Lisbon. Alice likes tea.", StartedAt: at}},
			Entities: []store.EntityRow{
				{ID: fx.alice, Name: "Alice", Kind: "person", Seen: at, Mentions: 2, Aliases: []store.AliasRow{{Key: "alice", Alias: "Alice"}}},
				{ID: fx.carol, Name: "Carol", Kind: "person", Seen: at, Mentions: 1, Aliases: []store.AliasRow{{Key: "carol", Alias: "Carol"}}},
			},
			Facts: []store.FactRow{
				{ID: fx.f1, FactType: "world", Text: "Alice moved to Lisbon", Embedding: vec, MentionedAt: at, IdemKey: "f1", EntityIDs: []uuid.UUID{fx.alice}},
				{ID: fx.f2, FactType: "experience", Text: "Alice likes green tea", Embedding: vec, MentionedAt: at.Add(time.Hour), IdemKey: "f2", EntityIDs: []uuid.UUID{fx.alice, fx.carol}},
			},
			Links: []store.LinkRow{{From: fx.f1, To: fx.f2, Type: "causes", Weight: 1}},
		},
		{BankID: "b1", EventKey: "e2", DocumentID: "d2",
			Chunks:   []store.ChunkRow{{ID: store.DeriveID("b1", "c2"), Text: "Bob visited Alice in Lisbon.", StartedAt: at}},
			Entities: []store.EntityRow{{ID: fx.bob, Name: "Bob", Kind: "person", Seen: at.Add(48 * time.Hour), Mentions: 1, Aliases: []store.AliasRow{{Key: "bob", Alias: "Bob"}}}},
			Facts: []store.FactRow{
				{ID: fx.f3, FactType: "world", Text: "Bob visited Lisbon", Embedding: vec, MentionedAt: at.Add(48 * time.Hour), IdemKey: "f3", EntityIDs: []uuid.UUID{fx.bob}},
			},
		},
		{BankID: "b2", EventKey: "e9", DocumentID: "d1",
			Facts: []store.FactRow{{ID: fx.other, FactType: "world", Text: "Alice in another bank", Embedding: vec, MentionedAt: at, IdemKey: "x"}}},
	}
	if _, err := st.PersistBatch(ctx, evs); err != nil {
		t.Fatal(err)
	}
	// Observations and evidence as the consolidation worker writes them.
	for _, o := range []struct {
		id   uuid.UUID
		text string
		ev   []uuid.UUID
	}{{fx.o1, "Alice lives in Lisbon and has visitors", []uuid.UUID{fx.f1, fx.f3}}, {fx.o2, "Alice moved recently", []uuid.UUID{fx.f1}}} {
		if _, err := st.Pool().Exec(ctx, `INSERT INTO memory_units (id, bank_id, fact_type, text, mentioned_at, idempotency_key, proof_count, trend)
			VALUES ($1, 'b1', 'observation', $2, $3, $4, $5, 'stable')`, o.id, o.text, at, o.id.String(), len(o.ev)); err != nil {
			t.Fatal(err)
		}
		for _, m := range o.ev {
			if _, err := st.Pool().Exec(ctx, `INSERT INTO observation_evidence (observation_id, memory_id, quote, relevance, evidence_at)
				VALUES ($1, $2, $3, 0.8, $4)`, o.id, m, "quote of "+m.String(), at); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.Pool().Exec(ctx, `INSERT INTO observation_history (observation_id, action, new_text, memory_ids) VALUES ($1, 'create', $2, $3)`,
			o.id, o.text, o.ev); err != nil {
			t.Fatal(err)
		}
	}
	return fx
}

func TestListGetInvalidateMemories(t *testing.T) {
	t.Parallel()
	fx := newAPIFixture(t)
	ctx := context.Background()
	all, total, err := fx.st.ListMemories(ctx, "b1", store.MemoryFilter{Limit: 100})
	if err != nil || total != 5 || len(all) != 5 {
		t.Fatalf("list all: %d items, total %d, %v", len(all), total, err)
	}
	page, total, err := fx.st.ListMemories(ctx, "b1", store.MemoryFilter{Type: "world", Limit: 1, Offset: 1})
	if err != nil || total != 2 || len(page) != 1 || page[0].ID != fx.f1 {
		t.Fatalf("world page 2: %+v total %d %v", page, total, err)
	}
	past, total, err := fx.st.ListMemories(ctx, "b1", store.MemoryFilter{Type: "world", Limit: 10, Offset: 10})
	if err != nil || total != 2 || len(past) != 0 {
		t.Fatalf("past the end: %d items total %d %v", len(past), total, err)
	}
	q, _, err := fx.st.ListMemories(ctx, "b1", store.MemoryFilter{Q: "GREEN TEA", Limit: 10})
	if err != nil || len(q) != 1 || q[0].ID != fx.f2 || q[0].Type != "experience" {
		t.Fatalf("q filter: %+v %v", q, err)
	}
	if names := []string{q[0].Entities[0].Name, q[0].Entities[1].Name}; !slices.Equal(names, []string{"Alice", "Carol"}) {
		t.Fatalf("entities of f2 = %v", names)
	}
	m, err := fx.st.GetMemory(ctx, "b1", fx.f1)
	if err != nil || m.DocumentID != "d1" || m.SourceEventID != "e1" || m.State != "valid" || m.ChunkID != nil {
		t.Fatalf("get f1: %+v %v", m, err)
	}
	if _, err := fx.st.GetMemory(ctx, "b1", fx.other); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another bank's memory: %v, want ErrNotFound", err)
	}
	inv, err := fx.st.InvalidateMemory(ctx, "b1", fx.f2, "user said it is wrong")
	if err != nil || inv.State != "invalidated" || inv.InvalidReason != "user said it is wrong" {
		t.Fatalf("invalidate: %+v %v", inv, err)
	}
	if _, total, _ := fx.st.ListMemories(ctx, "b1", store.MemoryFilter{Limit: 100}); total != 4 {
		t.Fatalf("valid memories after invalidation = %d, want 4", total)
	}
	if _, total, _ := fx.st.ListMemories(ctx, "b1", store.MemoryFilter{State: "invalidated", Limit: 100}); total != 1 {
		t.Fatalf("invalidated memories = %d, want 1", total)
	}
	if _, err := fx.st.InvalidateMemory(ctx, "b2", fx.f1, "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("invalidate across banks: %v", err)
	}
	if _, err := fx.st.InvalidateMemory(ctx, "b1", fx.o2, "contradicted"); err != nil {
		t.Fatal(err)
	}
	o, err := fx.st.GetObservation(ctx, "b1", fx.o2)
	if err != nil || len(o.History) != 2 || o.History[1].Action != "invalidate" || o.History[1].Reason != "contradicted" {
		t.Fatalf("observation history after invalidation: %+v %v", o.History, err)
	}
}

func TestGetObservation(t *testing.T) {
	t.Parallel()
	fx := newAPIFixture(t)
	ctx := context.Background()
	o, err := fx.st.GetObservation(ctx, "b1", fx.o1)
	if err != nil {
		t.Fatal(err)
	}
	if o.ProofCount != 2 || o.Trend != "stable" || len(o.Evidence) != 2 || len(o.History) != 1 {
		t.Fatalf("observation: %+v", o)
	}
	ids := []uuid.UUID{o.Evidence[0].MemoryID, o.Evidence[1].MemoryID}
	if !slices.Contains(ids, fx.f1) || !slices.Contains(ids, fx.f3) || o.Evidence[0].Relevance < 0.79 || !o.Evidence[0].Timestamp.Equal(fx.at) {
		t.Fatalf("evidence: %+v", o.Evidence)
	}
	if _, err := fx.st.GetObservation(ctx, "b1", fx.f1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a fact is not an observation: %v", err)
	}
}

func TestMergeEntityAndAliases(t *testing.T) {
	t.Parallel()
	fx := newAPIFixture(t)
	ctx := context.Background()
	if _, err := fx.st.MergeEntity(ctx, "b1", fx.carol, fx.alice); err != nil {
		t.Fatal(err)
	}
	// Alice merges into Bob; Carol, merged into Alice, must follow.
	bob, err := fx.st.MergeEntity(ctx, "b1", fx.alice, fx.bob)
	if err != nil {
		t.Fatal(err)
	}
	if bob.MentionCount != 4 || !slices.Equal(bob.Aliases, []string{"Alice", "Bob", "Carol"}) || !bob.FirstSeen.Equal(fx.at) {
		t.Fatalf("survivor: %+v", bob)
	}
	var n int
	if err := fx.st.Pool().QueryRow(ctx, `SELECT count(*) FROM unit_entities WHERE entity_id = ANY($1)`, []uuid.UUID{fx.alice, fx.carol}).Scan(&n); err != nil || n != 0 {
		t.Fatalf("unit_entities left on merged entities: %d %v", n, err)
	}
	d, err := fx.st.GetEntity(ctx, "b1", fx.bob)
	if err != nil || len(d.Memories) != 3 {
		t.Fatalf("bob's facts after merge: %+v %v", d.Memories, err)
	}
	carol, err := fx.st.GetEntity(ctx, "b1", fx.carol)
	if err != nil || carol.MergedInto == nil || *carol.MergedInto != fx.bob || len(carol.Aliases) != 0 {
		t.Fatalf("carol after chained merge: %+v %v", carol.Entity, err)
	}
	list, total, err := fx.st.ListEntities(ctx, "b1", "", 10, 0)
	if err != nil || total != 1 || list[0].ID != fx.bob {
		t.Fatalf("live entities: %+v %d %v", list, total, err)
	}
	if hits, _, _ := fx.st.ListEntities(ctx, "b1", "caro", 10, 0); len(hits) != 1 || hits[0].ID != fx.bob {
		t.Fatalf("alias search: %+v", hits)
	}
	for name, c := range map[string]struct {
		src, into uuid.UUID
		bank      string
		want      error
	}{
		"self":           {fx.bob, fx.bob, "b1", store.ErrInvalidMerge},
		"already merged": {fx.alice, fx.bob, "b1", store.ErrInvalidMerge},
		"into merged":    {fx.bob, fx.carol, "b1", store.ErrInvalidMerge},
		"other bank":     {fx.bob, fx.alice, "b2", store.ErrNotFound},
		"unknown entity": {uuid.New(), fx.bob, "b1", store.ErrNotFound},
	} {
		if _, err := fx.st.MergeEntity(ctx, c.bank, c.src, c.into); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	e, err := fx.st.AddEntityAlias(ctx, "b1", fx.bob, "Bobby", []string{"bobby", "robert"})
	if err != nil || !slices.Contains(e.Aliases, "Bobby") {
		t.Fatalf("add alias: %+v %v", e, err)
	}
	if err := fx.st.Pool().QueryRow(ctx, `SELECT count(*) FROM entity_aliases WHERE entity_id = $1 AND alias = 'Bobby'`, fx.bob).Scan(&n); err != nil || n != 2 {
		t.Fatalf("alias keys stored: %d %v", n, err)
	}
	if _, err := fx.st.AddEntityAlias(ctx, "b1", fx.alice, "Al", []string{"al"}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("alias on a merged entity: %v", err)
	}
	if _, err := fx.st.AddEntityAlias(ctx, "b2", fx.bob, "Al", []string{"al"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("alias across banks: %v", err)
	}
}

func TestMentalModelsNotify(t *testing.T) {
	t.Parallel()
	fx := newAPIFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	got := make(chan string, 16)
	done := make(chan error, 1)
	go func() {
		done <- fx.st.ListenMentalModels(ctx, func() { close(ready) }, func(b, id string) { got <- b + "/" + id })
	}()
	<-ready
	m, err := fx.st.CreateMentalModel(ctx, store.MentalModel{BankID: "fresh-bank", Name: "prefs", SourceQuery: "What does Alice like?", MaxTokens: 512})
	if err != nil || m.ID == uuid.Nil || m.MaxTokens != 512 || len(m.Tags) != 0 {
		t.Fatalf("create: %+v %v", m, err)
	}
	if _, err := fx.st.CreateMentalModel(ctx, store.MentalModel{BankID: "fresh-bank", Name: "prefs", SourceQuery: "q", MaxTokens: 1}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("duplicate name: %v", err)
	}
	content := "Alice likes tea."
	tags := []string{"food"}
	up, err := fx.st.UpdateMentalModel(ctx, "fresh-bank", m.ID, store.MentalModelPatch{Content: &content, Tags: &tags})
	if err != nil || up.Content != content || !slices.Equal(up.Tags, tags) || up.Name != "prefs" {
		t.Fatalf("update: %+v %v", up, err)
	}
	want := "fresh-bank/" + m.ID.String()
	waitFor := func(what string) {
		t.Helper()
		for {
			select {
			case p := <-got:
				if p == want {
					return
				}
				// Other tests' schemas share the database's channel.
			case <-time.After(10 * time.Second):
				t.Fatalf("no notification after %s", what)
			}
		}
	}
	waitFor("update")
	if _, err := fx.st.UpdateMentalModel(ctx, "b1", m.ID, store.MentalModelPatch{Content: &content}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update across banks: %v", err)
	}
	var hist int
	if err := fx.st.Pool().QueryRow(ctx, `SELECT count(*) FROM mental_model_history WHERE mental_model_id = $1`, m.ID).Scan(&hist); err != nil || hist != 1 {
		t.Fatalf("history rows: %d %v", hist, err)
	}
	list, err := fx.st.ListMentalModels(ctx, "fresh-bank")
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %+v %v", list, err)
	}
	if err := fx.st.DeleteMentalModel(ctx, "fresh-bank", m.ID); err != nil {
		t.Fatal(err)
	}
	waitFor("delete")
	if err := fx.st.DeleteMentalModel(ctx, "fresh-bank", m.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := fx.st.GetMentalModel(ctx, "fresh-bank", m.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("listener ended with %v", err)
	}
}

func TestDeleteDocumentRemovesDerivedRows(t *testing.T) {
	t.Parallel()
	fx := newAPIFixture(t)
	ctx := context.Background()
	docs, total, err := fx.st.ListDocuments(ctx, "b1", "", nil, "", 10, 0)
	if err != nil || total != 2 || len(docs) != 2 {
		t.Fatalf("documents: %+v %d %v", docs, total, err)
	}
	for _, d := range docs {
		if d.ID == "d1" && (d.Memories != 2 || d.Chunks != 1 || d.TextLength == 0 || !slices.Equal(d.Tags, []string{"t1"})) {
			t.Fatalf("d1 listed as %+v", d)
		}
	}
	res, err := fx.st.DeleteDocument(ctx, "b1", "d1")
	if err != nil {
		t.Fatal(err)
	}
	want := store.DocumentDeletion{MemoryUnits: 2, Chunks: 1, Events: 1, ObservationsUpdated: 1, ObservationsInvalidated: 1, EntitiesDeleted: 2}
	if res != want {
		t.Fatalf("deletion = %+v, want %+v", res, want)
	}
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := fx.st.Pool().QueryRow(ctx, q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	d1 := []uuid.UUID{fx.f1, fx.f2}
	for q, want := range map[string]int{
		`SELECT count(*) FROM memory_units WHERE id = ANY($1)`:                                               0,
		`SELECT count(*) FROM unit_entities WHERE unit_id = ANY($1)`:                                         0,
		`SELECT count(*) FROM memory_links WHERE from_id = ANY($1) OR to_id = ANY($1)`:                       0,
		`SELECT count(*) FROM observation_evidence WHERE memory_id = ANY($1)`:                                0,
		`SELECT count(*) FROM chunks WHERE bank_id = 'b1' AND document_id = 'd1' AND $1::uuid[] IS NOT NULL`: 0,
		`SELECT count(*) FROM events WHERE bank_id = 'b1' AND document_id = 'd1' AND $1::uuid[] IS NOT NULL`: 0,
	} {
		if n := count(q, d1); n != want {
			t.Errorf("%s = %d, want %d", q, n, want)
		}
	}
	// The other bank's d1 and the bank's d2 are untouched.
	if n := count(`SELECT count(*) FROM memory_units WHERE id = ANY($1)`, []uuid.UUID{fx.other, fx.f3}); n != 2 {
		t.Fatalf("unrelated facts deleted: %d left of 2", n)
	}
	o1, err := fx.st.GetObservation(ctx, "b1", fx.o1)
	if err != nil || o1.ProofCount != 1 || o1.State != "valid" || len(o1.Evidence) != 1 || o1.History[len(o1.History)-1].Action != "update" {
		t.Fatalf("o1 after delete: %+v %v", o1, err)
	}
	o2, err := fx.st.GetObservation(ctx, "b1", fx.o2)
	if err != nil || o2.State != "invalidated" || o2.InvalidReason != "source document d1 deleted" {
		t.Fatalf("o2 after delete: %+v %v", o2, err)
	}
	if _, err := fx.st.DeleteDocument(ctx, "b1", "d1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if st, _ := fx.st.BankStats(ctx, "b1"); st.Documents != 1 || st.EventsIngested != 1 {
		t.Fatalf("stats after delete: %+v", st)
	}
	// Alice and Carol were named only by d1's facts: they were derived
	// from it and are gone with their aliases; Bob (d2) stays.
	for id, want := range map[uuid.UUID]int{fx.alice: 0, fx.carol: 0, fx.bob: 1} {
		if n := count(`SELECT count(*) FROM entities WHERE id = $1`, id); n != want {
			t.Errorf("entity %s: %d rows after the delete, want %d", id, n, want)
		}
		if n := count(`SELECT count(*) FROM entity_aliases WHERE entity_id = $1`, id); n != want {
			t.Errorf("entity %s: %d aliases after the delete, want %d", id, n, want)
		}
	}
}

// personEvent is an event of bank b and document doc with facts facts
// naming one person, as the pipeline builds it: one mention per fact.
func personEvent(doc, name string, facts int, at time.Time) store.EventRecord {
	ent := store.DeriveID("b", "entity", strings.ToLower(name))
	e := store.EventRecord{BankID: "b", EventKey: "e-" + doc, DocumentID: doc,
		Entities: []store.EntityRow{{ID: ent, Name: name, Kind: "person", Seen: at, Mentions: facts,
			Aliases: []store.AliasRow{{Key: strings.ToLower(name), Alias: name}}}}}
	for i := range facts {
		key := fmt.Sprintf("%s-%d", doc, i)
		e.Facts = append(e.Facts, store.FactRow{ID: store.DeriveID("b", "fact", key), FactType: "world", Text: name + " fact " + key,
			Embedding: []float32{1, 0, 0, 0}, MentionedAt: at, IdemKey: key, EntityIDs: []uuid.UUID{ent}})
	}
	return e
}

// TestDeleteDocumentTakesBackMentions deletes one of two documents naming
// the same entity: the entity stays, with the other document's mentions
// once the deltas are folded.
func TestDeleteDocumentTakesBackMentions(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	ent := store.DeriveID("b", "entity", "dana")
	if _, err := st.PersistBatch(ctx, []store.EventRecord{personEvent("d1", "Dana", 3, at), personEvent("d2", "Dana", 2, at)}); err != nil {
		t.Fatal(err)
	}
	mentions := func() int {
		t.Helper()
		if _, err := st.FoldEntityMentions(ctx); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := st.Pool().QueryRow(ctx, `SELECT mention_count FROM entities WHERE id = $1`, ent).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := mentions(); n != 5 {
		t.Fatalf("mention_count %d before the delete, want 5", n)
	}
	res, err := st.DeleteDocument(ctx, "b", "d1")
	if err != nil || res.EntitiesDeleted != 0 || res.MemoryUnits != 3 {
		t.Fatalf("delete d1: %+v %v", res, err)
	}
	if n := mentions(); n != 2 {
		t.Fatalf("mention_count %d after deleting d1, want d2's 2", n)
	}
	if res, err = st.DeleteDocument(ctx, "b", "d2"); err != nil || res.EntitiesDeleted != 1 {
		t.Fatalf("delete d2: %+v %v", res, err)
	}
}

// TestDeleteDocumentRacesIngest deletes the only document naming an
// entity while other transactions link new facts to it, as pipeline lanes
// do. A lane may fail its foreign key and retry (PersistBatch runs it
// again, inserting the entity again from the event), but no
// fact may end up without its entity link, which a cascade from deleting
// an entity that had just gained a fact would cause.
func TestDeleteDocumentRacesIngest(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	ev := func(doc string) store.EventRecord { return personEvent(doc, "Erin", 1, at) }
	persist := func(e store.EventRecord) error {
		var err error
		for range 10 { // the pipeline's retry
			if _, err = st.PersistBatch(ctx, []store.EventRecord{e}); err == nil {
				return nil
			}
		}
		return err
	}
	for round := range 15 {
		victim := fmt.Sprintf("victim-%d", round)
		if err := persist(ev(victim)); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 4)
		for w := range 4 {
			go func() { done <- persist(ev(fmt.Sprintf("new-%d-%d", round, w))) }()
		}
		if _, err := st.DeleteDocument(ctx, "b", victim); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			if err := <-done; err != nil {
				t.Fatalf("round %d: a lane failed for good: %v", round, err)
			}
		}
	}
	var facts, linked int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*), count(ue.unit_id) FROM memory_units m
		LEFT JOIN unit_entities ue ON ue.unit_id = m.id WHERE m.bank_id = 'b'`).Scan(&facts, &linked); err != nil {
		t.Fatal(err)
	}
	if facts != 60 || linked != facts {
		t.Fatalf("%d facts, %d linked to their entity; want 60 and 60", facts, linked)
	}
}

// TestDeleteDocumentWaitsForALinkInFlight holds a lane's transaction open
// after it linked a new fact to the entity that only the deleted document
// names: the delete must wait for it and then keep the entity, instead of
// deleting it and cascading the new link away.
func TestDeleteDocumentWaitsForALinkInFlight(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	ent, fresh, lane := linkInFlight(t, st, "Finn", "victim", 1)
	type result struct {
		res store.DocumentDeletion
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := st.DeleteDocument(ctx, "b", "victim")
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("the delete did not wait for the lane's link: %+v %v", r.res, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := lane.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.res.MemoryUnits != 1 || r.res.EntitiesDeleted != 0 {
		t.Fatalf("delete: %+v %v; want 1 unit deleted and the entity kept", r.res, r.err)
	}
	wantLinked(t, st, fresh, ent)
}

// TestPersistRacingEntityDelete: the only document naming an entity is
// deleted after a lane ensured the entity (its own short transaction) and
// before the lane's batch transaction links a fact to it. The batch must
// still be stored, with the entity back: a failed foreign key on a single
// record is dead-lettered by the pipeline, not retried. The lane is held
// on a row lock of its own document until the delete has committed.
func TestPersistRacingEntityDelete(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	ent := store.DeriveID("b", "entity", "gail")
	if _, err := st.PersistBatch(ctx, []store.EventRecord{personEvent("victim", "Gail", 1, at),
		{BankID: "b", EventKey: "seed", DocumentID: "other"}}); err != nil {
		t.Fatal(err)
	}
	hold, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx)
	if _, err := hold.Exec(ctx, `SELECT 1 FROM documents WHERE bank_id = 'b' AND id = 'other' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := st.PersistBatch(ctx, []store.EventRecord{personEvent("other", "Gail", 1, at)})
		done <- err
	}()
	// The lane has ensured Gail and now waits on the document's row.
	waitForBlocked(t, st, hold, `INSERT INTO documents%`)
	res, err := st.DeleteDocument(ctx, "b", "victim")
	if err != nil || res.EntitiesDeleted != 1 {
		t.Fatalf("delete victim: %+v %v; want Gail deleted", res, err)
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("a batch racing the delete of its entity failed: %v", err)
	}
	var linked int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM unit_entities ue JOIN memory_units m ON m.id = ue.unit_id
		WHERE m.document_id = 'other' AND ue.entity_id = $1`, ent).Scan(&linked); err != nil || linked != 1 {
		t.Fatalf("the new fact's link to Gail: %d rows (%v), want 1", linked, err)
	}
}

// waitForBlocked is pgtest.WaitForBlocked on the store's pool.
func waitForBlocked(t *testing.T, st *store.Store, tx pgx.Tx, query string) {
	t.Helper()
	pgtest.WaitForBlocked(t, st.Pool(), tx, query)
}

// TestAddEntityAliasRacingMerge adds an alias to an entity while it is
// being merged away. The alias must end up on the survivor, or the call
// must fail with ErrConflict; an alias left on the merged-away entity is
// lost to resolve (it skips merged entities) while the call reports
// success. The merge is held on a row lock of one of the source's aliases
// (its last alias step) until the add has read the entity and waits.
func TestAddEntityAliasRacingMerge(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	src, into, hold := heldMergePair(t, st, at)
	merged, added := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := st.MergeEntity(ctx, "b", src, into)
		merged <- err
	}()
	waitForBlocked(t, st, hold, `DELETE FROM entity_aliases%`)
	go func() {
		_, err := st.AddEntityAlias(ctx, "b", src, "Hanna", []string{"hanna"})
		added <- err
	}()
	// The add waits for the merge, which waits for hold.
	waitBehindBlocked(t, st, hold, "the alias add never waited for the merge")
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-merged; err != nil {
		t.Fatal(err)
	}
	err := <-added
	var onSrc, onInto int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE entity_id = $1), count(*) FILTER (WHERE entity_id = $2)
		FROM entity_aliases WHERE alias = 'Hanna'`, src, into).Scan(&onSrc, &onInto); err != nil {
		t.Fatal(err)
	}
	switch {
	case err == nil && onInto == 1 && onSrc == 0:
	case errors.Is(err, store.ErrConflict) && onSrc == 0 && onInto == 0:
	default:
		t.Fatalf("alias add racing the merge: %v, alias on the source %d, on the survivor %d; want it on the survivor or ErrConflict", err, onSrc, onInto)
	}
}

// TestClearMemoriesWaitsForALinkInFlight clears a bank's memories while a
// lane's transaction, still open, links a new fact to an entity that only
// the cleared facts named. The new fact is not cleared (the clear cannot
// see it) and must keep its entity: deleting the entity once the lane
// committed cascaded the new link away.
func TestClearMemoriesWaitsForALinkInFlight(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	ent, fresh, lane := linkInFlight(t, st, "Jana", "old", 2)
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := st.ClearMemories(ctx, "b", "")
		done <- result{n, err}
	}()
	waitForBlocked(t, st, lane, `%entities%`)
	if err := lane.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.n != 2 {
		t.Fatalf("clear: %d %v; want the 2 old facts cleared", r.n, r.err)
	}
	wantLinked(t, st, fresh, ent)
}

// TestAliasOrderCannotDeadlock is TestEnqueueOrderCannotDeadlock for new
// aliases of an existing entity: one transaction adds k1, then k2, while a
// batch naming the entity with aliases k2 and k1 ensures them.
func TestAliasOrderCannotDeadlock(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Now()
	ent := store.DeriveID("b", "entity", "kim")
	named := func(key string, aliases ...string) store.EventRecord {
		e := store.EventRecord{BankID: "b", EventKey: key, DocumentID: "d"}
		row := store.EntityRow{ID: ent, Name: "Kim", Kind: "person", Seen: at, Mentions: 1}
		for _, a := range aliases {
			row.Aliases = append(row.Aliases, store.AliasRow{Key: a, Alias: a})
		}
		e.Entities = []store.EntityRow{row}
		return e
	}
	if _, err := st.PersistBatch(ctx, []store.EventRecord{named("e0", "kim")}); err != nil {
		t.Fatal(err)
	}
	hold, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx)
	alias := func(key string) error {
		_, err := hold.Exec(ctx, `INSERT INTO entity_aliases (bank_id, alias_key, alias, entity_id) VALUES ('b', $1, $1, $2)
			ON CONFLICT DO NOTHING`, key, ent)
		return err
	}
	if err := alias("k1"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := st.PersistBatch(ctx, []store.EventRecord{named("e1", "k2", "k1")})
		done <- err
	}()
	waitForBlocked(t, st, hold, `INSERT INTO entity_aliases%`)
	if err := alias("k2"); err != nil {
		t.Fatalf("the held insert of alias k2: %v", err)
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the batch ensuring aliases k2 then k1: %v", err)
	}
}

// TestPersistRacingMerge stores a batch that names an entity while the
// entity is being merged away (resolved before the merge, persisted during
// it). Its fact, mentions and aliases must land on the survivor: on the
// merged-away entity the graph arm and resolve no longer find them. The
// merge is held on a row lock of one of the source's aliases (its last
// alias step), with both entities locked, until the batch waits for it.
func TestPersistRacingMerge(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	src, into, hold := heldMergePair(t, st, at)
	merged, stored := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := st.MergeEntity(ctx, "b", src, into)
		merged <- err
	}()
	waitForBlocked(t, st, hold, `DELETE FROM entity_aliases%`)
	late := lateBatch(at)
	go func() {
		_, err := st.PersistBatch(ctx, []store.EventRecord{late})
		stored <- err
	}()
	// The batch waits for the merge, which waits for hold.
	waitBehindBlocked(t, st, hold, "the batch never waited for the merge")
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-merged; err != nil {
		t.Fatal(err)
	}
	if err := <-stored; err != nil {
		t.Fatal(err)
	}
	lateOnSurvivor(t, st, late, src, into)
}

// lateBatch is a batch naming Hana (src of heldMergePair) as it was
// resolved before her merge, with a new alias Hanna.
func lateBatch(at time.Time) store.EventRecord {
	late := personEvent("d3", "Hana", 1, at.Add(time.Hour))
	late.Entities[0].Aliases = append(late.Entities[0].Aliases, store.AliasRow{Key: "hanna", Alias: "Hanna"})
	return late
}

// lateOnSurvivor fails unless late's fact, mentions and alias Hanna are
// on into and none is on src.
func lateOnSurvivor(t *testing.T, st *store.Store, late store.EventRecord, src, into uuid.UUID) {
	t.Helper()
	var linksSrc, linksInto, aliasSrc, aliasInto, deltasSrc int
	if err := st.Pool().QueryRow(context.Background(), `SELECT
			(SELECT count(*) FROM unit_entities WHERE unit_id = $1 AND entity_id = $2),
			(SELECT count(*) FROM unit_entities WHERE unit_id = $1 AND entity_id = $3),
			(SELECT count(*) FROM entity_aliases WHERE alias = 'Hanna' AND entity_id = $2),
			(SELECT count(*) FROM entity_aliases WHERE alias = 'Hanna' AND entity_id = $3),
			(SELECT count(*) FROM entity_mention_deltas WHERE entity_id = $2)`, late.Facts[0].ID, src, into).
		Scan(&linksSrc, &linksInto, &aliasSrc, &aliasInto, &deltasSrc); err != nil {
		t.Fatal(err)
	}
	if linksSrc != 0 || linksInto != 1 || aliasSrc != 0 || aliasInto != 1 || deltasSrc != 0 {
		t.Fatalf("batch resolved before the merge: fact on the source %d / survivor %d, alias on the source %d / survivor %d, mention deltas on the source %d; want everything on the survivor",
			linksSrc, linksInto, aliasSrc, aliasInto, deltasSrc)
	}
}

// TestPersistAfterMergeOfItsEntity stores a batch resolved before a merge
// that committed before the batch's transaction began (between its
// resolve and its ensure, or its ensure and its transaction): nothing
// waits, and the batch must still land on the survivor.
func TestPersistAfterMergeOfItsEntity(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	src, into, hold := heldMergePair(t, st, at)
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.MergeEntity(ctx, "b", src, into); err != nil {
		t.Fatal(err)
	}
	late := lateBatch(at)
	if _, err := st.PersistBatch(ctx, []store.EventRecord{late}); err != nil {
		t.Fatal(err)
	}
	lateOnSurvivor(t, st, late, src, into)
}

// heldMergePair stores the entities Hana (the merge's source) and Ivo (its
// target) in bank b and returns them with an open transaction holding a
// row lock on the source's aliases: a MergeEntity started next stops at
// its alias delete, with both entities locked, until hold ends.
func heldMergePair(t *testing.T, st *store.Store, at time.Time) (src, into uuid.UUID, hold pgx.Tx) {
	t.Helper()
	ctx := context.Background()
	src, into = store.DeriveID("b", "entity", "hana"), store.DeriveID("b", "entity", "ivo")
	if _, err := st.PersistBatch(ctx, []store.EventRecord{personEvent("d1", "Hana", 1, at), personEvent("d2", "Ivo", 1, at)}); err != nil {
		t.Fatal(err)
	}
	hold, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hold.Rollback(context.Background()) })
	if _, err := hold.Exec(ctx, `SELECT 1 FROM entity_aliases WHERE entity_id = $1 FOR UPDATE`, src); err != nil {
		t.Fatal(err)
	}
	return src, into, hold
}

// waitBehindBlocked waits until some statement waits on one that waits on
// a lock hold has (a call queued behind a held one); what names the first
// call in the failure.
func waitBehindBlocked(t *testing.T, st *store.Store, hold pgx.Tx, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !behindBlocked(t, st, hold); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}

// behindBlocked reports whether some statement waits on one that waits on
// a lock hold has.
func behindBlocked(t *testing.T, st *store.Store, hold pgx.Tx) bool {
	t.Helper()
	var waiting int
	if err := st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity w, pg_stat_activity m
		WHERE $1::int = ANY (pg_blocking_pids(m.pid)) AND m.pid = ANY (pg_blocking_pids(w.pid))`,
		int32(hold.Conn().PgConn().PID())).Scan(&waiting); err != nil {
		t.Fatal(err)
	}
	return waiting > 0
}

// linkInFlight stores facts facts of a person name in document doc of bank
// b, then opens a lane's transaction that links a new fact of another
// document ("fresh") to the person, uncommitted. The caller commits or
// rolls back lane.
func linkInFlight(t *testing.T, st *store.Store, name, doc string, facts int) (ent, fresh uuid.UUID, lane pgx.Tx) {
	t.Helper()
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	ent = store.DeriveID("b", "entity", strings.ToLower(name))
	if _, err := st.PersistBatch(ctx, []store.EventRecord{personEvent(doc, name, facts, at)}); err != nil {
		t.Fatal(err)
	}
	lane, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lane.Rollback(context.Background()) })
	fresh = store.DeriveID("b", "fact", "fresh")
	if _, err := lane.Exec(ctx, `INSERT INTO memory_units (id, bank_id, fact_type, text, mentioned_at, idempotency_key, document_id)
		VALUES ($1, 'b', 'world', $3, $2, 'fresh', 'other')`, fresh, at, name+" fresh"); err != nil {
		t.Fatal(err)
	}
	if _, err := lane.Exec(ctx, `INSERT INTO unit_entities (unit_id, entity_id, mentioned_at) VALUES ($1, $2, $3)`, fresh, ent, at); err != nil {
		t.Fatal(err)
	}
	return ent, fresh, lane
}

// wantLinked fails unless fact is linked to entity once.
func wantLinked(t *testing.T, st *store.Store, fact, entity uuid.UUID) {
	t.Helper()
	var linked int
	if err := st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM unit_entities WHERE unit_id = $1 AND entity_id = $2`, fact, entity).Scan(&linked); err != nil || linked != 1 {
		t.Fatalf("the new fact's entity link: %d rows (%v), want 1", linked, err)
	}
}
