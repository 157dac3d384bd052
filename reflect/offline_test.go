package reflect

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/resolve"
	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/text"
	"github.com/memstream/memstream/tokens"
)

const testDim = 64

// pgFact is one row of the Postgres fixture.
type pgFact struct {
	key, typ, text, trend string
	at                    time.Time
}

// migratedStore opens a store on a fresh, migrated schema of the test
// server, the local embedder of its dimension, and a pool of the test's
// own on the schema for arranging and asserting rows.
func migratedStore(t *testing.T, log *slog.Logger) (*store.Store, *embed.Hash, *pgxpool.Pool) {
	t.Helper()
	url, _ := pgtest.Schema(t)
	st, err := store.Open(context.Background(), store.Deps{Logger: log}, store.Config{URL: url, Dim: testDim, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	emb, err := embed.NewHash(testDim)
	if err != nil {
		t.Fatal(err)
	}
	return st, emb, pgtest.Pool(t, url)
}

type pgFixture struct {
	st  *store.Store
	db  *pgxpool.Pool // the test's own, for arranging and asserting rows
	rec *recall.Recaller
	ids map[string]uuid.UUID
}

// newPGFixture persists facts for bank "alice" through store.PersistBatch
// (the pipeline's path), each with its own chunk and an Alice entity, then
// sets observation trends as consolidation would.
func newPGFixture(t *testing.T, facts []pgFact) *pgFixture {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, emb, db := migratedStore(t, log)
	fx := &pgFixture{st: st, db: db, ids: map[string]uuid.UUID{}}
	eid := store.DeriveID("alice", "entity", "Alice")
	var evs []store.EventRecord
	for _, f := range facts {
		vs, err := emb.EmbedDocuments(ctx, []string{f.text})
		if err != nil {
			t.Fatal(err)
		}
		id := store.DeriveID("alice", "fact", f.key)
		fx.ids[f.key] = id
		chunk := store.DeriveID("alice", "chunk", f.key)
		er := store.EntityRow{ID: eid, Name: "Alice", Kind: "person", Seen: f.at, Mentions: 1}
		for _, k := range resolve.Keys("Alice") {
			er.Aliases = append(er.Aliases, store.AliasRow{Key: k, Alias: "Alice"})
		}
		evs = append(evs, store.EventRecord{BankID: "alice", EventKey: "ev-" + f.key, DocumentID: "doc-" + f.key,
			Chunks:   []store.ChunkRow{{ID: chunk, Text: "Alice: " + f.text, Speaker: "Alice", StartedAt: f.at}},
			Entities: []store.EntityRow{er},
			Facts: []store.FactRow{{ID: id, FactType: f.typ, Text: f.text, Embedding: vs[0], SearchAux: text.Aux(f.text, []string{"Alice"}),
				MentionedAt: f.at, ChunkID: chunk, IdemKey: f.key, EntityIDs: []uuid.UUID{eid}}},
		})
	}
	if _, err := st.PersistBatch(ctx, evs); err != nil {
		t.Fatal(err)
	}
	for _, f := range facts {
		if f.trend != "" {
			if _, err := db.Exec(ctx, `UPDATE memory_units SET trend = $2 WHERE id = $1`, fx.ids[f.key], f.trend); err != nil {
				t.Fatal(err)
			}
		}
	}
	var err error
	fx.rec, err = recall.New(recall.Deps{Store: st, Embedder: emb, Logger: log}, recall.Config{Tokenizer: tokens.Estimate})
	if err != nil {
		t.Fatal(err)
	}
	return fx
}

func TestOfflineAnswersWithNewerCityAndCitesObservation(t *testing.T) {
	t.Parallel()
	day := func(d int) time.Time { return time.Now().UTC().AddDate(0, 0, -d).Truncate(time.Second) }
	fx := newPGFixture(t, []pgFact{
		{key: "beijing", typ: "world", text: "I live in Beijing", at: day(400)},
		{key: "shanghai", typ: "world", text: "I moved to Shanghai", at: day(10)},
		{key: "dog", typ: "world", text: "Alice walks her dog every morning", at: day(20)},
		// The observation consolidation updated after the move, and an
		// older one it never touched again.
		{key: "obs-home", typ: "observation", text: "Alice lives in Shanghai (moved from Beijing)", trend: "NEW", at: day(10)},
		{key: "obs-old", typ: "observation", text: "Alice lives in Beijing", trend: "STALE", at: day(400)},
	})
	ctx := context.Background()
	// A mental model about something else must not lead the answer.
	if _, err := fx.db.Exec(ctx, `INSERT INTO mental_models (id, bank_id, name, source_query, content, last_refreshed_at)
		VALUES ($1, 'alice', 'pets', 'What pets does Alice have?', 'Alice has a dog.', now())`, uuid.New()); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	r, err := New(Deps{Recaller: fx.rec, Store: fx.st, Registerer: reg}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{BankID: "alice", Query: "Where does Alice live now?"}
	resp, err := r.Reflect(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("answer:\n%s", resp.Text)
	lead := strings.SplitN(resp.Text, "\n", 2)[0]
	if !strings.Contains(lead, "Shanghai") || !strings.Contains(lead, fx.ids["obs-home"].String()) {
		t.Errorf("lead %q does not answer Shanghai citing the current observation", lead)
	}
	if !resp.Extractive || resp.Trace.Forced || resp.Trace.StopReason != stopOffline {
		t.Errorf("extractive %v forced %v stop %q", resp.Extractive, resp.Trace.Forced, resp.Trace.StopReason)
	}
	if want := []string{ToolMentalModels, ToolObservations, ToolRecall}; !slices.Equal(toolNames(resp.Trace), want) {
		t.Errorf("tool order %q, want %q", toolNames(resp.Trace), want)
	}
	if !slices.Equal(resp.BasedOn.Observations, []string{fx.ids["obs-home"].String()}) {
		t.Errorf("based_on.observations = %v, want only the current observation", resp.BasedOn.Observations)
	}
	if len(resp.BasedOn.Memories) == 0 || resp.BasedOn.Memories[0] != fx.ids["shanghai"].String() {
		t.Errorf("based_on.memories = %v, want the newer fact first", resp.BasedOn.Memories)
	}
	if len(resp.BasedOn.MentalModels) != 0 {
		t.Errorf("an unrelated mental model was cited: %v", resp.BasedOn.MentalModels)
	}
	for _, id := range slices.Concat(resp.BasedOn.Memories, resp.BasedOn.Observations) {
		if !strings.Contains(resp.Text, id) {
			t.Errorf("based_on id %s is not cited in the text", id)
		}
	}
	// Deterministic: the same question gives the same answer.
	again, err := r.Reflect(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if again.Text != resp.Text {
		t.Errorf("second answer differs:\n%s\nvs\n%s", again.Text, resp.Text)
	}
	if n := gatheredCounter(t, reg, "memstream_reflect_tool_calls_total", ToolRecall); n != 2 {
		t.Errorf("recall tool counter = %v, want 2", n)
	}

	// With only the stale observation left, a skeptical bank flags it.
	if _, err := fx.db.Exec(ctx, `UPDATE memory_units SET state = 'invalidated' WHERE id = $1`, fx.ids["obs-home"]); err != nil {
		t.Fatal(err)
	}
	resp, err = r.Reflect(ctx, Request{BankID: "alice", Query: "Where does Alice live now?", Disposition: &Disposition{Skepticism: 5}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("skeptical answer:\n%s", resp.Text)
	if !strings.Contains(resp.Text, "Caution: the observation is stale") {
		t.Errorf("skeptical answer does not flag the stale observation:\n%s", resp.Text)
	}
	if strings.Contains(resp.Text, "dog") {
		t.Errorf("an unrelated fact about Alice was quoted:\n%s", resp.Text)
	}
}

func TestStoreReflectQueries(t *testing.T) {
	t.Parallel()
	fx := newPGFixture(t, []pgFact{
		{key: "shanghai", typ: "world", text: "I moved to Shanghai", at: time.Now()},
		{key: "obs", typ: "observation", text: "Alice lives in Shanghai", at: time.Now()},
	})
	ctx := context.Background()
	for _, m := range []struct{ name, q, content string }{
		{"home", "Where does Alice live?", "Alice lives in Shanghai."},
		{"pets", "What pets does Alice have?", "A dog."},
	} {
		if _, err := fx.db.Exec(ctx, `INSERT INTO mental_models (id, bank_id, name, source_query, content) VALUES ($1, 'alice', $2, $3, $4)`,
			uuid.New(), m.name, m.q, m.content); err != nil {
			t.Fatal(err)
		}
	}
	hits, err := fx.st.RankMentalModels(ctx, "alice", "Where does Alice live now?", nil, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].Name != "home" || hits[0].Score < modelMatch || hits[1].Score >= hits[0].Score {
		t.Errorf("ranked mental models = %+v", hits)
	}
	if other, err := fx.st.RankMentalModels(ctx, "bob", "Where does Alice live?", nil, 5); err != nil || len(other) != 0 {
		t.Errorf("another bank's models leaked: %v %v", other, err)
	}
	exp, err := fx.st.ExpandMemories(ctx, "alice", []uuid.UUID{fx.ids["shanghai"], uuid.New()}, store.ExpandChunk)
	if err != nil {
		t.Fatal(err)
	}
	if len(exp) != 1 || exp[0].Text != "Alice: I moved to Shanghai" || exp[0].ChunkID == nil {
		t.Errorf("chunk expansion = %+v", exp)
	}
	exp, err = fx.st.ExpandMemories(ctx, "alice", []uuid.UUID{fx.ids["shanghai"]}, store.ExpandDocument)
	if err != nil || len(exp) != 1 || exp[0].DocumentID != "doc-shanghai" || !strings.Contains(exp[0].Text, "Shanghai") {
		t.Errorf("document expansion = %+v, %v", exp, err)
	}
	if exp, err := fx.st.ExpandMemories(ctx, "bob", []uuid.UUID{fx.ids["shanghai"]}, store.ExpandChunk); err != nil || len(exp) != 0 {
		t.Errorf("expansion crossed banks: %+v %v", exp, err)
	}
	if _, err := fx.st.ExpandMemories(ctx, "alice", nil, "page"); err == nil {
		t.Error("unknown depth accepted")
	}
}

// gatheredCounter reads one tool's counter from the registry, as a scrape
// would see it.
func gatheredCounter(t *testing.T, reg *prometheus.Registry, name, tool string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "tool" && l.GetValue() == tool {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
