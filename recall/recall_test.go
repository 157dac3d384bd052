package recall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"

	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/resolve"
	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/text"
	"github.com/memstream/memstream/timeparse"
	"github.com/memstream/memstream/tokens"
)

const testDim = 384

// queryTime is a Wednesday; "last Saturday" is 2025-06-07.
var queryTime = time.Date(2025, 6, 11, 12, 0, 0, 0, time.UTC)

// fact describes one fixture fact; the builder derives ids and embeddings.
type fact struct {
	key       string // stable name, for assertions
	bank      string
	typ       string
	text      string
	tags      []string
	occurred  *time.Time
	mentioned time.Time
	entity    *entity
	meta      map[string]string
}

type entity struct {
	name    string
	aliases []string
}

type fixture struct {
	url  string
	st   *store.Store
	pool *pgxpool.Pool // the test's own, for arranging and asserting rows
	emb  *embed.Hash
	ids  map[string]uuid.UUID // key → id
}

func (f *fixture) id(t testing.TB, key string) uuid.UUID {
	t.Helper()
	id, ok := f.ids[key]
	if !ok {
		t.Fatalf("no fixture fact %q", key)
	}
	return id
}

// newFixture migrates a fresh schema and persists facts through the same
// store.PersistBatch the pipeline uses.
func newFixture(t testing.TB, facts []fact) *fixture {
	t.Helper()
	url, _ := pgtest.Schema(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, store.Config{URL: url, Dim: testDim, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	emb, err := embed.NewHash(testDim)
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(facts))
	for i, f := range facts {
		texts[i] = f.text
	}
	vecs, err := emb.EmbedDocuments(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	fx := &fixture{url: url, st: st, pool: pgtest.Pool(t, url), emb: emb, ids: map[string]uuid.UUID{}}
	var evs []store.EventRecord
	for i, f := range facts {
		if f.typ == "" {
			f.typ = "world"
		}
		if f.mentioned.IsZero() {
			// Two days apart, so the store's 24-hour temporal links do
			// not tie unrelated fixtures together.
			f.mentioned = time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC).AddDate(0, 0, 2*i)
		}
		id := store.DeriveID(f.bank, "fact", f.key)
		fx.ids[f.key] = id
		fr := store.FactRow{
			ID: id, FactType: f.typ, Text: f.text, Embedding: vecs[i],
			// Only the text's own CJK bigrams: the graph fixture must be
			// found through the alias table, not the keyword arm.
			SearchAux:     text.Aux(f.text, nil),
			OccurredStart: f.occurred, MentionedAt: f.mentioned, Tags: f.tags, Metadata: f.meta,
			IdemKey: f.key,
		}
		ev := store.EventRecord{BankID: f.bank, EventKey: "ev-" + f.key, DocumentID: "doc-" + f.key}
		if f.entity != nil {
			eid := store.DeriveID(f.bank, "entity", f.entity.name)
			er := store.EntityRow{ID: eid, Name: f.entity.name, Kind: "person", Seen: f.mentioned, Mentions: 1}
			for _, a := range append([]string{f.entity.name}, f.entity.aliases...) {
				for _, k := range resolve.Keys(a) {
					er.Aliases = append(er.Aliases, store.AliasRow{Key: k, Alias: a})
				}
			}
			ev.Entities = []store.EntityRow{er}
			fr.EntityIDs = []uuid.UUID{eid}
		}
		ev.Facts = []store.FactRow{fr}
		evs = append(evs, ev)
	}
	if _, err := st.PersistBatch(ctx, evs); err != nil {
		t.Fatal(err)
	}
	return fx
}

func (f *fixture) recaller(t testing.TB, emb Embedder, cfg Config) *Recaller {
	t.Helper()
	return f.recallerWith(t, Deps{Embedder: emb}, cfg)
}

// recallerWith is recaller with more collaborators; the store defaults to
// the fixture's.
func (f *fixture) recallerWith(t testing.TB, deps Deps, cfg Config) *Recaller {
	t.Helper()
	if deps.Store == nil {
		deps.Store = f.st
	}
	deps.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	r, err := New(deps, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ptr[T any](v T) *T { return &v }

// lastSaturday is where timeparse puts "last Saturday" for queryTime.
func lastSaturday(t testing.TB) time.Time {
	sp := timeparse.Parse("last Saturday", queryTime)
	if len(sp) != 1 {
		t.Fatalf("timeparse: %v", sp)
	}
	return sp[0].Start
}

// mainFacts is a bank where each arm alone has a fact to find.
func mainFacts(t testing.TB) []fact {
	sat := lastSaturday(t)
	return []fact{
		// semantic: "photography" shares character n-grams with
		// "photographer" but not its English stem.
		{key: "sem", bank: "b1", text: "Maria is a passionate photographer of birds"},
		// keyword: a rare order code.
		{key: "kw", bank: "b1", text: "Shipment for order A-7731-QX was delayed at customs"},
		// graph: only the alias table links "Zhang Wei" to 张伟.
		{key: "graph", bank: "b1", text: "张伟搬到深圳工作了", entity: &entity{name: "张伟", aliases: []string{"Zhang Wei", "老张"}}},
		// temporal: happened last Saturday, no word in common with the query.
		{key: "temp", bank: "b1", text: "Went to the farmers market and bought peaches", occurred: ptr(sat.Add(10 * time.Hour)), mentioned: sat.Add(30 * time.Hour)},
		{key: "f1", bank: "b1", text: "The user prefers tea over coffee in the morning"},
		{key: "f2", bank: "b1", text: "Order 5512 of office chairs arrived on time"},
		{key: "f3", bank: "b1", text: "The team meeting moved to Thursdays"},
		{key: "f4", bank: "b1", text: "The user is allergic to peanuts"},
		{key: "f5", bank: "b1", text: "Bob plays the guitar in a jazz band"},
		{key: "f6", bank: "b1", text: "The car needs new tires before winter"},
		{key: "f7", bank: "b1", text: "The user's daughter starts school in September"},
		{key: "f8", bank: "b1", text: "A customs broker handles imports from Germany"},
		// another bank holds the very same order fact
		{key: "other-kw", bank: "b2", text: "Shipment for order A-7731-QX was delayed at customs"},
	}
}

func ids(rs []Result) []uuid.UUID {
	out := make([]uuid.UUID, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func armCands(tr *Trace, arm string) []uuid.UUID {
	for _, a := range tr.Arms {
		if a.Arm == arm {
			out := make([]uuid.UUID, len(a.Candidates))
			for i, c := range a.Candidates {
				out[i] = c.ID
			}
			return out
		}
	}
	return nil
}

func TestEachArmFindsItsFact(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, mainFacts(t))
	r := fx.recaller(t, fx.emb, Config{})
	ctx := context.Background()
	cases := []struct {
		name, query, arm, want string
	}{
		{"semantic", "Who loves photography?", ArmSemantic, "sem"},
		{"keyword", "status of order A-7731-QX", ArmKeyword, "kw"},
		{"graph", "Where did Zhang Wei move?", ArmGraph, "graph"},
		{"graph familiar", "老张去哪了", ArmGraph, "graph"},
		{"temporal", "what did I do last Saturday", ArmTemporal, "temp"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := r.Recall(ctx, Request{BankID: "b1", Query: c.query, QueryTime: queryTime, Trace: true})
			if err != nil {
				t.Fatal(err)
			}
			want := fx.id(t, c.want)
			if !slices.Contains(armCands(resp.Trace, c.arm), want) {
				t.Errorf("arm %s did not find %s; trace %+v", c.arm, c.want, resp.Trace.Arms)
			}
			if !slices.Contains(ids(resp.Results), want) {
				t.Errorf("fused results miss %s", c.want)
			}
			for _, a := range resp.Trace.Arms {
				if a.Error != "" {
					t.Errorf("arm %s failed: %s", a.Arm, a.Error)
				}
			}
		})
	}
}

// TestArmsAreComplementary checks the fixture's premise: each target is
// missed by the arm that is weakest for it, so fusion is what finds all.
func TestArmsAreComplementary(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, mainFacts(t))
	r := fx.recaller(t, fx.emb, Config{})
	ctx := context.Background()
	for _, c := range []struct{ query, missingArm, key string }{
		{"Who loves photography?", ArmKeyword, "sem"},
		{"Where did Zhang Wei move?", ArmKeyword, "graph"},
		{"Where did Zhang Wei move?", ArmSemantic, "graph"},
		{"what did I do last Saturday", ArmKeyword, "temp"},
	} {
		resp, err := r.Recall(ctx, Request{BankID: "b1", Query: c.query, QueryTime: queryTime, Arms: []string{c.missingArm}})
		if err != nil {
			t.Fatal(err)
		}
		// In a bank this small the semantic arm returns every fact, so
		// "missed" means: not similar.
		for _, res := range resp.Results {
			if res.ID == fx.id(t, c.key) && (c.missingArm != ArmSemantic || res.Scores.Semantic > 0.15) {
				t.Errorf("%q: arm %s alone found %s; the fixture no longer needs the other arms (similarity %.2f)", c.query, c.missingArm, c.key, res.Scores.Semantic)
			}
		}
	}
	// One query naming all four needs all four arms.
	q := "Who loves photography, what about order A-7731-QX, where did Zhang Wei move, and what did I do last Saturday?"
	resp, err := r.Recall(ctx, Request{BankID: "b1", Query: q, QueryTime: queryTime, Budget: BudgetHigh, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	got := ids(resp.Results)
	for _, k := range []string{"sem", "kw", "graph", "temp"} {
		if !slices.Contains(got, fx.id(t, k)) {
			t.Errorf("combined query misses %s", k)
		}
	}
}

func TestAblationReturnsOnlyThatArm(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, mainFacts(t))
	r := fx.recaller(t, fx.emb, Config{})
	for _, arm := range allArms {
		t.Run(arm, func(t *testing.T) {
			resp, err := r.Recall(context.Background(), Request{BankID: "b1", Query: "order A-7731-QX last Saturday Zhang Wei photography",
				QueryTime: queryTime, Arms: []string{arm}, Trace: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Trace.Arms) != 1 || resp.Trace.Arms[0].Arm != arm {
				t.Fatalf("trace arms = %+v, want only %s", resp.Trace.Arms, arm)
			}
			cands := armCands(resp.Trace, arm)
			if len(resp.Results) == 0 {
				t.Fatalf("arm %s alone found nothing", arm)
			}
			for _, res := range resp.Results {
				if !slices.Contains(cands, res.ID) {
					t.Errorf("result %q is not a %s candidate", res.Text, arm)
				}
			}
		})
	}
	if _, err := r.Recall(context.Background(), Request{BankID: "b1", Query: "x", Arms: []string{"vibes"}}); !isRequestError(err, "arms") {
		t.Errorf("unknown arm: err = %v, want RequestError on arms", err)
	}
}

// TestGraphSameWithOrWithoutSemantic checks that the graph arm, which
// takes its nearest facts from the semantic arm when both run, walks from
// the same facts when it runs alone and searches for them itself.
func TestGraphSameWithOrWithoutSemantic(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, mainFacts(t))
	r := fx.recaller(t, fx.emb, Config{})
	ctx := context.Background()
	found := 0
	for _, q := range []string{"搬到深圳工作", "Where did Zhang Wei move?", "Who moved to Shenzhen for work?", "photography of birds"} {
		var got [2][]Candidate
		for i, arms := range [][]string{{ArmGraph}, nil} {
			resp, err := r.Recall(ctx, Request{BankID: "b1", Query: q, QueryTime: queryTime, Arms: arms, Trace: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range resp.Trace.Arms {
				if a.Arm == ArmGraph {
					if a.Error != "" {
						t.Fatalf("%q: graph failed: %s", q, a.Error)
					}
					got[i] = a.Candidates
				}
			}
		}
		if len(got[0]) != len(got[1]) {
			t.Fatalf("%q: graph alone found %d candidates, with semantic %d", q, len(got[0]), len(got[1]))
		}
		for i := range got[0] {
			if got[0][i].ID != got[1][i].ID || math.Abs(got[0][i].Score-got[1][i].Score) > 1e-6 {
				t.Errorf("%q: candidate %d differs: alone %+v, with semantic %+v", q, i, got[0][i], got[1][i])
			}
		}
		found += len(got[0])
	}
	if found == 0 {
		t.Fatal("the graph arm found nothing for any query; the test compares nothing")
	}
}

// TestHydratorAhead checks loading ahead of fusion: the result is exactly
// the fused list's facts that exist, whatever was loaded ahead, and a fact
// loaded ahead that no longer exists is not returned.
func TestHydratorAhead(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, mainFacts(t))
	r := fx.recaller(t, fx.emb, Config{})
	ctx := context.Background()
	if _, err := fx.pool.Exec(ctx, `UPDATE memory_units SET state = 'invalidated' WHERE id = $1`, fx.id(t, "f2")); err != nil {
		t.Fatal(err)
	}
	q, err := r.prepare(Request{BankID: "b1", Query: "orders and photography"})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := fx.emb.EmbedQueries(ctx, []string{q.Query})
	if err != nil {
		t.Fatal(err)
	}
	q.vec, q.simVec = vs[0], vs[0]
	close(q.embedDone)

	h := newHydrator(r, q, 3)
	h.armDone(ctx, []Candidate{{ID: fx.id(t, "sem")}, {ID: fx.id(t, "f1")}, {ID: fx.id(t, "f2")}})
	h.armDone(ctx, []Candidate{{ID: fx.id(t, "kw")}, {ID: fx.id(t, "other-kw")}})
	h.armDone(ctx, []Candidate{{ID: fx.id(t, "f3")}}) // the last arm loads nothing ahead
	h.wait()
	if len(h.got) != 3 {
		t.Errorf("loaded ahead %d facts, want 3 (sem, f1, kw: f2 is invalidated, other-kw is another bank's, f3 came last)", len(h.got))
	}
	fs := []fused{{ID: fx.id(t, "kw")}, {ID: fx.id(t, "f2")}, {ID: fx.id(t, "f3")}, {ID: fx.id(t, "sem")}, {ID: fx.id(t, "f4")}}
	hs, err := h.hydrate(ctx, fs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range hs {
		got = append(got, x.Text)
		if x.sim == 0 {
			t.Errorf("%q: similarity %g, want it computed", x.Text, x.sim)
		}
	}
	want := []string{mainFacts(t)[1].text, mainFacts(t)[6].text, mainFacts(t)[0].text, mainFacts(t)[7].text}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("hydrated %q,\nwant %q (kw, f3, sem, f4: not f1, which fusion dropped, nor the invalidated f2)", got, want)
	}
}

func isRequestError(err error, field string) bool {
	var re *RequestError
	return errors.As(err, &re) && re.Field == field
}

func TestTokenBudget(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, mainFacts(t))
	for _, tok := range []string{tokens.CL100K, tokens.Estimate} {
		r := fx.recaller(t, fx.emb, Config{Tokenizer: tok})
		full, err := r.Recall(context.Background(), Request{BankID: "b1", Query: "order customs user", QueryTime: queryTime})
		if err != nil {
			t.Fatal(err)
		}
		if len(full.Results) < 3 {
			t.Fatalf("want several results, got %d", len(full.Results))
		}
		for _, max := range []int{1, 8, 20, 40, 100, 4096} {
			resp, err := r.Recall(context.Background(), Request{BankID: "b1", Query: "order customs user", QueryTime: queryTime, MaxTokens: max})
			if err != nil {
				t.Fatal(err)
			}
			sum := 0
			for i, res := range resp.Results {
				if res.Tokens <= 0 {
					t.Errorf("%s: result %d has %d tokens", tok, i, res.Tokens)
				}
				sum += res.Tokens
				if res.ID != full.Results[i].ID {
					t.Errorf("%s max %d: result %d differs from the unbounded ranking", tok, max, i)
				}
			}
			if sum > max {
				t.Errorf("%s: max_tokens %d, results use %d", tok, max, sum)
			}
			if len(resp.Results) < len(full.Results) && sum+full.Results[len(resp.Results)].Tokens <= max {
				t.Errorf("%s max %d: stopped early, next result would fit", tok, max)
			}
		}
	}
}

func TestBankIsolation(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, mainFacts(t))
	r := fx.recaller(t, fx.emb, Config{})
	other := fx.id(t, "other-kw")
	for _, q := range []string{"order A-7731-QX", "Shipment for order A-7731-QX was delayed at customs", "customs"} {
		resp, err := r.Recall(context.Background(), Request{BankID: "b1", Query: q, QueryTime: queryTime, Budget: BudgetHigh})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(ids(resp.Results), other) {
			t.Errorf("%q: bank b1 returned bank b2's fact", q)
		}
		if !slices.Contains(ids(resp.Results), fx.id(t, "kw")) {
			t.Errorf("%q: b1's own fact missing", q)
		}
	}
	resp, err := r.Recall(context.Background(), Request{BankID: "b2", Query: "order A-7731-QX", QueryTime: queryTime})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(resp.Results); len(got) != 1 || got[0] != other {
		t.Errorf("bank b2 results = %v, want only its own fact", got)
	}
}

func TestTagsMatch(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []fact{
		{key: "work", bank: "t", text: "zebra report for work", tags: []string{"work"}},
		{key: "work-urgent", bank: "t", text: "zebra incident at work", tags: []string{"work", "urgent"}},
		{key: "personal", bank: "t", text: "zebra at the zoo with kids", tags: []string{"personal"}},
		{key: "untagged", bank: "t", text: "zebra crossing near home"},
	})
	r := fx.recaller(t, fx.emb, Config{})
	for _, c := range []struct {
		mode string
		tags []string
		want []string
	}{
		{"", nil, []string{"work", "work-urgent", "personal", "untagged"}},
		{TagsAny, []string{"work"}, []string{"work", "work-urgent", "untagged"}},
		{TagsAll, []string{"work", "urgent"}, []string{"work-urgent", "untagged"}},
		{TagsAnyStrict, []string{"work", "personal"}, []string{"work", "work-urgent", "personal"}},
		{TagsAllStrict, []string{"work", "urgent"}, []string{"work-urgent"}},
		{TagsExact, []string{"work"}, []string{"work"}},
		{TagsExact, []string{"urgent", "work"}, []string{"work-urgent"}},
	} {
		t.Run(fmt.Sprintf("%s/%v", c.mode, c.tags), func(t *testing.T) {
			// Every arm must honour the filter, not only the one that
			// happens to rank the facts.
			resp, err := r.Recall(context.Background(), Request{BankID: "t", Query: "zebra", Tags: c.tags, TagsMatch: c.mode, QueryTime: queryTime})
			if err != nil {
				t.Fatal(err)
			}
			var want []uuid.UUID
			for _, k := range c.want {
				want = append(want, fx.id(t, k))
			}
			got := ids(resp.Results)
			slices.SortFunc(got, cmpUUID)
			slices.SortFunc(want, cmpUUID)
			if !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", names(fx, got), c.want)
			}
		})
	}
	if _, err := r.Recall(context.Background(), Request{BankID: "t", Query: "zebra", TagsMatch: "some"}); !isRequestError(err, "tags_match") {
		t.Errorf("bad tags_match: err = %v", err)
	}
}

