package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/memstream/memstream/broker"
	"github.com/memstream/memstream/consumer"
	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/extract"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/pipeline"
	"github.com/memstream/memstream/store"
)

// options override parts of the harness's pipeline for one test.
type options struct {
	extractor  pipeline.Extractor
	embedder   pipeline.Embedder
	persister  pipeline.Persister
	resolver   pipeline.EntityResolver
	deadLetter pipeline.DeadLetterWriter
	maxRetries int
	batchSize  int
	// config adjusts the pipeline's configuration.
	config func(*pipeline.Config)
	// consumer adjusts the consumer's configuration.
	consumer func(*consumer.Config)
	reg      prometheus.Registerer
}

// startWith is harness.start with overrides.
func (h *harness) startWith(group string, o options) *running {
	h.t.Helper()
	p := h.newPipeline(o)
	ccfg := consumer.Config{Brokers: h.brokers, Topics: []string{topic}, Group: group,
		CommitInterval: 100 * time.Millisecond, ShutdownTimeout: 10 * time.Second}
	if o.consumer != nil {
		o.consumer(&ccfg)
	}
	cons, err := consumer.New(consumer.Deps{Sink: p, Logger: h.log}, ccfg)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{pipe: p, cons: cons, cancel: cancel, done: make(chan error, 1), pdone: make(chan error, 1)}
	go func() { r.pdone <- p.Run(ctx) }()
	go func() { r.done <- cons.Run(ctx) }()
	return r
}

// newPipeline builds (but does not run) the harness's pipeline.
func (h *harness) newPipeline(o options) *pipeline.Pipeline {
	h.t.Helper()
	var emb pipeline.Embedder = o.embedder
	if emb == nil {
		emb, _ = embed.NewHash(64)
	}
	gate, err := defense.NewGate(defense.GateDeps{Registerer: prometheus.NewRegistry(), Logger: h.log}, defense.GateConfig{FingerprintSalt: []byte("0123456789abcdef-test")})
	if err != nil {
		h.t.Fatal(err)
	}
	var res pipeline.EntityResolver = o.resolver
	if res == nil {
		sr, err := pipeline.NewStoreResolver(pipeline.StoreResolverDeps{Source: h.st})
		if err != nil {
			h.t.Fatal(err)
		}
		res = sr
	}
	var dl pipeline.DeadLetterWriter = o.deadLetter
	if dl == nil {
		bdl, err := broker.NewDeadLetters(broker.DeadLetterDeps{Client: h.prod}, broker.DeadLetterConfig{Topic: dlq})
		if err != nil {
			h.t.Fatal(err)
		}
		dl = bdl
	}
	if o.extractor == nil {
		o.extractor = offlineExtractor(h.t)
	}
	if o.persister == nil {
		o.persister = h.st
	}
	if o.batchSize == 0 {
		o.batchSize = 64
	}
	pcfg := pipeline.Config{Lanes: 3, BatchSize: o.batchSize, BatchWait: 20 * time.Millisecond, MaxEventBytes: 1 << 20, MaxRetries: o.maxRetries}
	if o.config != nil {
		o.config(&pcfg)
	}
	policies, err := pipeline.NewCachedPolicies(pipeline.PolicyDeps{Loader: h.st}, pipeline.PolicyConfig{Base: defense.DefaultPolicy(), TTL: time.Second})
	if err != nil {
		h.t.Fatal(err)
	}
	p, err := pipeline.New(pipeline.Deps{
		Gate: gate, Policies: policies,
		Extractor: o.extractor, Embedder: emb, Resolver: res, Store: o.persister,
		DeadLetter: dl, Logger: h.log, Registerer: o.reg,
	}, pcfg)
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// newHarnessApp is newHarness with the store's connections tagged with a
// unique application_name, so a test can kill exactly its own backends on
// the shared test server and nobody else's.
func newHarnessApp(t *testing.T) (h *harness, app, plainURL string) {
	t.Helper()
	dbURL, schema := pgtest.Schema(t)
	plainURL = dbURL
	app = "memstream-test-" + schema
	if len(app) > 63 {
		app = app[:63]
	}
	if u, err := url.Parse(dbURL); err == nil && u.Scheme != "" {
		q := u.Query()
		q.Set("application_name", app)
		u.RawQuery = q.Encode()
		dbURL = u.String()
	} else {
		dbURL += " application_name=" + app
	}
	return newHarnessURL(t, dbURL), app, plainURL
}

// produceKeyed produces records with explicit keys.
func (h *harness) produceKeyed(keys []string, vals [][]byte) {
	h.t.Helper()
	recs := make([]*kgo.Record, len(vals))
	for i, v := range vals {
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(keys[i]), Value: v}
	}
	if err := h.prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		h.t.Fatal(err)
	}
}

