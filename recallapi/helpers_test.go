package recallapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/reflect"
	"github.com/memstream/memstream/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testDim = 64

// Test keys. Each env configures them unless opts.noAuth.
const (
	adminKey   = "admin-secret-key-0001"
	readerBKey = "reader-for-bank-b-0002"
	writerBKey = "writer-for-bank-b-0003"
	// hashedKey is configured only by its SHA-256.
	hashedKey = "hashed-key-for-bank-b-0004"
)

// fakePublisher records what retain produces. With persist set, it writes
// each event to the store after delay, as the ingest pipeline would.
type fakePublisher struct {
	mu      sync.Mutex
	events  []event.Event
	st      *store.Store
	persist bool
	delay   time.Duration
	wg      sync.WaitGroup
	// gate, when set, applies the default policy to each persisted
	// event's content as the pipeline does, with its audit rows.
	gate *defense.Gate
	// failNext fails the next Publish, as a broker outage.
	failNext atomic.Bool
}

func (p *fakePublisher) Publish(_ context.Context, evs []event.Event) ([]event.Position, error) {
	if p.failNext.CompareAndSwap(true, false) {
		return nil, errors.New("fake: the broker is down")
	}
	p.mu.Lock()
	pos := make([]event.Position, len(evs))
	for i := range evs {
		pos[i] = event.Position{Topic: "fake", Offset: int64(len(p.events) + i)}
	}
	p.events = append(p.events, evs...)
	p.mu.Unlock()
	if !p.persist {
		return pos, nil
	}
	recs := make([]store.EventRecord, len(evs))
	for i, e := range evs {
		text := e.Content
		var audit []store.AuditRow
		if p.gate != nil {
			res, found, err := p.gate.Check(e.EventID, text, defense.DefaultPolicy())
			if err != nil {
				return nil, err
			}
			text = res.Text
			for _, a := range found {
				audit = append(audit, store.AuditRow{Label: a.Label, Action: string(a.Action), Fingerprint: a.Fingerprint})
			}
		}
		recs[i] = store.EventRecord{BankID: e.BankID, EventKey: e.EventID, DocumentID: e.DocumentID, Tags: e.Tags, Audit: audit,
			ReplaceDocument: e.UpdateMode == "replace",
			Chunks:          []store.ChunkRow{{ID: store.DeriveID(e.BankID, e.EventID, "c0"), Text: text, StartedAt: time.Now()}}}
		if recs[i].DocumentID == "" {
			recs[i].DocumentID = e.EventID
		}
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		time.Sleep(p.delay)
		if _, err := p.st.PersistBatch(context.Background(), recs); err != nil {
			panic(err)
		}
	}()
	return pos, nil
}

func (p *fakePublisher) published() []event.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]event.Event(nil), p.events...)
}

// fakeReflector records the request it was given.
type fakeReflector struct {
	mu  sync.Mutex
	got []reflect.Request
}

func (f *fakeReflector) Reflect(_ context.Context, req reflect.Request) (reflect.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, req)
	return reflect.Response{Text: "Alice lives in Lisbon.", BasedOn: reflect.BasedOn{Memories: []string{"m1"}, Observations: []string{}, MentalModels: []string{}},
		Trace: reflect.Trace{Iterations: 1, ToolCalls: []reflect.ToolCall{}, LLMCalls: []reflect.LLMCall{}}}, nil
}

// fakeRefresher rewrites the model's content the way a real refresh
// writes it: directly, without going through the API's cache.
type fakeRefresher struct {
	st    *store.Store
	calls int
}

func (f *fakeRefresher) DryRefresh(ctx context.Context, bankID, id string) (string, []string, error) {
	return "would refresh", nil, nil
}

func (f *fakeRefresher) Refresh(ctx context.Context, bankID, id string) error {
	f.calls++
	_, err := pgtest.DB(f.st).Exec(ctx, `UPDATE mental_models SET content = 'refreshed ' || source_query, last_refreshed_at = now()
		WHERE bank_id = $1 AND id = $2`, bankID, id)
	return err
}