func names(fx *fixture, got []uuid.UUID) []string {
	var out []string
	for _, id := range got {
		for k, v := range fx.ids {
			if v == id {
				out = append(out, k)
			}
		}
	}
	return out
}

func TestTypesFilterAndHydration(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []fact{
		{key: "w", bank: "ty", typ: "world", text: "The quokka lives on Rottnest Island"},
		{key: "e", bank: "ty", typ: "experience", text: "I photographed a quokka last spring", meta: map[string]string{"source": "chat"}},
		{key: "o", bank: "ty", typ: "observation", text: "The user is fond of quokka pictures", entity: &entity{name: "Quokka"}},
	})
	ctx := context.Background()
	if _, err := fx.pool.Exec(ctx, `UPDATE memory_units SET proof_count = 4, trend = 'STRENGTHENING' WHERE id = $1`, fx.id(t, "o")); err != nil {
		t.Fatal(err)
	}
	r := fx.recaller(t, fx.emb, Config{})
	resp, err := r.Recall(ctx, Request{BankID: "ty", Query: "quokka", Types: []string{"observation"}, QueryTime: queryTime})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != 1 || resp.Results[0].ID != fx.id(t, "o") {
		t.Fatalf("types=[observation]: got %v", names(fx, ids(resp.Results)))
	}
	o := resp.Results[0]
	if o.Type != "observation" || o.ProofCount != 4 || o.Trend != "STRENGTHENING" || !slices.Equal(o.Entities, []string{"Quokka"}) ||
		o.DocumentID != "doc-o" || o.SourceEventID != "ev-o" {
		t.Errorf("hydrated observation = %+v", o)
	}
	if len(resp.Entities) != 1 || resp.Entities[0].Name != "Quokka" || resp.Entities[0].Results != 1 {
		t.Errorf("entities = %+v", resp.Entities)
	}

	resp, err = r.Recall(ctx, Request{BankID: "ty", Query: "quokka", Types: []string{"world", "experience"}, QueryTime: queryTime})
	if err != nil {
		t.Fatal(err)
	}
	got := names(fx, ids(resp.Results))
	slices.Sort(got)
	if !slices.Equal(got, []string{"e", "w"}) {
		t.Errorf("types=[world experience]: got %v", got)
	}
	for _, res := range resp.Results {
		if res.ID == fx.id(t, "e") && res.Metadata["source"] != "chat" {
			t.Errorf("metadata = %v", res.Metadata)
		}
	}
	if _, err := r.Recall(ctx, Request{BankID: "ty", Query: "quokka", Types: []string{"opinion"}}); !isRequestError(err, "types") {
		t.Errorf("bad type: err = %v", err)
	}
}