func chatEvent(bank, eventID, doc string, at time.Time, msgs ...string) []byte {
	var ms []map[string]string
	for i, m := range msgs {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		ms = append(ms, map[string]string{"role": role, "name": "Alice", "content": m, "timestamp": at.Add(time.Duration(i) * time.Second).Format(time.RFC3339)})
	}
	b, _ := json.Marshal(map[string]any{"bank_id": bank, "event_id": eventID, "document_id": doc, "messages": ms})
	return b
}

// orderRecorder wraps the store and records the order in which events are
// persisted, one global sequence across lanes.
type orderRecorder struct {
	pipeline.Persister
	mu    sync.Mutex
	order []string // event keys in commit order
}

func (o *orderRecorder) PersistBatch(ctx context.Context, evs []store.EventRecord) (store.PersistResult, error) {
	// Records of one key share a lane, whose persists run one after the
	// other, so appending after the commit keeps each key's commit order.
	res, err := o.Persister.PersistBatch(ctx, evs)
	if err == nil {
		o.mu.Lock()
		for _, ev := range evs {
			o.order = append(o.order, ev.EventKey)
		}
		o.mu.Unlock()
	}
	return res, err
}

func TestOrderPerKeyPreserved(t *testing.T) {
	h := newHarness(t)
	const keys, perKey = 8, 60
	var ks []string
	var vals [][]byte
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	// Interleave the keys as a busy topic does.
	for seq := 0; seq < perKey; seq++ {
		for k := 0; k < keys; k++ {
			key := fmt.Sprintf("ord/conv-%02d", k)
			ks = append(ks, key)
			vals = append(vals, chatEvent("ord", fmt.Sprintf("k%02d-s%04d", k, seq), fmt.Sprintf("conv-%02d", k), t0.Add(time.Duration(seq)*time.Minute),
				fmt.Sprintf("Step %d of plan %d: I will call Bruno about the Lisbon office.", seq, k), "Sounds good, I noted it."))
		}
	}
	h.produceKeyed(ks, vals)
	rec := &orderRecorder{Persister: h.st}
	// Small batches: many transactions per lane, so misordering would show.
	r := h.startWith("g-order", options{persister: rec, batchSize: 8})
	h.waitCommitted("g-order", len(vals), 4*time.Minute)
	r.stop(t)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.order) != len(vals) {
		t.Fatalf("persisted %d events, want %d", len(rec.order), len(vals))
	}
	last := map[string]int{}
	for i, key := range rec.order {
		var k, seq int
		if _, err := fmt.Sscanf(key, "k%02d-s%04d", &k, &seq); err != nil {
			t.Fatalf("event key %q: %v", key, err)
		}
		prev, ok := last[fmt.Sprint(k)]
		if ok && seq != prev+1 {
			t.Fatalf("key %d: event s%04d persisted after s%04d (position %d)", k, seq, prev, i)
		}
		if !ok && seq != 0 {
			t.Fatalf("key %d: first persisted event is s%04d", k, seq)
		}
		last[fmt.Sprint(k)] = seq
	}
	// The database agrees: per conversation, ingested_at never goes back
	// as the sequence goes up.
	if bad := h.count(`SELECT count(*) FROM (
		SELECT ingested_at < lag(ingested_at) OVER (PARTITION BY document_id ORDER BY event_key) AS back
		FROM events WHERE bank_id = 'ord') s WHERE back`); bad != 0 {
		t.Fatalf("%d events have an earlier ingested_at than their predecessor", bad)
	}
}

