package store_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/store"
)

// bigEventFacts is the size of the large events of the link tests: the
// 960 KB event of issue 15 had 40 000 sentences.
var bigEventFacts = 40000

// oneConnStore is a migrated store whose pool holds one connection, so
// that the statistics a test reads are that connection's own.
func oneConnStore(t *testing.T) *store.Store {
	t.Helper()
	url, _ := pgtest.Schema(t)
	st, err := store.Open(context.Background(), store.Deps{Logger: discardLog()}, store.Config{URL: url, Dim: 4, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st
}

// tuplesRead sums the rows and index entries the schema's link-related
// tables returned to scans so far: the work the statements did, counted
// rather than timed. The session's pending statistics are flushed first.
func tuplesRead(t *testing.T, st *store.Store) int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := st.Pool().Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
	var n int64
	err := st.Pool().QueryRow(ctx, `
		SELECT coalesce(sum(coalesce(t.seq_tup_read, 0)), 0) +
		       coalesce((SELECT sum(i.idx_tup_read) FROM pg_stat_user_indexes i
		                 WHERE i.schemaname = current_schema() AND i.relname IN ('memory_units', 'unit_entities', 'memory_links')), 0)
		FROM pg_stat_user_tables t
		WHERE t.schemaname = current_schema() AND t.relname IN ('memory_units', 'unit_entities', 'memory_links')`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func linkCounts(t *testing.T, st *store.Store, bank string) map[string]int {
	t.Helper()
	rows, err := st.Pool().Query(context.Background(), `SELECT link_type, count(*) FROM memory_links WHERE bank_id = $1 GROUP BY 1`, bank)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		out[k] = n
	}
	return out
}

// neighbourEvent is a small conversation of another document, its facts
// an hour apart starting at at.
func neighbourEvent(bank, doc string, n int, at time.Time) store.EventRecord {
	e := store.EventRecord{BankID: bank, EventKey: "e-" + doc, DocumentID: doc}
	for i := range n {
		key := fmt.Sprintf("%s-%d", doc, i)
		e.Facts = append(e.Facts, store.FactRow{ID: store.DeriveID(bank, "fact", key), FactType: "world", Text: "neighbour " + key,
			Embedding: []float32{0, 1, 0, 0}, MentionedAt: at.Add(time.Duration(i) * time.Hour), IdemKey: key})
	}
	return e
}

// TestLargeEventLinksBounded persists the two large events of issue 15
// item 1, each as one record: 40 000 sentences in one message (every fact
// at the same time, in one document) and 10 000 messages a second apart.
// Link building must stay linear: at most four temporal links per fact,
// five co-mention links per fact and entity, and a bounded number of rows
// read per fact. The temporal links still reach the other conversation.
func TestLargeEventLinksBounded(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		n    int
		step time.Duration
	}{
		{"one message of 40 000 sentences", bigEventFacts, 0},
		{"10 000 messages", bigEventFacts / 4, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := oneConnStore(t)
			ctx := context.Background()
			bank := "big"
			// Another conversation of the bank, before and after the event.
			if _, err := st.PersistBatch(ctx, []store.EventRecord{neighbourEvent(bank, "other", 6, at.Add(-3*time.Hour))}); err != nil {
				t.Fatal(err)
			}
			user := store.DeriveID(bank, "entity", "person", "user")
			ev := store.EventRecord{BankID: bank, EventKey: "huge", DocumentID: "huge",
				Entities: []store.EntityRow{{ID: user, Name: "User", Kind: "person", Seen: at, Mentions: tc.n}}}
			for i := range tc.n {
				key := fmt.Sprintf("huge#m%d#f%d", i, i)
				ev.Facts = append(ev.Facts, store.FactRow{ID: store.DeriveID(bank, key), FactType: "experience",
					Text:        fmt.Sprintf("sentence %d", i),
					MentionedAt: at.Add(time.Duration(i) * tc.step), IdemKey: key, EntityIDs: []uuid.UUID{user}})
			}
			before := tuplesRead(t, st)
			if _, err := st.PersistBatch(ctx, []store.EventRecord{ev}); err != nil {
				t.Fatal(err)
			}
			work := tuplesRead(t, st) - before
			links := linkCounts(t, st, bank)
			t.Logf("%d facts: %d rows read (%.1f per fact), links %v", tc.n, work, float64(work)/float64(tc.n), links)
			if links["temporal"] > 4*tc.n+4*6 {
				t.Errorf("%d temporal links for %d facts, want at most 4 per fact", links["temporal"], tc.n)
			}
			if links["entity"] > 5*tc.n {
				t.Errorf("%d co-mention links for %d facts of one entity, want at most 5 per fact", links["entity"], tc.n)
			}
			// Bounded work per fact, whatever the event's size: the
			// quadratic plan read about n/2 rows per fact.
			if per := float64(work) / float64(tc.n); per > 60 {
				t.Errorf("persisting read %d rows for %d facts (%.0f per fact); want a bound per fact (at most 60)", work, tc.n, per)
			}
			var reached int
			if err := st.Pool().QueryRow(ctx, `SELECT count(DISTINCT l.from_id) FROM memory_links l
				JOIN memory_units u ON u.id = l.to_id WHERE l.link_type = 'temporal' AND u.document_id = 'other'`).Scan(&reached); err != nil {
				t.Fatal(err)
			}
			if reached < tc.n/2 {
				t.Errorf("only %d of %d facts have a temporal link to the other conversation", reached, tc.n)
			}
		})
	}
}