// failingEmbedder stands in for a provider outage.
type failingEmbedder struct{ delay time.Duration }

func (f failingEmbedder) EmbedQueries(ctx context.Context, _ []string) ([][]float32, error) {
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return nil, errors.New("provider down")
}

func TestFailedArmDegrades(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, mainFacts(t))
	for name, emb := range map[string]Embedder{
		"error": failingEmbedder{},
		"slow":  failingEmbedder{delay: time.Minute},
		"nil":   nil,
	} {
		t.Run(name, func(t *testing.T) {
			// The default 2 s arm timeout: the slow embedder must time out while
			// keyword and graph, on a loaded machine, still finish.
			r := fx.recaller(t, emb, Config{})
			resp, err := r.Recall(context.Background(), Request{BankID: "b1", Query: "order A-7731-QX and Zhang Wei", QueryTime: queryTime, Trace: true})
			if err != nil {
				t.Fatal(err)
			}
			var semErr string
			for _, a := range resp.Trace.Arms {
				if a.Arm == ArmSemantic {
					semErr = a.Error
				}
			}
			if semErr == "" {
				t.Error("semantic arm should report the embedder failure")
			}
			got := ids(resp.Results)
			if !slices.Contains(got, fx.id(t, "kw")) || !slices.Contains(got, fx.id(t, "graph")) {
				t.Errorf("keyword and graph arms should still answer; got %v", names(fx, got))
			}
		})
	}
	r := fx.recaller(t, failingEmbedder{}, Config{})
	_, err := r.Recall(context.Background(), Request{BankID: "b1", Query: "photography", Arms: []string{ArmSemantic}})
	if !errors.Is(err, ErrAllArmsFailed) {
		t.Errorf("only arm failed: err = %v, want ErrAllArmsFailed", err)
	}
}

