package store_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/store"
)

func open(t *testing.T, url string, dim int) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, store.Config{URL: url, Dim: dim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

// migrated returns a store on a fresh, migrated schema.
func migrated(t *testing.T, dim int) *store.Store {
	t.Helper()
	st, _ := migratedURL(t, dim)
	return st
}

// migratedURL is migrated, with the schema's URL for a second connection.
func migratedURL(t *testing.T, dim int) (*store.Store, string) {
	t.Helper()
	url, _ := pgtest.Schema(t)
	st := open(t, url, dim)
	if _, err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st, url
}

func TestMigrateIsIdempotentAndGuardsDim(t *testing.T) {
	t.Parallel()
	url, _ := pgtest.Schema(t)
	st := open(t, url, 16)
	ctx := context.Background()
	applied, err := st.Migrate(ctx)
	if err != nil || len(applied) == 0 {
		t.Fatalf("first migrate: %v %v", applied, err)
	}
	again, err := st.Migrate(ctx)
	if err != nil || len(again) != 0 {
		t.Fatalf("second migrate applied %v, err %v", again, err)
	}
	// pg_class and pg_am, not pg_indexes: its pg_get_indexdef reads every
	// index of every schema and fails on one a parallel test is dropping.
	var idx int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_am a ON a.oid = c.relam
		WHERE n.nspname = current_schema() AND c.relname = 'memory_units_embedding_idx' AND a.amname = 'hnsw'`).Scan(&idx); err != nil || idx != 1 {
		t.Fatalf("hnsw index missing: %d %v", idx, err)
	}
	other := open(t, url, 32)
	if _, err := other.Migrate(ctx); err == nil || !strings.Contains(err.Error(), "embed.dim") {
		t.Fatalf("dimension change not refused: %v", err)
	}
}

// TestMigrateGuardsEmbedder checks that a database remembers which model
// made its vectors and refuses another one at the same dimension.
func TestMigrateGuardsEmbedder(t *testing.T) {
	t.Parallel()
	url, _ := pgtest.Schema(t)
	ctx := context.Background()
	openAs := func(name string) *store.Store {
		st, err := store.Open(ctx, store.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, store.Config{URL: url, Dim: 16, Embedder: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		return st
	}
	if _, err := openAs("hash").Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := openAs("hash").Migrate(ctx); err != nil {
		t.Fatalf("same embedder refused: %v", err)
	}
	if _, err := openAs("").Migrate(ctx); err != nil {
		t.Fatalf("an unnamed embedder (no check) refused: %v", err)
	}
	_, err := openAs("local/use-multilingual-v3").Migrate(ctx)
	if err == nil || !strings.Contains(err.Error(), "embed.provider") || !strings.Contains(err.Error(), "made by hash") {
		t.Fatalf("another embedder at the same dimension: err %v, want one naming embed.provider and hash", err)
	}
	// At another dimension the refusal names the model that made the
	// vectors and every key that selects it.
	st, err := store.Open(ctx, store.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, store.Config{URL: url, Dim: 32, Embedder: "local/x/32"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	_, err = st.Migrate(ctx)
	for _, want := range []string{"embed.dim", "embed.model", "embed.provider", "hash (provider/model/dimension)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("another dimension: err %v, want it to name %q", err, want)
		}
	}
}

func TestPersistBatchIsIdempotent(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	ent := store.DeriveID("b1", "entity", "person", "alice")
	mk := func() []store.EventRecord {
		f1 := store.DeriveID("b1", "e1#f0")
		f2 := store.DeriveID("b1", "e1#f1")
		return []store.EventRecord{{
			BankID: "b1", EventKey: "e1", DocumentID: "d1", Topic: "t", Partition: 0, Offset: 7,
			Chunks: []store.ChunkRow{{ID: store.DeriveID("b1", "e1", "c0"), Text: "Alice moved. So she is happy.", StartedAt: at}},
			Entities: []store.EntityRow{{ID: ent, Name: "Alice", Kind: "person", Seen: at, Mentions: 2,
				Aliases: []store.AliasRow{{Key: "alice", Alias: "Alice"}}}},
			Facts: []store.FactRow{
				{ID: f1, FactType: "world", Text: "Alice moved", Embedding: []float32{1, 0, 0, 0}, MentionedAt: at, IdemKey: "e1#f0", EntityIDs: []store.UUID{ent}},
				{ID: f2, FactType: "world", Text: "Alice is happy", Embedding: []float32{0, 1, 0, 0}, MentionedAt: at, IdemKey: "e1#f1", EntityIDs: []store.UUID{ent}},
			},
			Links: []store.LinkRow{{From: f1, To: f2, Type: "causes", Weight: 1}},
			Audit: []store.AuditRow{{Label: "openai_api_key", Action: "redact", Fingerprint: "abc"}},
		}}
	}
	res, err := st.PersistBatch(ctx, mk())
	if err != nil || res.NewEvents != 1 || res.Facts != 2 {
		t.Fatalf("first persist: %+v %v", res, err)
	}
	count := func() map[string]int {
		out := map[string]int{}
		for _, tb := range []string{"events", "documents", "chunks", "memory_units", "entities", "entity_aliases", "unit_entities", "memory_links", "defense_audit", "jobs"} {
			var n int
			if err := st.Pool().QueryRow(ctx, "SELECT count(*) FROM "+tb).Scan(&n); err != nil {
				t.Fatal(err)
			}
			out[tb] = n
		}
		return out
	}
	before := count()
	for tb, n := range before {
		if n == 0 {
			t.Errorf("%s is empty after persist", tb)
		}
	}
	res, err = st.PersistBatch(ctx, mk())
	if err != nil || res.NewEvents != 0 || res.Duplicates != 1 {
		t.Fatalf("replay persist: %+v %v", res, err)
	}
	after := count()
	for tb, n := range before {
		if after[tb] != n {
			t.Errorf("replay changed %s: %d → %d", tb, n, after[tb])
		}
	}
	stats, err := st.BankStats(ctx, "b1")
	if err != nil || stats.Facts != 2 || stats.EventsIngested != 1 || stats.Entities != 1 {
		t.Fatalf("stats = %+v, %v", stats, err)
	}
	if _, err := st.FoldEntityMentions(ctx); err != nil {
		t.Fatal(err)
	}
	var mentions int
	if err := st.Pool().QueryRow(ctx, `SELECT mention_count FROM entities`).Scan(&mentions); err != nil || mentions != 2 {
		t.Fatalf("mention_count = %d (%v), want 2 (not doubled by replay)", mentions, err)
	}
}

func TestEntityMentionDeltasFold(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	ent := store.DeriveID("b", "entity", "person", "alice")
	ev := func(key string, at time.Time, mentions int) store.EventRecord {
		f := store.DeriveID("b", key)
		return store.EventRecord{BankID: "b", EventKey: key, DocumentID: key,
			Entities: []store.EntityRow{{ID: ent, Name: "Alice", Kind: "person", Seen: at, Mentions: mentions}},
			Facts:    []store.FactRow{{ID: f, FactType: "world", Text: "Alice " + key, Embedding: []float32{1, 0, 0, 0}, MentionedAt: at, IdemKey: key, EntityIDs: []store.UUID{ent}}}}
	}
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t0, t2 := t1.Add(-48*time.Hour), t1.Add(48*time.Hour)
	for _, e := range []store.EventRecord{ev("e1", t1, 2), ev("e2", t2, 3), ev("e3", t0, 1)} {
		if _, err := st.PersistBatch(ctx, []store.EventRecord{e}); err != nil {
			t.Fatal(err)
		}
	}
	// A replay writes no delta.
	if _, err := st.PersistBatch(ctx, []store.EventRecord{ev("e2", t2, 3)}); err != nil {
		t.Fatal(err)
	}
	read := func() (n int, first, last time.Time) {
		if err := st.Pool().QueryRow(ctx, `SELECT mention_count, first_seen, last_seen FROM entities WHERE id = $1`, ent).Scan(&n, &first, &last); err != nil {
			t.Fatal(err)
		}
		return
	}
	// Entities are created without mentions; every event's mentions wait
	// in the deltas (the API adds them on read, see entityCols).
	if n, _, _ := read(); n != 0 {
		t.Fatalf("before fold mention_count = %d, want 0", n)
	}
	changed, err := st.FoldEntityMentions(ctx)
	if err != nil || changed != 1 {
		t.Fatalf("fold changed %d, %v", changed, err)
	}
	n, first, last := read()
	if n != 6 || !first.Equal(t0) || !last.Equal(t2) {
		t.Fatalf("after fold = %d %s %s, want 6 %s %s", n, first, last, t0, t2)
	}
	if changed, _ := st.FoldEntityMentions(ctx); changed != 0 {
		t.Fatal("a second fold counted again")
	}
}

// TestDeleteOrphanEntities deletes old entities that no fact mentions
// (ensured for a batch that was then dead-lettered), and keeps young
// ones, mentioned ones, merged ones, and one an open ingest transaction is
// linking a fact to.
func TestDeleteOrphanEntities(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	mentioned := store.DeriveID("b", "entity", "gus")
	if _, err := st.PersistBatch(ctx, []store.EventRecord{personEvent("d1", "Gus", 1, at)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FoldEntityMentions(ctx); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, age time.Duration) store.UUID {
		id := store.DeriveID("b", "entity", name)
		if _, err := st.Pool().Exec(ctx, `INSERT INTO entities (id, bank_id, canonical_name, first_seen, last_seen, created_at)
			VALUES ($1, 'b', $2, $3, $3, now() - make_interval(secs => $4))`, id, name, at, age.Seconds()); err != nil {
			t.Fatal(err)
		}
		return id
	}
	old, young, busy := mk("old", time.Hour), mk("young", time.Minute), mk("busy", time.Hour)
	merged := mk("merged", time.Hour)
	if _, err := st.Pool().Exec(ctx, `UPDATE entities SET merged_into = $1 WHERE id = $2`, mentioned, merged); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE entities SET created_at = now() - interval '1 hour' WHERE id = $1`, mentioned); err != nil {
		t.Fatal(err)
	}
	// A lane links a fact to "busy" and has not committed yet.
	lane, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lane.Rollback(ctx)
	f2 := store.DeriveID("b", "fact", "busy")
	if _, err := lane.Exec(ctx, `INSERT INTO memory_units (id, bank_id, fact_type, text, mentioned_at, idempotency_key) VALUES ($1, 'b', 'world', 'busy', $2, 'busy')`, f2, at); err != nil {
		t.Fatal(err)
	}
	if _, err := lane.Exec(ctx, `INSERT INTO unit_entities (unit_id, entity_id, mentioned_at) VALUES ($1, $2, $3)`, f2, busy, at); err != nil {
		t.Fatal(err)
	}
	n, err := st.DeleteOrphanEntities(ctx, 10*time.Minute)
	if err != nil || n != 1 {
		t.Fatalf("deleted %d (%v), want 1 (old)", n, err)
	}
	if err := lane.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := st.DeleteOrphanEntities(ctx, 10*time.Minute); err != nil || n != 0 {
		t.Fatalf("second pass deleted %d (%v), want 0", n, err)
	}
	for id, want := range map[store.UUID]int{old: 0, young: 1, busy: 1, merged: 1, mentioned: 1} {
		var got int
		if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM entities WHERE id = $1`, id).Scan(&got); err != nil || got != want {
			t.Errorf("entity %s: %d rows (%v), want %d", id, got, err, want)
		}
	}
}

// TestRecalledGINIndexesBoundTheirPendingList checks migrations 014, 015
// and 016: the GIN indexes recall searches on every query either insert
// directly (the trigram indexes on entity names, written once per new
// name) or keep a pending list of at most 64 kB (the facts' full-text
// index, written with every fact), so a burst of ingest never leaves a
// long unsorted list each search scans (docs/BENCHMARKS.md, "compare").
func TestRecalledGINIndexesBoundTheirPendingList(t *testing.T) {
	t.Parallel()
	url, _ := pgtest.Schema(t)
	st := open(t, url, 16)
	ctx := context.Background()
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"entities_bank_name_trgm_idx": "fastupdate=off", "entity_aliases_trgm_idx": "fastupdate=off",
		"memory_units_bank_tsv_idx": "gin_pending_list_limit=64"}
	for idx, opt := range want {
		var opts []string
		if err := st.Pool().QueryRow(ctx, `SELECT coalesce(c.reloptions, '{}') FROM pg_class c
			JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relname = $1`, idx).Scan(&opts); err != nil {
			t.Fatalf("%s: %v", idx, err)
		}
		if !slices.Contains(opts, opt) {
			t.Errorf("%s reloptions = %v, want %s", idx, opts, opt)
		}
	}
}

// A database made by the USE default of before 2026-12-05 is refused by the
// joined default, with an error that names what made it and the settings
// that keep it (docs/OPERATIONS.md, "Upgrades").
func TestMigrateRefusesTheNewDefaultOnAUSEDatabase(t *testing.T) {
	t.Parallel()
	url, _ := pgtest.Schema(t)
	ctx := context.Background()
	openAs := func(dim int, name string) *store.Store {
		st, err := store.Open(ctx, store.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, store.Config{URL: url, Dim: dim, Embedder: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		return st
	}
	if _, err := openAs(512, "local/use-multilingual-v3/512").Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := openAs(896, "local/use-multilingual-v3+all-minilm-l6-v2/896").Migrate(ctx)
	if err == nil {
		t.Fatal("the joined default started on a database of the USE")
	}
	for _, want := range []string{"embed.dim", "local/use-multilingual-v3/512", "use-multilingual-v3 and 512"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not name %q", err, want)
		}
	}
}