// TestTemporalLinksNearestOtherConversations checks which facts temporal
// links pick: the nearest two on each side within 24 hours, of other
// conversations only, whether stored before or in the same batch.
func TestTemporalLinksNearestOtherConversations(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	fact := func(doc, name string, d time.Duration) store.FactRow {
		return store.FactRow{ID: store.DeriveID("b", name), FactType: "world", Text: name, MentionedAt: at.Add(d), IdemKey: name}
	}
	stored := []store.EventRecord{
		{BankID: "b", EventKey: "a", DocumentID: "A", Facts: []store.FactRow{
			fact("A", "a-30h", -30*time.Hour), fact("A", "a-2h", -2*time.Hour), fact("A", "a-1h", -time.Hour),
			fact("A", "a+1h", time.Hour), fact("A", "a+3h", 3*time.Hour), fact("A", "a+25h", 25*time.Hour)}},
		{BankID: "b", EventKey: "b0", DocumentID: "B", Facts: []store.FactRow{fact("B", "b-10m", -10*time.Minute)}},
	}
	if _, err := st.PersistBatch(ctx, stored); err != nil {
		t.Fatal(err)
	}
	batch := []store.EventRecord{
		{BankID: "b", EventKey: "b1", DocumentID: "B", Facts: []store.FactRow{fact("B", "b0", 0)}},
		{BankID: "b", EventKey: "c1", DocumentID: "C", Facts: []store.FactRow{fact("C", "c+30m", 30*time.Minute)}},
	}
	if _, err := st.PersistBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	linked := func(from string) []string {
		rows, err := st.Pool().Query(ctx, `SELECT u.text FROM memory_links l JOIN memory_units u ON u.id = l.to_id
			WHERE l.from_id = $1 AND l.link_type = 'temporal' ORDER BY u.mentioned_at`, store.DeriveID("b", from))
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	for from, want := range map[string][]string{
		"b0":    {"a-2h", "a-1h", "c+30m", "a+1h"},
		"c+30m": {"b-10m", "b0", "a+1h", "a+3h"},
	} {
		if got := linked(from); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("temporal links of %s = %v, want %v", from, got, want)
		}
	}
}

// TestEventPersistedInUnits: an event persisted in two units counts as
// ingested, and is reported existing, only once its last unit (the one
// claiming the event's key) is stored; StoredChunks says which chunks a
// restart can skip, and replaying a unit writes nothing.
func TestEventPersistedInUnits(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	unit := func(key, unitOf string, chunk int) store.EventRecord {
		idem := fmt.Sprintf("ev#m0#c%d#f0", chunk)
		return store.EventRecord{BankID: "b", EventKey: key, UnitOf: unitOf, DocumentID: "d",
			Chunks: []store.ChunkRow{{ID: store.DeriveID("b", "ev", "chunk", fmt.Sprint(chunk)), Index: chunk, Text: "chunk", StartedAt: at}},
			Facts:  []store.FactRow{{ID: store.DeriveID("b", idem), FactType: "world", Text: idem, MentionedAt: at, IdemKey: idem}}}
	}
	check := func(when string, wantEvents int64, wantExists bool, wantChunks int) {
		t.Helper()
		stats, err := st.BankStats(ctx, "b")
		if err != nil {
			t.Fatal(err)
		}
		exists, err := st.ExistingEvents(ctx, []string{"b"}, []string{"ev"})
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := st.StoredChunks(ctx, "b", "ev")
		if err != nil {
			t.Fatal(err)
		}
		if stats.EventsIngested != wantEvents || exists["b\x00ev"] != wantExists || len(chunks) != wantChunks {
			t.Errorf("%s: events_ingested %d, exists %v, stored chunks %v; want %d, %v, %d chunks",
				when, stats.EventsIngested, exists["b\x00ev"], chunks, wantEvents, wantExists, wantChunks)
		}
	}
	if _, err := st.PersistBatch(ctx, []store.EventRecord{unit("ev#c0-0", "ev", 0)}); err != nil {
		t.Fatal(err)
	}
	check("after the first unit", 0, false, 1)
	res, err := st.PersistBatch(ctx, []store.EventRecord{unit("ev#c0-0", "ev", 0)})
	if err != nil || res.Duplicates != 1 {
		t.Fatalf("replayed unit: %+v, %v; want a duplicate", res, err)
	}
	if _, err := st.PersistBatch(ctx, []store.EventRecord{unit("ev", "", 1)}); err != nil {
		t.Fatal(err)
	}
	check("after the last unit", 1, true, 2)
}