type envOpts struct {
	noAuth     bool
	maxBody    int64
	retainWait time.Duration
	persist    bool
	delay      time.Duration
	reflector  Reflector
	refresher  MentalModelRefresher
	listener   bool
	st         *store.Store // share a store (replica tests)
	// strictWebhooks applies the webhook address policy (tests' sinks
	// listen on loopback, which it refuses); resolver resolves for it.
	strictWebhooks bool
	resolver       Resolver
	checkLLM       LLMChecker
	// auditOff is http.audit_log_enabled: false.
	auditOff bool
}

type env struct {
	t   testing.TB
	st  *store.Store
	srv *Server
	pub *fakePublisher
	reg *prometheus.Registry
	h   http.Handler
}

func openStore(t testing.TB) *store.Store {
	t.Helper()
	url, _ := pgtest.Schema(t)
	return openStoreAt(t, url)
}

// openStoreAt opens and migrates a store on a schema URL the test keeps
// (for pgtest.Pool).
func openStoreAt(t testing.TB, url string) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Deps{Logger: slog.New(slog.DiscardHandler)}, store.Config{URL: url, Dim: testDim, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	pgtest.Attach(t, st, url)
	return st
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	st := o.st
	if st == nil {
		st = openStore(t)
	}
	emb, err := embed.NewHash(testDim)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := recall.New(recall.Deps{Store: st, Embedder: emb, Logger: slog.New(slog.DiscardHandler)}, recall.Config{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	gate, err := defense.NewGate(defense.GateDeps{Registerer: reg, Logger: slog.New(slog.DiscardHandler)}, defense.GateConfig{FingerprintSalt: []byte("test-salt-0123456789")})
	if err != nil {
		t.Fatal(err)
	}
	pub := &fakePublisher{st: st, persist: o.persist, delay: o.delay, gate: gate}
	t.Cleanup(pub.wg.Wait)
	cfg := Config{MaxBodyBytes: o.maxBody, RetainWait: o.retainWait, BasePolicy: defense.DefaultPolicy(), AllowPrivateWebhooks: !o.strictWebhooks,
		AuditLogOff: o.auditOff}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 64 << 10
	}
	if cfg.RetainWait == 0 {
		cfg.RetainWait = 5 * time.Second
	}
	if !o.noAuth {
		cfg.Auth = config.Auth{Keys: []config.Key{
			{Name: "admin", Key: adminKey, Banks: []string{"*"}, Scopes: []string{"admin"}},
			{Name: "reader-b", Key: readerBKey, Banks: []string{"bank-b"}, Scopes: []string{"read"}},
			{Name: "writer-b", Key: writerBKey, Banks: []string{"bank-b"}, Scopes: []string{"write"}},
			{Name: "hashed-b", SHA256: sha(hashedKey), Banks: []string{"bank-b"}, Scopes: []string{"read"}},
		}}
	}
	d := Deps{Store: st, Recaller: rc, Publisher: pub, Gate: gate, Gatherer: reg, Registerer: reg, Embedder: emb,
		Logger: slog.New(slog.DiscardHandler), Reflector: o.reflector, Refresher: o.refresher, Resolver: o.resolver, CheckLLM: o.checkLLM}
	if o.listener {
		d.Listener = st
	}
	srv, err := New(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, st: st, srv: srv, pub: pub, reg: reg, h: srv.Handler()}
}

// resp is a decoded answer.
type resp struct {
	status int
	raw    []byte
	body   map[string]any
	header http.Header
}

func (r resp) errField() string {
	e, _ := r.body["error"].(map[string]any)
	f, _ := e["field"].(string)
	return f
}

func (r resp) errCode() string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (r resp) errMessage() string {
	e, _ := r.body["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// call sends a request with the admin key (unless key says otherwise;
// "-" sends none) and a JSON content type when there is a body.
func (e *env) call(method, path, body, key string) resp {
	e.t.Helper()
	return e.callCT(method, path, body, key, "application/json")
}

func (e *env) callCT(method, path, body, key, ct string) resp {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewBufferString(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != "" && ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	switch key {
	case "":
		req.Header.Set("Authorization", "Bearer "+adminKey)
	case "-":
	default:
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return e.do(req)
}

// do sends a prepared request to the handler and decodes the answer.
func (e *env) do(req *http.Request) resp {
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	out := resp{status: w.Code, raw: w.Body.Bytes(), header: w.Header()}
	if ct := w.Header().Get("Content-Type"); ct == "application/json" {
		_ = json.Unmarshal(out.raw, &out.body)
	}
	return out
}

func (r resp) raw2() string { return string(r.raw) }

// seed persists a small bank through store.PersistBatch (the pipeline's
// write path) plus one observation with evidence as consolidation writes
// it.
type seeded struct {
	f1, f2, f3, obs uuid.UUID
	alice, bob      uuid.UUID
}

func seed(t testing.TB, st *store.Store, bank string) seeded {
	t.Helper()
	ctx := context.Background()
	emb, err := embed.NewHash(testDim)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"Alice moved to Lisbon in March", "Alice likes green tea", "Bob fixed ticket INC-48213"}
	vecs, err := emb.EmbedDocuments(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	s := seeded{f1: store.DeriveID(bank, "f1"), f2: store.DeriveID(bank, "f2"), f3: store.DeriveID(bank, "f3"),
		obs: store.DeriveID(bank, "obs"), alice: store.DeriveID(bank, "alice"), bob: store.DeriveID(bank, "bob")}
	evs := []store.EventRecord{
		{BankID: bank, EventKey: "e1", DocumentID: "doc-1",
			Chunks:   []store.ChunkRow{{ID: store.DeriveID(bank, "c1"), Text: texts[0] + ". " + texts[1], StartedAt: at}},
			Entities: []store.EntityRow{{ID: s.alice, Name: "Alice", Kind: "person", Seen: at, Mentions: 2, Aliases: []store.AliasRow{{Key: "alice", Alias: "Alice"}}}},
			Facts: []store.FactRow{
				{ID: s.f1, FactType: "world", Text: texts[0], Embedding: vecs[0], MentionedAt: at, IdemKey: "f1", EntityIDs: []uuid.UUID{s.alice}},
				{ID: s.f2, FactType: "experience", Text: texts[1], Embedding: vecs[1], MentionedAt: at.Add(time.Hour), IdemKey: "f2", EntityIDs: []uuid.UUID{s.alice}},
			}},
		{BankID: bank, EventKey: "e2", DocumentID: "doc-2",
			Chunks:   []store.ChunkRow{{ID: store.DeriveID(bank, "c2"), Text: texts[2], StartedAt: at}},
			Entities: []store.EntityRow{{ID: s.bob, Name: "Bob", Kind: "person", Seen: at, Mentions: 1, Aliases: []store.AliasRow{{Key: "bob", Alias: "Bob"}}}},
			Facts: []store.FactRow{
				{ID: s.f3, FactType: "world", Text: texts[2], Embedding: vecs[2], MentionedAt: at.Add(72 * time.Hour), IdemKey: "f3", EntityIDs: []uuid.UUID{s.bob}},
			}},
	}
	if _, err := st.PersistBatch(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if _, err := pgtest.DB(st).Exec(ctx, `INSERT INTO memory_units (id, bank_id, fact_type, text, mentioned_at, idempotency_key, proof_count, trend)
		VALUES ($1, $2, 'observation', 'Alice settled in Lisbon', $3, $4, 2, 'strengthening')`, s.obs, bank, at, s.obs.String()); err != nil {
		t.Fatal(err)
	}
	for _, m := range []uuid.UUID{s.f1, s.f2} {
		if _, err := pgtest.DB(st).Exec(ctx, `INSERT INTO observation_evidence (observation_id, memory_id, quote, relevance, evidence_at)
			VALUES ($1, $2, $3, 0.9, $4)`, s.obs, m, "quote "+m.String(), at); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pgtest.DB(st).Exec(ctx, `INSERT INTO observation_history (observation_id, action, new_text, memory_ids)
		VALUES ($1, 'create', 'Alice settled in Lisbon', $2)`, s.obs, []uuid.UUID{s.f1, s.f2}); err != nil {
		t.Fatal(err)
	}
	return s
}