func TestAliasResolutionAcrossEvents(t *testing.T) {
	h := newHarness(t)
	r := h.start("g-alias")
	defer r.stop(t)
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	// Three events, each persisted before the next is produced, so the
	// later names must resolve against the database, not the batch.
	texts := []string{
		"我昨天和张伟在杭州吃了午饭。",
		"Zhang Wei said he will move to Shenzhen next month.",
		"老张今天开会又迟到了。",
	}
	for i, text := range texts {
		h.produceKeyed([]string{"zw/chat"}, [][]byte{chatEvent("zw", fmt.Sprintf("zw-%d", i), "chat", t0.Add(time.Duration(i)*time.Hour), text)})
		h.waitEvents(i+1, time.Minute)
	}
	if n := h.count(`SELECT count(*) FROM events WHERE bank_id = 'zw'`); n != 3 {
		t.Fatalf("events = %d, want 3", n)
	}
	// Every fact naming one of the three forms links to the same entity.
	rows, err := pgtest.DB(h.st).Query(context.Background(), `
		SELECT DISTINCT mu.text, e.id::text, e.canonical_name
		FROM memory_units mu
		JOIN unit_entities ue ON ue.unit_id = mu.id
		JOIN entities e ON e.id = ue.entity_id
		WHERE mu.bank_id = 'zw' AND e.kind = 'person'
		  AND e.canonical_name <> 'Alice' -- the speaker, named on every fact`)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	covered := map[string]bool{}
	for rows.Next() {
		var text, id, name string
		if err := rows.Scan(&text, &id, &name); err != nil {
			t.Fatal(err)
		}
		for _, form := range []string{"张伟", "Zhang Wei", "老张"} {
			if strings.Contains(text, form) {
				covered[form] = true
				ids[id] = name
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(covered) != 3 {
		t.Fatalf("facts linked to a person for %v, want all of 张伟, Zhang Wei, 老张", covered)
	}
	if len(ids) != 1 {
		t.Fatalf("the three forms resolved to %d entities %v, want one", len(ids), ids)
	}
	var id string
	for k := range ids {
		id = k
	}
	var aliases []string
	if err := pgtest.DB(h.st).QueryRow(context.Background(),
		`SELECT array_agg(DISTINCT alias ORDER BY alias) FROM entity_aliases WHERE entity_id = $1::uuid`, id).Scan(&aliases); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"张伟", "Zhang Wei", "老张"} {
		found := false
		for _, a := range aliases {
			found = found || a == want
		}
		if !found {
			t.Errorf("entity %s (%s) aliases %v lack %q", id, ids[id], aliases, want)
		}
	}
}

// assertFlightsOnce checks that bank's n flight facts are stored once each.
func (h *harness) assertFlightsOnce(bank string, n int) {
	h.t.Helper()
	if got := h.count(`SELECT count(*) FROM events WHERE bank_id = $1`, bank); got != n {
		h.t.Fatalf("events = %d, want %d", got, n)
	}
	if got := h.count(`SELECT count(DISTINCT substring(text from 'QX[0-9]{5}')) FROM memory_units WHERE bank_id = $1 AND text ~ 'QX[0-9]{5}'`, bank); got != n {
		h.t.Fatalf("distinct flight facts = %d, want %d", got, n)
	}
	if dup := h.count(`SELECT count(*) FROM (SELECT substring(text from 'QX[0-9]{5}') f FROM memory_units WHERE bank_id = $1 AND text ~ 'QX[0-9]{5}' GROUP BY 1 HAVING count(*) > 1) d`, bank); dup != 0 {
		h.t.Fatalf("%d flight facts stored twice", dup)
	}
}

func TestPostgresConnectionLossResumes(t *testing.T) {
	h, app, plainURL := newHarnessApp(t)
	const n = 1200
	var vals [][]byte
	for i := 0; i < n; i++ {
		vals = append(vals, flightEvent("dave", i))
	}
	h.produce(vals...)

	// The killer uses its own connection, outside the pool it kills.
	ctx := context.Background()
	// Observe and kill over fresh connections outside the pool being
	// killed; the shared server may have other tests terminating backends.
	observe := func(q string, args ...any) (int, error) {
		c, err := pgx.Connect(ctx, plainURL)
		if err != nil {
			return 0, err
		}
		defer c.Close(ctx)
		var k int
		err = c.QueryRow(ctx, q, args...).Scan(&k)
		return k, err
	}
	kill := func() (int, error) {
		return observe(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE application_name = $1 AND pid <> pg_backend_pid()`, app)
	}
	r := h.startWith("g-pgloss", options{batchSize: 32})
	kills, killed := 0, 0
	deadline := time.Now().Add(2 * time.Minute)
	for kills < 5 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		done, err := observe(`SELECT count(*) FROM events`)
		if err != nil {
			continue
		}
		if done >= n {
			break
		}
		if done > kills*n/8 { // spread the kills over the stream
			k, err := kill()
			if err != nil {
				t.Logf("kill round failed (retrying): %v", err)
				continue
			}
			kills++
			killed += k
		}
	}
	if kills < 3 || killed == 0 {
		t.Fatalf("only %d kills (%d backends) happened mid-stream; the test proves nothing", kills, killed)
	}
	t.Logf("terminated %d backends in %d rounds mid-stream", killed, kills)
	h.waitCommitted("g-pgloss", n, 4*time.Minute)
	r.stop(t)
	h.assertFlightsOnce("dave", n)
	if dl := h.count(`SELECT count(*) FROM dead_letters`); dl != 0 {
		t.Fatalf("%d records dead-lettered by a connection loss", dl)
	}
}

func TestDroppedFetchesLoseNothing(t *testing.T) {
	h := newHarness(t)
	const waves, perWave = 6, 100
	const n = waves * perWave
	var fetches, dropped atomic.Int32
	h.cluster.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		h.cluster.KeepControl()
		if fetches.Add(1)%2 == 0 {
			dropped.Add(1)
			return nil, errors.New("injected fetch failure"), true
		}
		return nil, nil, false
	})
	r := h.start("g-fetchdrop")
	// Waves while the consumer runs, so many fetches (and drops) happen.
	for w := 0; w < waves; w++ {
		var vals [][]byte
		for i := w * perWave; i < (w+1)*perWave; i++ {
			vals = append(vals, flightEvent("erin", i))
		}
		h.produce(vals...)
		time.Sleep(300 * time.Millisecond)
	}
	h.waitCommitted("g-fetchdrop", n, 4*time.Minute)
	r.stop(t)
	if dropped.Load() < 3 {
		t.Fatalf("only %d fetches dropped; the test proves little", dropped.Load())
	}
	t.Logf("dropped %d of %d fetches", dropped.Load(), fetches.Load())
	h.assertFlightsOnce("erin", n)
}

// failingExtractor fails every call whose inputs contain poison (none
// when poison is empty), and counts the calls that carried it and the
// inputs it saw.
type failingExtractor struct {
	inner  pipeline.Extractor
	poison string
	calls  atomic.Int32
	seen   atomic.Int64
}

func (f *failingExtractor) Extract(ctx context.Context, in []extract.Input) ([][]extract.Fact, error) {
	f.seen.Add(int64(len(in)))
	for _, input := range in {
		if f.poison == "" {
			break
		}
		for _, p := range input.Parts {
			if strings.Contains(p.Text, f.poison) {
				f.calls.Add(1)
				return nil, errors.New("model crashed on this input")
			}
		}
	}
	return f.inner.Extract(ctx, in)
}

func TestFailingExtractorDeadLettersOnlyItsRecord(t *testing.T) {
	h := newHarness(t)
	const n = 200
	var vals [][]byte
	for i := 0; i < n; i++ {
		vals = append(vals, flightEvent("fred", i))
	}
	poisonIdx := []int{17, 133}
	for _, i := range poisonIdx {
		vals[i] = chatEvent("fred", fmt.Sprintf("fred-poison-%d", i), "conv-poison", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
			"This message makes the extractor POISON-PILL fail every time.")
	}
	fx := &failingExtractor{inner: offlineExtractor(t), poison: "POISON-PILL"}
	h.produce(vals...)
	r := h.startWith("g-extractfail", options{extractor: fx, maxRetries: 2})
	h.waitCommitted("g-extractfail", n, 2*time.Minute)
	r.stop(t)

	// Each poison record was tried more than once before giving up.
	if c := fx.calls.Load(); c < int32(3*len(poisonIdx)) {
		t.Errorf("failing extract calls = %d, want retries (≥ %d)", c, 3*len(poisonIdx))
	}
	good := n - len(poisonIdx)
	if got := h.count(`SELECT count(*) FROM events WHERE bank_id = 'fred'`); got != good {
		t.Fatalf("events = %d, want %d: batch-mates of the poison were lost", got, good)
	}
	if got := h.count(`SELECT count(*) FROM dead_letters WHERE error_class = $1`, event.ClassExtractFailed); got != len(poisonIdx) {
		t.Fatalf("dead letters of class %s = %d, want %d", event.ClassExtractFailed, got, len(poisonIdx))
	}
	// The DLQ holds the poison records with the class header.
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.brokers...), kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seen := 0
	for seen < len(poisonIdx) && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
			if !strings.Contains(string(rec.Value), "POISON-PILL") {
				t.Errorf("unexpected DLQ record %.80q", rec.Value)
			}
			for _, hd := range rec.Headers {
				if hd.Key == broker.HeaderErrorClass && string(hd.Value) != event.ClassExtractFailed {
					t.Errorf("DLQ class %q, want %q", hd.Value, event.ClassExtractFailed)
				}
			}
			seen++
		})
	}
	if seen != len(poisonIdx) {
		t.Fatalf("DLQ has %d of %d poison records", seen, len(poisonIdx))
	}
}

// offlineExtractor is the offline extractor the tests run with.
func offlineExtractor(t testing.TB) *extract.Offline {
	t.Helper()
	o, err := extract.NewOffline(extract.OfflineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return o
}