func TestInterleaveFusion(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, mainFacts(t))
	r := fx.recaller(t, fx.emb, Config{})
	resp, err := r.Recall(context.Background(), Request{BankID: "b1", Query: "order A-7731-QX last Saturday", QueryTime: queryTime, Fusion: FusionInterleave, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	got := ids(resp.Results)
	for _, k := range []string{"kw", "temp"} {
		if !slices.Contains(got, fx.id(t, k)) {
			t.Errorf("interleave misses %s", k)
		}
	}
	seen := map[uuid.UUID]bool{}
	for _, id := range got {
		if seen[id] {
			t.Errorf("duplicate result %s", id)
		}
		seen[id] = true
	}
}

func BenchmarkRecall(b *testing.B) {
	facts := mainFacts(b)
	topics := []string{"coffee", "hiking", "invoice", "meeting", "guitar", "garden", "flight", "doctor", "budget", "birthday"}
	for i := range 500 {
		facts = append(facts, fact{key: fmt.Sprintf("bulk-%d", i), bank: "b1",
			text: fmt.Sprintf("Note %d about %s and %s with order %d", i, topics[i%len(topics)], topics[(i/3)%len(topics)], 1000+i)})
	}
	fx := newFixture(b, facts)
	r := fx.recaller(b, fx.emb, Config{})
	ctx := context.Background()
	queries := []string{"Who loves photography?", "status of order A-7731-QX", "Where did Zhang Wei move?", "what did I do last Saturday", "budget meeting notes"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := r.Recall(ctx, Request{BankID: "b1", Query: queries[i%len(queries)], QueryTime: queryTime}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSemanticCorrectUnderFilter forces the HNSW index (seq scans off) and
// asks a small bank for a full pool while a big bank fills the graph.
//   - A plain HNSW scan stops after ef_search neighbours, most of them the
//     other bank's, and would return too few: the iterative scan must fill
//     the pool.
//   - The iterative scan itself stops after hnsw.max_scan_tuples index
//     tuples (40 here): a bank whose rows lie far from the query then has
//     few of them among those, and the arm must read the bank exactly
//     rather than return fewer, silently.
func TestSemanticCorrectUnderFilter(t *testing.T) {
	t.Parallel()
	var facts []fact
	for i := range 400 {
		facts = append(facts, fact{key: fmt.Sprintf("big-%d", i), bank: "big", text: fmt.Sprintf("note %d about the garden and the river", i)})
	}
	for i := range 30 {
		facts = append(facts, fact{key: fmt.Sprintf("small-%d", i), bank: "small", text: fmt.Sprintf("entry %d on invoices and taxes", i), tags: []string{"fin"}})
	}
	fx := newFixture(t, facts)
	// Leave the planner only the HNSW index: without the bank indexes and
	// with seq scans off, it cannot choose to read the small bank exactly.
	// The plan itself is checked in store (TestSemanticPlanUsesHNSW).
	for _, ix := range []string{"memory_units_bank_type_idx", "memory_units_mentioned_idx", "memory_units_occurred_idx", "memory_units_doc_idx", "memory_units_bank_tsv_idx"} {
		if _, err := fx.pool.Exec(context.Background(), "DROP INDEX "+ix); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fx.pool.Exec(context.Background(), "ALTER TABLE memory_units DROP CONSTRAINT memory_units_bank_id_idempotency_key_key"); err != nil {
		t.Fatal(err)
	}
	if _, err := fx.pool.Exec(context.Background(), "ANALYZE memory_units"); err != nil {
		t.Fatal(err)
	}
	noSeq := pgtest.WithSetting(t, fx.url, "enable_seqscan", "off")
	for _, c := range []struct {
		name  string
		url   string
		exact bool
	}{
		{"iterative scan", noSeq, false},
		{"scan gives up", pgtest.WithSetting(t, noSeq, "hnsw.max_scan_tuples", "40"), false},
		{"exact scan of a small bank", fx.url, true},
	} {
		st, err := store.Open(context.Background(), store.Deps{Logger: slog.New(slog.DiscardHandler)}, store.Config{URL: c.url, Dim: testDim, MaxConns: 8})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		r := fx.recallerWith(t, Deps{Store: st, Embedder: fx.emb}, Config{})
		if !c.exact {
			r.exactMax = 0 // both banks through the HNSW index
		}
		for _, req := range []Request{
			{BankID: "small", Query: "garden river", Budget: BudgetLow, Arms: []string{ArmSemantic}, Trace: true},
			{BankID: "small", Query: "garden river", Budget: BudgetLow, Arms: []string{ArmSemantic}, Trace: true, Tags: []string{"fin"}, TagsMatch: TagsAllStrict},
			{BankID: "big", Query: "garden river", Budget: BudgetLow, Arms: []string{ArmSemantic}, Trace: true},
		} {
			resp, err := r.Recall(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			got := armCands(resp.Trace, ArmSemantic)
			if len(got) != 20 {
				t.Errorf("%s, bank %s: semantic arm returned %d candidates, want the full pool of 20", c.name, req.BankID, len(got))
			}
			for _, id := range got {
				if !strings.HasPrefix(names(fx, []uuid.UUID{id})[0], req.BankID+"-") {
					t.Errorf("%s, bank %s: candidate from another bank", c.name, req.BankID)
				}
			}
		}
	}
}

// countingStore is the real store, counting the calls recall makes.
type countingStore struct {
	*store.Store
	semantic, exact, bankSize atomic.Int32
}

func (c *countingStore) RecallSemantic(ctx context.Context, f store.RecallFilter, vec []float32, ef, limit int) ([]store.Scored, error) {
	c.semantic.Add(1)
	return c.Store.RecallSemantic(ctx, f, vec, ef, limit)
}

func (c *countingStore) RecallSemanticExact(ctx context.Context, f store.RecallFilter, vec []float32, limit int) ([]store.Scored, error) {
	c.exact.Add(1)
	return c.Store.RecallSemanticExact(ctx, f, vec, limit)
}

func (c *countingStore) RecallBankSize(ctx context.Context, bank string) (int64, error) {
	c.bankSize.Add(1)
	return c.Store.RecallBankSize(ctx, bank)
}

// TestSmallBankSemanticIsExact checks that a bank of at most exactMax
// facts is read exactly: the semantic arm returns the facts with the
// highest cosine similarity to the query vector, in order, from the
// bank's stored vectors, whatever the index would have found; a bigger
// bank goes through the HNSW statement. The three arms that need the
// bank's size share one count.
func TestSmallBankSemanticIsExact(t *testing.T) {
	t.Parallel()
	var facts []fact
	topics := []string{"garden", "river", "invoice", "guitar", "school", "tires", "coffee", "customs"}
	for i := range 120 {
		facts = append(facts, fact{key: fmt.Sprintf("s-%d", i), bank: "small",
			text: fmt.Sprintf("entry %d about the %s and the %s", i, topics[i%len(topics)], topics[(i/5)%len(topics)])})
	}
	for i := range 60 {
		facts = append(facts, fact{key: fmt.Sprintf("o-%d", i), bank: "other", text: fmt.Sprintf("entry %d about the garden and the river", i)})
	}
	fx := newFixture(t, facts)
	ctx := context.Background()
	cs := &countingStore{Store: fx.st}
	r := fx.recallerWith(t, Deps{Store: cs, Embedder: fx.emb}, Config{})
	query := "the garden by the river"
	off := []string{HeuristicQueryForm, HeuristicChange} // search with the plain query vector
	resp, err := r.Recall(ctx, Request{BankID: "small", Query: query, QueryTime: queryTime, Off: off, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	if e, s, n := cs.exact.Load(), cs.semantic.Load(), cs.bankSize.Load(); e != 1 || s != 0 || n != 1 {
		t.Errorf("small bank: %d exact and %d HNSW searches, %d bank size counts; want 1, 0 and 1", e, s, n)
	}
	// The cosine of every fact of the bank, from its stored vector.
	qv, err := fx.emb.EmbedQueries(ctx, []string{query})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := fx.pool.Query(ctx, `SELECT id, 1 - (embedding <=> $1) FROM memory_units WHERE bank_id = 'small'`, pgvector.NewHalfVector(qv[0]))
	if err != nil {
		t.Fatal(err)
	}
	cos := map[uuid.UUID]float64{}
	for rows.Next() {
		var id uuid.UUID
		var c float64
		if err := rows.Scan(&id, &c); err != nil {
			t.Fatal(err)
		}
		cos[id] = c
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var got []Candidate
	for _, a := range resp.Trace.Arms {
		if a.Arm == ArmSemantic {
			got = a.Candidates
		}
	}
	if len(got) != 50 {
		t.Fatalf("semantic arm returned %d candidates, want the pool of 50", len(got))
	}
	in := map[uuid.UUID]bool{}
	for i, c := range got {
		in[c.ID] = true
		want, ok := cos[c.ID]
		if !ok {
			t.Fatalf("candidate %d is not the bank's", i)
		}
		if math.Abs(c.Score-want) > 1e-6 {
			t.Errorf("candidate %d: score %.6f, its cosine is %.6f", i, c.Score, want)
		}
		if i > 0 && c.Score > got[i-1].Score {
			t.Errorf("candidate %d scores %.6f above candidate %d (%.6f)", i, c.Score, i-1, got[i-1].Score)
		}
	}
	last := got[len(got)-1].Score
	for id, c := range cos {
		if !in[id] && c > last+1e-6 {
			t.Errorf("fact %s (cosine %.6f) left out of the pool, whose last scores %.6f", names(fx, []uuid.UUID{id})[0], c, last)
		}
	}

	// Above exactMax, the HNSW statement.
	r2 := fx.recallerWith(t, Deps{Store: cs, Embedder: fx.emb}, Config{})
	r2.exactMax = 100
	if _, err := r2.Recall(ctx, Request{BankID: "small", Query: query, QueryTime: queryTime, Arms: []string{ArmSemantic}}); err != nil {
		t.Fatal(err)
	}
	if e, s := cs.exact.Load(), cs.semantic.Load(); e != 1 || s != 1 {
		t.Errorf("bank of 120 facts above exactMax 100: %d exact and %d HNSW searches in all, want 1 and 1", e, s)
	}
}

// TestAmbiguousAliasIsWeak checks that a full-name key shared by several
// entities seeds each of them below an unambiguous name: "Alex" fits two
// people, "Alex Moreno" one, so for "Alex Moreno and Alex" the fact about
// Alex Moreno must rank first in the graph arm.
func TestAmbiguousAliasIsWeak(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []fact{
		{key: "moreno", bank: "b1", text: "He repairs vintage motorcycles", entity: &entity{name: "Alex Moreno", aliases: []string{"Alex"}}},
		{key: "kim", bank: "b1", text: "She teaches violin on weekends", entity: &entity{name: "Alex Kim", aliases: []string{"Alex"}}},
	})
	r := fx.recaller(t, nil, Config{})
	resp, err := r.Recall(context.Background(), Request{BankID: "b1", Query: "Alex Moreno and Alex", QueryTime: queryTime, Arms: []string{ArmGraph}, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	var c []Candidate
	for _, a := range resp.Trace.Arms {
		c = a.Candidates
	}
	if len(c) != 2 {
		t.Fatalf("graph candidates = %v, want both facts", c)
	}
	if c[0].ID != fx.id(t, "moreno") || !(c[0].Score > c[1].Score) {
		t.Errorf("graph order = %v, want Alex Moreno's fact strictly first", names(fx, []uuid.UUID{c[0].ID, c[1].ID}))
	}
}

// TestDiversity checks the request flag end to end: with it, a distinct
// fact comes before the paraphrases of the best one; without it, the
// paraphrases come first; and an out-of-range value is refused.
func TestDiversity(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []fact{
		{key: "p1", bank: "b1", text: "Maria loves birdwatching in the city park"},
		{key: "p2", bank: "b1", text: "Maria loves birdwatching in the city park on Sundays"},
		{key: "p3", bank: "b1", text: "Maria loves birdwatching in the big city park"},
		{key: "other", bank: "b1", text: "Maria loves painting with watercolors"},
	})
	r := fx.recaller(t, fx.emb, Config{})
	pos := func(diversity float64) int {
		t.Helper()
		resp, err := r.Recall(context.Background(), Request{BankID: "b1", Query: "Maria loves birdwatching in the city park",
			QueryTime: queryTime, Arms: []string{ArmSemantic}, Diversity: diversity})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Results) != 4 {
			t.Fatalf("got %d results, want 4", len(resp.Results))
		}
		return slices.Index(ids(resp.Results), fx.id(t, "other"))
	}
	if p := pos(0); p != 3 {
		t.Fatalf("without diversity the distinct fact is at %d, want last (3)", p)
	}
	if p := pos(0.6); p != 1 {
		t.Errorf("with diversity 0.6 the distinct fact is at %d, want 1", p)
	}
	for _, d := range []float64{-0.1, 1, math.NaN()} {
		if _, err := r.Recall(context.Background(), Request{BankID: "b1", Query: "x", Diversity: d}); !isRequestError(err, "diversity") {
			t.Errorf("diversity %g: err = %v, want RequestError on diversity", d, err)
		}
	}
}

// TestRecallOnASmallPool runs concurrent recalls, each of which wants up
// to seven connections (four arms and three loads ahead of fusion), on a
// pool of two: they must queue for connections, never deadlock or fail.
func TestRecallOnASmallPool(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, mainFacts(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, store.Deps{Logger: slog.New(slog.DiscardHandler)}, store.Config{URL: fx.url, Dim: testDim, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := fx.recallerWith(t, Deps{Store: st, Embedder: fx.emb}, Config{})
	q := "Who loves photography, what about order A-7731-QX, where did Zhang Wei move, and what did I do last Saturday?"
	errs := make(chan error, 16)
	for range 16 {
		go func() {
			resp, err := r.Recall(ctx, Request{BankID: "b1", Query: q, QueryTime: queryTime, Trace: true})
			switch {
			case err != nil:
				errs <- err
			case len(resp.Results) == 0:
				errs <- errors.New("no results")
			default:
				for _, a := range resp.Trace.Arms {
					if a.Error != "" {
						errs <- fmt.Errorf("arm %s: %s", a.Arm, a.Error)
						return
					}
				}
				errs <- nil
			}
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