// TestCoMentionLinksGoToRecentFacts: co-mention links join a new fact to
// the five most recent facts naming the same entity. Rows without a
// mention time (an observation's, and before the fix a merged entity's)
// sorted first under ORDER BY mentioned_at DESC and took those places.
func TestCoMentionLinksGoToRecentFacts(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	ent := func(name string) store.UUID { return store.DeriveID("b", "entity", name) }
	event := func(key string, entity store.UUID, d time.Duration) store.EventRecord {
		return store.EventRecord{BankID: "b", EventKey: key, DocumentID: "d-" + key,
			Entities: []store.EntityRow{{ID: entity, Name: key, Kind: "person", Seen: at.Add(d), Mentions: 1}},
			Facts: []store.FactRow{{ID: store.DeriveID("b", key), FactType: "world", Text: key, MentionedAt: at.Add(d),
				IdemKey: key, EntityIDs: []uuid.UUID{entity}}}}
	}
	// Two old facts of Robert, later merged into Bob.
	for i := range 2 {
		if _, err := st.PersistBatch(ctx, []store.EventRecord{event(fmt.Sprintf("robert%d", i), ent("robert"), time.Duration(i-48)*time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	// Six facts of Bob, an hour apart.
	for i := range 6 {
		if _, err := st.PersistBatch(ctx, []store.EventRecord{event(fmt.Sprintf("bob%d", i), ent("bob"), time.Duration(i-6)*time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.MergeEntity(ctx, "b", ent("robert"), ent("bob")); err != nil {
		t.Fatal(err)
	}
	// An observation about Bob, stored as consolidation stores one.
	obs := store.DeriveID("b", "observation")
	if _, err := st.Pool().Exec(ctx, `INSERT INTO memory_units (id, bank_id, fact_type, text, mentioned_at, idempotency_key)
		VALUES ($1, 'b', 'observation', 'Bob is busy', $2, 'observation:1')`, obs, at); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `INSERT INTO unit_entities (unit_id, entity_id) VALUES ($1, $2)`, obs, ent("bob")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PersistBatch(ctx, []store.EventRecord{event("bob-new", ent("bob"), 0)}); err != nil {
		t.Fatal(err)
	}
	rows, err := st.Pool().Query(ctx, `SELECT u.text FROM memory_links l JOIN memory_units u ON u.id = l.to_id
		WHERE l.from_id = $1 AND l.link_type = 'entity' ORDER BY u.text`, store.DeriveID("b", "bob-new"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	if want := []string{"bob1", "bob2", "bob3", "bob4", "bob5"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("co-mention links of the new fact go to %v, want the five most recent facts %v", got, want)
	}
}

// TestGraphArmTakesNewestStoredFacts: hop 1 of the graph arm lends a
// named entity's most recently stored facts. It ordered them by ctid,
// which is not storage order once rows are rewritten: an entity merge
// moves two-day-old facts into the survivor as new rows, and they took
// the places of its newest facts.
func TestGraphArmTakesNewestStoredFacts(t *testing.T) {
	t.Parallel()
	st, url := migratedURL(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	ent := func(name string) store.UUID { return store.DeriveID("b", "entity", name) }
	persist := func(key string, entity store.UUID, d time.Duration) {
		t.Helper()
		ev := store.EventRecord{BankID: "b", EventKey: key, DocumentID: "d-" + key,
			Entities: []store.EntityRow{{ID: entity, Name: key, Kind: "person", Seen: at.Add(d), Mentions: 1}},
			Facts: []store.FactRow{{ID: store.DeriveID("b", key), FactType: "world", Text: key, MentionedAt: at.Add(d),
				IdemKey: key, EntityIDs: []uuid.UUID{entity}}}}
		if _, err := st.PersistBatch(ctx, []store.EventRecord{ev}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		persist(fmt.Sprintf("old-robert-%d", i), ent("robert"), time.Duration(i-48)*time.Hour)
	}
	for i := range 10 {
		persist(fmt.Sprintf("new-bob-%d", i), ent("bob"), time.Duration(i-10)*time.Hour)
	}
	if _, err := st.MergeEntity(ctx, "b", ent("robert"), ent("bob")); err != nil {
		t.Fatal(err)
	}
	got, err := st.RecallGraph(ctx, store.RecallFilter{BankID: "b", Types: []string{}, Tags: []string{}, TagsMode: "any"}, store.GraphWalk{Entities: []store.UUID{ent("bob")},
		Weights: []float64{1}, Limit: 4, SemanticWeight: 0.5, PerEntity: 4, MentionCap: 1000, PerWeakEntity: 4})
	if err != nil {
		t.Fatal(err)
	}
	db := pgtest.Pool(t, url)
	var texts []string
	for _, s := range got {
		var text string
		if err := db.QueryRow(ctx, `SELECT text FROM memory_units WHERE id = $1`, s.ID).Scan(&text); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, text)
	}
	slices.Sort(texts)
	if want := []string{"new-bob-6", "new-bob-7", "new-bob-8", "new-bob-9"}; fmt.Sprint(texts) != fmt.Sprint(want) {
		t.Errorf("graph arm for Bob returned %v, want his four most recently stored facts %v", texts, want)
	}
}
