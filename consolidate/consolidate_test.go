package consolidate_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/memstream/memstream/consolidate"
	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/text"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const dim = 384

// now is the fixed clock of every test.
var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func clock() time.Time { return now }

type env struct {
	t   *testing.T
	st  *store.Store
	db  *pgxpool.Pool // the test's own, for arranging and asserting rows
	emb *embed.Hash
	seq int
}

func newEnv(t *testing.T) *env {
	t.Helper()
	url, _ := pgtest.Schema(t)
	st, err := store.Open(context.Background(), store.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, store.Config{URL: url, Dim: dim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	emb, err := embed.NewHash(dim)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, st: st, db: pgtest.Pool(t, url), emb: emb}
}

type fact struct {
	text string
	at   time.Time
	tags []string
}

// persist stores facts through PersistBatch, one event each, embedded with
// the local embedder, exactly as the pipeline would.
func (e *env) persist(bank string, facts ...fact) []uuid.UUID {
	e.t.Helper()
	var evs []store.EventRecord
	var ids []uuid.UUID
	for _, f := range facts {
		e.seq++
		key := fmt.Sprintf("ev-%d", e.seq)
		vec, err := e.emb.EmbedDocuments(context.Background(), []string{f.text})
		if err != nil {
			e.t.Fatal(err)
		}
		id := store.DeriveID(bank, key, "f0")
		ids = append(ids, id)
		evs = append(evs, store.EventRecord{BankID: bank, EventKey: key, DocumentID: "doc-" + key, Tags: f.tags,
			Facts: []store.FactRow{{ID: id, FactType: "world", Text: f.text, Embedding: vec[0], SearchAux: text.Aux(f.text, nil),
				MentionedAt: f.at, Tags: f.tags, IdemKey: key}}})
	}
	if _, err := e.st.PersistBatch(context.Background(), evs); err != nil {
		e.t.Fatal(err)
	}
	return ids
}

func (e *env) worker(deps consolidate.Deps, cfg consolidate.Config) *consolidate.Worker {
	e.t.Helper()
	deps.Store, deps.Embedder, deps.Clock = e.st, e.emb, clock
	w, err := consolidate.New(deps, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return w
}

func (e *env) drain(w *consolidate.Worker, bank string) consolidate.Result {
	e.t.Helper()
	res, err := w.DrainBank(context.Background(), bank)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

type obsRow struct {
	ID       uuid.UUID
	Text     string
	Tags     []string
	Proofs   int
	State    string
	Reason   string
	Trend    string
	Evidence int
}

func (e *env) observations(bank string) []obsRow {
	e.t.Helper()
	rows, err := e.db.Query(context.Background(), `SELECT m.id, m.text, m.tags, m.proof_count, m.state, COALESCE(m.invalid_reason, ''),
		COALESCE(m.trend, ''), (SELECT count(*) FROM observation_evidence ev WHERE ev.observation_id = m.id)
		FROM memory_units m WHERE m.bank_id = $1 AND m.fact_type = 'observation' ORDER BY m.proof_count DESC, m.text`, bank)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []obsRow
	for rows.Next() {
		var o obsRow
		var p int32
		var n int64
		if err := rows.Scan(&o.ID, &o.Text, &o.Tags, &p, &o.State, &o.Reason, &o.Trend, &n); err != nil {
			e.t.Fatal(err)
		}
		o.Proofs, o.Evidence = int(p), int(n)
		out = append(out, o)
	}
	return out
}

func valid(obs []obsRow) []obsRow {
	var out []obsRow
	for _, o := range obs {
		if o.State == "valid" {
			out = append(out, o)
		}
	}
	return out
}

func (e *env) count(q string, args ...any) int {
	e.t.Helper()
	var n int64
	if err := e.db.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return int(n)
}

// paraphrases returns n distinct restatements of one preference.
func paraphrases(n int) []string {
	cores := []string{
		"Alice prefers short, active sentences and hates passive voice",
		"Alice hates passive voice and prefers short active sentences",
		"Alice prefers active sentences over passive voice",
		"Alice wants short sentences in active voice, not passive voice",
		"Alice dislikes passive voice and prefers short active sentences",
		"Alice prefers short sentences written in the active voice",
	}
	prefixes := []string{"", "Again, ", "As always, ", "Honestly, ", "Remember: "}
	suffixes := []string{"", " in her documents", " when editing", " in every report", " for all emails"}
	var out []string
	for i := range n {
		out = append(out, prefixes[(i+i/6)%5]+cores[i%6]+suffixes[(i/6)%5])
	}
	return out
}

func TestThirtyParaphrasesBecomeOneObservation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var facts []fact
	start := now.Add(-60 * 24 * time.Hour)
	for i, p := range paraphrases(30) {
		facts = append(facts, fact{text: p, at: start.Add(time.Duration(i) * 48 * time.Hour)})
	}
	facts = append(facts, fact{text: "Alice drinks green tea every afternoon", at: now.Add(-time.Hour)})
	e.persist("alice", facts...)
	w := e.worker(consolidate.Deps{}, consolidate.Config{BatchSize: 7})
	res := e.drain(w, "alice")
	if res.Facts != 31 || res.Created != 2 || res.Evidence != 31 {
		t.Fatalf("result = %+v", res)
	}
	obs := e.observations("alice")
	if len(obs) != 2 {
		t.Fatalf("observations = %+v", obs)
	}
	pref := obs[0]
	if pref.Text != paraphrases(1)[0] || pref.Evidence != 30 || pref.Proofs != 30 || pref.State != "valid" {
		t.Fatalf("preference observation = %+v", pref)
	}
	// Evidence spans 60 days, densest equally in both windows: 15 recent,
	// 15 in the 60 days before: ratio 2*15/15 = 2 → strengthening.
	if pref.Trend != consolidate.TrendStrengthening {
		t.Errorf("trend = %s", pref.Trend)
	}
	if obs[1].Evidence != 1 || obs[1].Trend != consolidate.TrendNew {
		t.Errorf("tea observation = %+v", obs[1])
	}
	// Evidence is verbatim.
	if n := e.count(`SELECT count(*) FROM observation_evidence ev JOIN memory_units f ON f.id = ev.memory_id
		WHERE ev.observation_id = $1 AND ev.quote = f.text AND ev.evidence_at = f.mentioned_at`, pref.ID); n != 30 {
		t.Errorf("verbatim evidence = %d", n)
	}
	if n := e.count(`SELECT count(*) FROM consolidation_queue WHERE bank_id = 'alice'`); n != 0 {
		t.Errorf("unconsolidated after drain: %d", n)
	}
	// A second drain has nothing to do.
	if res := e.drain(w, "alice"); res.Facts != 0 {
		t.Errorf("second drain = %+v", res)
	}
}

func TestCityChangeUpdatesWithHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	y2025 := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	e.persist("alice",
		fact{text: "Alice lives in Beijing", at: y2025},
		fact{text: "Alice still lives in Beijing with her cat", at: y2025.AddDate(0, 2, 0)},
		fact{text: "Alice moved to Shanghai", at: now.AddDate(0, 0, -10)},
		fact{text: "我住在北京", at: y2025},
		fact{text: "我搬到上海了", at: now.AddDate(0, 0, -5)},
	)
	w := e.worker(consolidate.Deps{}, consolidate.Config{})
	res := e.drain(w, "alice")
	if res.Created != 2 || res.Updated != 2 {
		t.Fatalf("result = %+v", res)
	}
	obs := valid(e.observations("alice"))
	if len(obs) != 2 {
		t.Fatalf("observations = %+v", obs)
	}
	texts := []string{obs[0].Text, obs[1].Text}
	slices.Sort(texts)
	if texts[0] != "Alice moved to Shanghai" || texts[1] != "我搬到上海了" {
		t.Fatalf("texts = %q", texts)
	}
	for _, o := range obs {
		var old, newText []string
		rows, err := e.db.Query(context.Background(), `SELECT action, COALESCE(old_text, ''), COALESCE(new_text, ''), reason
			FROM observation_history WHERE observation_id = $1 ORDER BY id`, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		var reasons []string
		for rows.Next() {
			var a, ot, nt, r string
			if err := rows.Scan(&a, &ot, &nt, &r); err != nil {
				t.Fatal(err)
			}
			actions, old, newText, reasons = append(actions, a), append(old, ot), append(newText, nt), append(reasons, r)
		}
		rows.Close()
		if fmt.Sprint(actions) != "[create update]" {
			t.Fatalf("%s history actions = %v", o.Text, actions)
		}
		if !strings.Contains(old[1], "Beijing") && !strings.Contains(old[1], "北京") {
			t.Errorf("history old text = %q", old[1])
		}
		if !strings.Contains(reasons[1], "knowledge update") {
			t.Errorf("update reason = %q", reasons[1])
		}
		// Both periods' evidence stays.
		var early, late int
		if err := e.db.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE evidence_at < '2026-01-01'),
			count(*) FILTER (WHERE evidence_at >= '2026-01-01') FROM observation_evidence WHERE observation_id = $1`, o.ID).Scan(&early, &late); err != nil {
			t.Fatal(err)
		}
		if early == 0 || late != 1 {
			t.Errorf("%s evidence early=%d late=%d", o.Text, early, late)
		}
	}
	// The English observation has both Beijing statements as evidence.
	en := obs[0]
	if !strings.HasPrefix(en.Text, "Alice") {
		en = obs[1]
	}
	if en.Evidence != 3 || en.Proofs != 3 {
		t.Errorf("english observation = %+v", en)
	}
}

func TestRetractionInvalidates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.persist("bob",
		fact{text: "Bob drinks coffee every morning", at: now.AddDate(0, -2, 0)},
		fact{text: "Bob drinks coffee every morning before work", at: now.AddDate(0, -1, -5)},
		fact{text: "Bob no longer drinks coffee", at: now.AddDate(0, 0, -1)},
	)
	w := e.worker(consolidate.Deps{}, consolidate.Config{})
	res := e.drain(w, "bob")
	if res.Invalidated != 1 {
		t.Fatalf("result = %+v", res)
	}
	obs := e.observations("bob")
	if len(obs) != 2 {
		t.Fatalf("observations = %+v", obs)
	}
	gone := obs[0]
	if gone.State != "invalidated" || !strings.Contains(gone.Reason, "retracted") || !strings.Contains(gone.Reason, "no longer drinks coffee") {
		t.Fatalf("retracted observation = %+v", gone)
	}
	// Nothing is deleted: the evidence stays, the history says why.
	if gone.Evidence != 2 {
		t.Errorf("evidence of the retracted observation = %d", gone.Evidence)
	}
	if n := e.count(`SELECT count(*) FROM observation_history WHERE observation_id = $1 AND action = 'invalidate' AND cardinality(memory_ids) = 1`, gone.ID); n != 1 {
		t.Errorf("invalidate history rows = %d", n)
	}
	if obs[1].State != "valid" || obs[1].Text != "Bob no longer drinks coffee" {
		t.Errorf("retraction observation = %+v", obs[1])
	}
}

func TestBanksAndTagScopesNeverMix(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	at := now.AddDate(0, 0, -3)
	text := "Prefers tea over coffee in the morning"
	e.persist("a", fact{text: text, at: at}, fact{text: text, at: at, tags: []string{"project:x"}},
		fact{text: text + " again", at: at, tags: []string{"project:x", "team:y"}})
	e.persist("b", fact{text: text, at: at})
	// Restatements in each scope fold into that scope's observation only.
	e.persist("a", fact{text: "Prefers tea over coffee in the morning, really", at: at, tags: []string{"project:x"}})
	e.persist("b", fact{text: "Prefers tea over coffee in the morning, truly", at: at})
	w := e.worker(consolidate.Deps{}, consolidate.Config{})
	e.drain(w, "a")
	e.drain(w, "b")
	a, b := e.observations("a"), e.observations("b")
	if len(a) != 3 || len(b) != 1 {
		t.Fatalf("observations a=%+v b=%+v", a, b)
	}
	byScope := map[string]obsRow{}
	for _, o := range a {
		byScope[fmt.Sprint(o.Tags)] = o
	}
	if byScope["[]"].Evidence != 1 || byScope["[project:x]"].Evidence != 2 || byScope["[project:x team:y]"].Evidence != 1 {
		t.Fatalf("scopes = %+v", byScope)
	}
	if b[0].Evidence != 2 {
		t.Fatalf("bank b = %+v", b)
	}
	// Every piece of evidence comes from the observation's bank and exact
	// tag set.
	if n := e.count(`SELECT count(*) FROM observation_evidence ev
		JOIN memory_units o ON o.id = ev.observation_id JOIN memory_units f ON f.id = ev.memory_id
		WHERE o.bank_id <> f.bank_id OR NOT (o.tags @> f.tags AND o.tags <@ f.tags)`); n != 0 {
		t.Fatalf("%d evidence rows cross a scope", n)
	}
}

// cancelling wraps an adjudicator and cancels the drain's context around
// its n-th call: before deciding (the previous apply committed, this one
// never starts) or after (the decision is made, its apply fails).
type cancelling struct {
	inner  consolidate.Adjudicator
	n      int
	after  bool
	cancel context.CancelFunc
	calls  atomic.Int32
}

func (c *cancelling) BatchSize() int { return c.inner.BatchSize() }

func (c *cancelling) Adjudicate(ctx context.Context, f []consolidate.FactCandidates) (consolidate.Decision, error) {
	k := int(c.calls.Add(1))
	if k == c.n && !c.after {
		c.cancel()
		return consolidate.Decision{}, ctx.Err()
	}
	d, err := c.inner.Adjudicate(ctx, f)
	if k == c.n {
		c.cancel()
	}
	return d, err
}

func TestCancelledWorkerRestartsWithoutDuplicates(t *testing.T) {
	t.Parallel()
	var facts []fact
	for i, p := range paraphrases(8) {
		facts = append(facts, fact{text: p, at: now.AddDate(0, 0, -20+i)})
	}
	facts = append(facts,
		fact{text: "Alice lives in Beijing", at: now.AddDate(0, -3, 0)},
		fact{text: "Alice moved to Shanghai", at: now.AddDate(0, 0, -2)},
		fact{text: "Alice drinks coffee every morning", at: now.AddDate(0, -1, 0)},
		fact{text: "Alice no longer drinks coffee", at: now.AddDate(0, 0, -1)},
	)
	// Reference: one uninterrupted drain.
	ref := newEnv(t)
	ref.persist("alice", facts...)
	want := ref.observations("alice")
	ref.drain(ref.worker(consolidate.Deps{}, consolidate.Config{}), "alice")
	want = ref.observations("alice")

	for _, tc := range []struct {
		name  string
		n     int
		after bool
	}{{"before deciding", 1, false}, {"between decide and apply", 3, true}, {"mid-batch", 9, true}, {"last fact", 12, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.persist("alice", facts...)
			off, err := consolidate.NewOffline(consolidate.OfflineConfig{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			adj := &cancelling{inner: off, n: tc.n, after: tc.after, cancel: cancel}
			w1 := e.worker(consolidate.Deps{Adjudicator: adj}, consolidate.Config{BatchSize: 5})
			if _, err := w1.DrainBank(ctx, "alice"); !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted drain: %v", err)
			}
			w2 := e.worker(consolidate.Deps{}, consolidate.Config{BatchSize: 5})
			e.drain(w2, "alice")
			got := e.observations("alice")
			if len(got) != len(want) {
				t.Fatalf("observations after restart = %+v\nwant %+v", got, want)
			}
			for i := range got {
				g, w := got[i], want[i]
				if g.ID != w.ID || g.Text != w.Text || g.State != w.State || g.Evidence != w.Evidence || g.Proofs != w.Proofs {
					t.Errorf("observation %d = %+v, want %+v", i, g, w)
				}
			}
			if n := e.count(`SELECT count(*) FROM observation_history`); n != ref.count(`SELECT count(*) FROM observation_history`) {
				t.Errorf("history rows = %d, reference %d", n, ref.count(`SELECT count(*) FROM observation_history`))
			}
			// Every fact is evidence at most once per observation, and the
			// proof counts add up to the evidence rows.
			if n := e.count(`SELECT count(*) FROM memory_units WHERE fact_type = 'observation' AND
				proof_count <> (SELECT count(*) FROM observation_evidence WHERE observation_id = memory_units.id)`); n != 0 {
				t.Errorf("%d observations with proof_count != evidence", n)
			}
		})
	}
}

func TestApplyTwiceIsANoOp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.persist("a", fact{text: "Carol collects stamps", at: now})
	vec, _ := e.emb.EmbedDocuments(context.Background(), []string{"Carol collects stamps"})
	obs := store.DeriveID("a", "observation", ids[0].String())
	apply := store.ConsolidationApply{BankID: "a", FactIDs: ids, Now: now,
		Trend: func(ev []time.Time) string { return consolidate.Trend(ev, now) },
		Edits: []store.ObsEdit{{Kind: store.EditCreate, ObservationID: obs, Text: "Carol collects stamps", Embedding: vec[0],
			Evidence: []store.ObsEvidence{{MemoryID: ids[0], Quote: "Carol collects stamps", Relevance: 1, At: now}}}}}
	out, err := e.st.ApplyConsolidation(context.Background(), apply)
	if err != nil || !out.Applied || out.Created != 1 || out.Evidence != 1 {
		t.Fatalf("first apply: %+v %v", out, err)
	}
	out, err = e.st.ApplyConsolidation(context.Background(), apply)
	if err != nil || out.Applied {
		t.Fatalf("second apply: %+v %v", out, err)
	}
	if n := e.count(`SELECT count(*) FROM observation_history`); n != 1 {
		t.Errorf("history rows = %d", n)
	}
}

// After a knowledge update the past stays answerable: the observation says
// Shanghai, and recall anchored a year after the Beijing statements finds
// them for "last year".
func TestOldCityStaysRecallable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.persist("alice",
		fact{text: "Alice lives in Beijing", at: time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)},
		fact{text: "Alice still lives in Beijing with her cat", at: time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)},
		fact{text: "Alice moved to Shanghai", at: time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)},
	)
	e.drain(e.worker(consolidate.Deps{}, consolidate.Config{}), "alice")
	rec, err := recall.New(recall.Deps{Store: e.st, Embedder: e.emb}, recall.Config{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rec.Recall(context.Background(), recall.Request{BankID: "alice", Query: "Where did Alice live last year?",
		QueryTime: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	var top []string
	for i, r := range resp.Results {
		if i < 3 {
			top = append(top, r.Text)
		}
	}
	if len(top) == 0 || !strings.Contains(strings.Join(top, "|"), "Beijing") {
		t.Fatalf("top results for last year = %q", top)
	}
	if !strings.Contains(top[0], "Beijing") {
		t.Fatalf("Beijing evidence is not first for last year: %q", top)
	}
	// The updated observation holds from the move on; the Beijing
	// evidence stays attached.
	var start time.Time
	var ev int
	if err := e.db.QueryRow(context.Background(), `SELECT occurred_start,
		(SELECT count(*) FROM observation_evidence WHERE observation_id = m.id)
		FROM memory_units m WHERE bank_id = 'alice' AND fact_type = 'observation' AND state = 'valid'`).Scan(&start, &ev); err != nil {
		t.Fatal(err)
	}
	if !start.Equal(time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)) || ev != 3 {
		t.Fatalf("observation occurred_start %s, evidence %d", start, ev)
	}
}

// TestBackfillGetsRealTrends replays a year-old history: trends are read
// on the bank's event clock (its latest event), so the topics that were
// new, growing and fading at the time are labelled so, not all STALE as
// the wall clock would have them.
func TestBackfillGetsRealTrends(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	latest := now.AddDate(-1, 0, 0)
	day := func(n int) time.Time { return latest.Add(-time.Duration(n) * 24 * time.Hour) }
	var facts []fact
	add := func(text string, days ...int) {
		for _, d := range days {
			facts = append(facts, fact{text: text, at: day(d)})
		}
	}
	add("Bob plays chess at the club on Sundays", 9, 0)
	add("Bob bakes sourdough bread with rye flour", 80, 25, 18, 12, 6, 1)
	add("Bob swims laps in the lake before work", 85, 78, 70, 61, 52, 40, 2)
	e.persist("bob", facts...)
	w := e.worker(consolidate.Deps{}, consolidate.Config{})
	e.drain(w, "bob")
	got := map[string]string{}
	for _, o := range valid(e.observations("bob")) {
		got[o.Text] = o.Trend
	}
	want := map[string]string{
		"Bob plays chess at the club on Sundays":   consolidate.TrendNew,
		"Bob bakes sourdough bread with rye flour": consolidate.TrendStrengthening,
		"Bob swims laps in the lake before work":   consolidate.TrendWeakening,
	}
	for text, trend := range want {
		if got[text] != trend {
			t.Errorf("%q: trend %q, want %q (all observations: %v)", text, got[text], trend, got)
		}
	}
	if clk, err := e.st.BankClock(context.Background(), "bob"); err != nil || !clk.Equal(latest) {
		t.Errorf("bank clock %v (%v), want the latest event %v", clk, err, latest)
	}
}
