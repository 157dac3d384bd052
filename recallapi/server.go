package recallapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/reflect"
	"github.com/memstream/memstream/store"
)

// Store is what the API reads and writes directly.
type Store interface {
	Ping(ctx context.Context) error
	GetBank(ctx context.Context, id string) (store.Bank, error)
	ListBanks(ctx context.Context) ([]store.Bank, error)
	PutBank(ctx context.Context, b store.Bank) (store.Bank, error)
	DeleteBank(ctx context.Context, id string) error
	BankStats(ctx context.Context, bankID string) (store.Stats, error)
	EventsPersisted(ctx context.Context, bankID string, keys []string) (int, error)
	BankPolicy(ctx context.Context, id string) (json.RawMessage, error)

	ListMemories(ctx context.Context, bankID string, f store.MemoryFilter) ([]store.Memory, int, error)
	GetMemory(ctx context.Context, bankID string, id uuid.UUID) (store.Memory, error)
	InvalidateMemory(ctx context.Context, bankID string, id uuid.UUID, reason string) (store.Memory, error)
	GetObservation(ctx context.Context, bankID string, id uuid.UUID) (store.Observation, error)

	ListEntities(ctx context.Context, bankID, q string, limit, offset int) ([]store.Entity, int, error)
	GetEntity(ctx context.Context, bankID string, id uuid.UUID) (store.EntityDetail, error)
	MergeEntity(ctx context.Context, bankID string, src, into uuid.UUID) (store.Entity, error)
	AddEntityAlias(ctx context.Context, bankID string, id uuid.UUID, alias string, keys []string) (store.Entity, error)

	ListMentalModels(ctx context.Context, bankID string) ([]store.MentalModel, error)
	GetMentalModel(ctx context.Context, bankID string, id uuid.UUID) (store.MentalModel, error)
	CreateMentalModel(ctx context.Context, m store.MentalModel) (store.MentalModel, error)
	UpdateMentalModel(ctx context.Context, bankID string, id uuid.UUID, p store.MentalModelPatch) (store.MentalModel, error)
	DeleteMentalModel(ctx context.Context, bankID string, id uuid.UUID) error
	NotifyMentalModel(ctx context.Context, bankID string, id uuid.UUID) error
	NotifyBankMentalModels(ctx context.Context, bankID string) error

	ListDocuments(ctx context.Context, bankID string, limit, offset int) ([]store.Document, int, error)
	DeleteDocument(ctx context.Context, bankID, docID string) (store.DocumentDeletion, error)

	inspectStore
}

// Reflector answers reflect requests (package reflect's agent loop).
type Reflector interface {
	Reflect(ctx context.Context, req reflect.Request) (reflect.Response, error)
}

// MentalModelRefresher regenerates a mental model's content from its
// source question and stores it.
type MentalModelRefresher interface {
	Refresh(ctx context.Context, bankID, id string) error
}

// ChangeListener delivers mental-model changes made by any replica, so the
// cache here never serves a copy older than the last committed write.
// *store.Store implements it with Postgres LISTEN/NOTIFY.
type ChangeListener interface {
	ListenMentalModels(ctx context.Context, ready func(), onChange func(bankID, id string)) error
}

// Recaller answers recall requests.
type Recaller interface {
	Recall(ctx context.Context, req recall.Request) (recall.Response, error)
}

// Publisher produces events to Kafka and returns once they are acknowledged.
type Publisher interface {
	Publish(ctx context.Context, events []event.Event) error
}

// Gate is the defense check retain applies before producing.
type Gate interface {
	Check(eventID, text string, p defense.Policy) (defense.Result, []defense.AuditRecord, error)
}

// Readiness reports whether a dependency is usable.
type Readiness func(ctx context.Context) error

// Config configures the server.
type Config struct {
	Addr         string
	MaxBodyBytes int64
	RetainWait   time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	Auth         config.Auth
	BasePolicy   defense.Policy
	// MentalModelCacheSize bounds the mental-model LRU (entries; default
	// 4096).
	MentalModelCacheSize int
	// RequestTimeout bounds each request's work, so a slow query is
	// cancelled instead of outliving its client (default 30 s; retain
	// gets RetainWait on top).
	RequestTimeout time.Duration
}

// Deps are the server's collaborators.
type Deps struct {
	Store      Store
	Recaller   Recaller
	Publisher  Publisher
	Gate       Gate
	Ready      map[string]Readiness // name → check, e.g. "database", "kafka"
	Gatherer   prometheus.Gatherer
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// OnPolicyChange is told when a bank's defense policy is edited.
	OnPolicyChange func(bankID string)
	// Reflector serves POST …/reflect; without it reflect answers 503.
	Reflector Reflector
	// Refresher serves POST …/mental-models/{id}/refresh; without it
	// refresh answers 503.
	Refresher MentalModelRefresher
	// Listener, when set, is started by Start (or Serve) so that writes on
	// other replicas evict this replica's cached mental models.
	Listener ChangeListener
	// Console, when set, serves the web console under /console/. It is
	// public like /health: the page holds no data, and every call it makes
	// goes through the routes below with the user's key.
	Console http.Handler
	// DeadLetters reads and replays dead letters for the console's routes;
	// without it they show metadata only and replay answers 503.
	DeadLetters DeadLetterArchive
	// Redact masks secrets in dead-letter values before they are shown.
	Redact func(string) string
}

// Server is the HTTP API.
type Server struct {
	cfg      Config
	d        Deps
	log      *slog.Logger
	keys     []apiKey
	mux      *http.ServeMux
	srv      *http.Server
	draining atomic.Bool
	reqs     *prometheus.HistogramVec
	models   *modelCache
	// metricsHandler serves /metrics when Deps.Gatherer is set.
	metricsHandler http.Handler
	// patterns are the mux patterns registered by handle, for the OpenAPI
	// drift test.
	patterns []string

	startOnce sync.Once
	stop      context.CancelFunc
	wg        sync.WaitGroup
}

type apiKey struct {
	name   string
	hash   [32]byte
	banks  map[string]bool
	all    bool
	scopes map[string]bool
}

// New builds the server; Serve starts it.
func New(cfg Config, d Deps) (*Server, error) {
	if d.Store == nil || d.Recaller == nil || d.Publisher == nil || d.Gate == nil {
		return nil, errors.New("recallapi: Deps.Store, Recaller, Publisher and Gate are required")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 10 << 20
	}
	if cfg.RetainWait <= 0 {
		cfg.RetainWait = 30 * time.Second
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if !cfg.Auth.Disabled && len(cfg.Auth.Keys) == 0 && cfg.Addr != "" && !config.IsLoopback(cfg.Addr) {
		return nil, fmt.Errorf("config http.addr: %s is not loopback and no auth.keys are configured", cfg.Addr)
	}
	s := &Server{cfg: cfg, d: d, log: d.Logger, mux: http.NewServeMux()}
	for _, k := range cfg.Auth.Keys {
		ak := apiKey{name: k.Name, banks: map[string]bool{}, scopes: map[string]bool{}}
		if k.Key != "" {
			ak.hash = sha256.Sum256([]byte(k.Key)) // keep only the hash in memory
		} else {
			raw, err := hex.DecodeString(k.SHA256)
			if err != nil || len(raw) != 32 {
				return nil, fmt.Errorf("config auth.keys sha256 of %q is not 64 hex digits", k.Name)
			}
			copy(ak.hash[:], raw)
		}
		for _, b := range k.Banks {
			if b == "*" {
				ak.all = true
			}
			ak.banks[b] = true
		}
		for _, sc := range k.Scopes {
			if sc != "read" && sc != "write" && sc != "admin" {
				return nil, fmt.Errorf("config auth.keys scopes of %q: unknown scope %q (read, write, admin)", k.Name, sc)
			}
			ak.scopes[sc] = true
		}
		if len(ak.scopes) == 0 || len(ak.banks) == 0 {
			return nil, fmt.Errorf("config auth.keys of %q: a key needs at least one bank (or *) and one scope", k.Name)
		}
		s.keys = append(s.keys, ak)
	}
	// Only the hashes are kept: drop the configured key text.
	s.cfg.Auth = config.Auth{Disabled: cfg.Auth.Disabled}
	s.reqs = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "memstream_api_request_seconds", Help: "HTTP request latency by route and status class.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
	}, []string{"route", "code"})
	if d.Registerer != nil {
		d.Registerer.MustRegister(s.reqs)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.MentalModelCacheSize <= 0 {
		cfg.MentalModelCacheSize = 4096
		s.cfg.MentalModelCacheSize = 4096
	}
	var err error
	if s.models, err = newModelCache(cfg.MentalModelCacheSize, d.Registerer); err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

// Handler exposes the routes (tests use httptest with it).
func (s *Server) Handler() http.Handler { return s.mux }

type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// scope levels: admin implies write implies read.
func (k apiKey) allows(scope string) bool {
	switch scope {
	case "read":
		return k.scopes["read"] || k.scopes["write"] || k.scopes["admin"]
	case "write":
		return k.scopes["write"] || k.scopes["admin"]
	}
	return k.scopes[scope]
}

// handle registers a route with metrics, auth and error handling. scope is
// "" for public routes.
func (s *Server) handle(pattern, route, scope string, h handlerFunc) {
	s.patterns = append(s.patterns, pattern)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: 200}
		defer func() {
			// A bug in one handler answers 500 in the API's error shape
			// instead of dropping the connection.
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("handler panicked", slog.String("route", route), slog.Any("panic", p))
				if !rec.wrote {
					s.writeError(rec, r, fmt.Errorf("panic in %s: %v", route, p))
				}
				s.reqs.WithLabelValues(route, "5xx").Observe(time.Since(start).Seconds())
			}
		}()
		timeout := s.cfg.RequestTimeout
		if route == "retain" {
			timeout += s.cfg.RetainWait
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		r = r.WithContext(ctx)
		if key, err := s.authorize(r, scope); err != nil {
			s.writeError(rec, r, err)
		} else {
			if key != nil {
				r = r.WithContext(context.WithValue(r.Context(), keyCtx{}, key))
			}
			if err := h(rec, r); err != nil {
				s.writeError(rec, r, err)
			}
		}
		s.reqs.WithLabelValues(route, fmt.Sprintf("%dxx", rec.status/100)).Observe(time.Since(start).Seconds())
	})
}

// keyCtx carries the caller's key to handlers that must filter by it.
type keyCtx struct{}

// callerKey is the authenticated key, or nil when auth is off.
func callerKey(r *http.Request) *apiKey {
	k, _ := r.Context().Value(keyCtx{}).(*apiKey)
	return k
}

// authorize checks the bearer key against the route's scope and bank. It
// returns the key (nil when no keys are configured or the route is
// public).
func (s *Server) authorize(r *http.Request, scope string) (*apiKey, error) {
	if scope == "" || len(s.keys) == 0 {
		return nil, nil
	}
	// The scheme name is case-insensitive (RFC 9110 §11.1).
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return nil, &apiError{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "missing bearer token"}
	}
	h := sha256.Sum256([]byte(tok))
	var key *apiKey
	for i := range s.keys {
		// Compare every key in constant time so timing reveals nothing.
		if subtle.ConstantTimeCompare(h[:], s.keys[i].hash[:]) == 1 {
			key = &s.keys[i]
		}
	}
	if key == nil {
		return nil, &apiError{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "unknown bearer token"}
	}
	// The same 403 whether or not the bank exists: a key for bank B
	// learns nothing about bank A.
	forbidden := &apiError{Status: http.StatusForbidden, Code: "forbidden", Message: "this key may not " + scope + " this bank"}
	if bank := r.PathValue("bank_id"); bank != "" && !key.all && !key.banks[bank] {
		return nil, forbidden
	}
	if r.PathValue("bank_id") == "" && scope != "read" && !key.all {
		return nil, forbidden
	}
	if !key.allows(scope) {
		return nil, forbidden
	}
	return key, nil
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status, r.wrote = code, true
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// Serve listens on cfg.Addr until ctx ends, then shuts down gracefully:
// readiness fails first so load balancers stop sending.
func (s *Server) Serve(ctx context.Context, ready chan<- string) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("http listen %s: %w", s.cfg.Addr, err)
	}
	s.Start(ctx)
	defer s.Close()
	s.srv = &http.Server{Handler: s.mux, ReadTimeout: s.cfg.ReadTimeout, WriteTimeout: s.cfg.WriteTimeout, ReadHeaderTimeout: 10 * time.Second}
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.draining.Store(true)
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Start starts the background work of the server: the mental-model change
// listener, when Deps.Listener is set. Serve calls it; tests that use
// Handler call it themselves. It is safe to call more than once.
func (s *Server) Start(ctx context.Context) {
	s.startOnce.Do(func() {
		if s.d.Listener == nil {
			return
		}
		ctx, s.stop = context.WithCancel(ctx)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.listen(ctx)
		}()
	})
}

// Close stops what Start started and waits for it.
func (s *Server) Close() {
	if s.stop != nil {
		s.stop()
	}
	s.wg.Wait()
}

// listen keeps a LISTEN connection up until ctx ends. Each (re)connect
// purges the cache, because changes made while no connection listened
// were never announced to this replica.
func (s *Server) listen(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for {
		err := s.d.Listener.ListenMentalModels(ctx, func() {
			s.models.purge()
			backoff = 100 * time.Millisecond
		}, func(bankID, id string) {
			if id == "*" {
				s.models.invalidateBank(bankID, "notify")
				return
			}
			s.models.invalidate(bankID, id, "notify")
		})
		if ctx.Err() != nil {
			return
		}
		// While disconnected, nothing would evict stale copies: stop
		// serving from the cache until the listener is back.
		s.models.disable()
		s.log.Warn("mental model change listener lost; retrying", slog.Any("error", err), slog.Duration("backoff", backoff))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

// SetDraining makes readiness fail, ahead of shutdown.
func (s *Server) SetDraining() { s.draining.Store(true) }

// route is one API route. The table drives both the mux and
// /openapi.json, so the description cannot drift from the handlers.
type route struct {
	method, path, name, scope, summary string
	h                                  handlerFunc
	body                               string // request schema name, if any
}

func (s *Server) table() []route {
	const b = "/v1/default/banks/{bank_id}"
	return append([]route{
		{"GET", "/health", "health", "", "Liveness.", s.health, ""},
		{"GET", "/health/ready", "ready", "", "Readiness: the dependencies of this replica's roles reachable (database; brokers for ingest), not draining.", s.ready, ""},
		{"GET", "/openapi.json", "openapi", "", "This OpenAPI 3 description.", s.openapi, ""},
		{"GET", "/metrics", "metrics", "", "Prometheus metrics.", s.metrics, ""},
		{"GET", "/v1/default/banks", "banks_list", "read", "List banks.", s.listBanks, ""},
		{"GET", b, "bank_get", "read", "Get a bank profile.", s.getBank, ""},
		{"PUT", b, "bank_put", "admin", "Create or replace a bank profile.", s.putBank, "Bank"},
		{"PATCH", b, "bank_patch", "admin", "Change fields of a bank profile (disposition, defense policy, consolidation pause/resume).", s.patchBank, "Bank"},
		{"DELETE", b, "bank_delete", "admin", "Delete a bank and everything in it.", s.deleteBank, ""},
		{"POST", b + "/memories", "retain", "write", "Retain: produce items to Kafka; with async:false wait until persisted.", s.retain, "RetainRequest"},
		{"POST", b + "/memories/recall", "recall", "read", "Recall: four retrievers, fusion, rerank, token budget.", s.recall, "RecallRequest"},
		{"GET", b + "/memories/list", "memories_list", "read", "List memories (query: type, q, state, limit, offset).", s.listMemories, ""},
		{"GET", b + "/memories/{memory_id}", "memory_get", "read", "Get one memory.", s.getMemory, ""},
		{"DELETE", b + "/memories/{memory_id}", "memory_invalidate", "write", "Invalidate one memory (query: reason); the row stays, recall skips it.", s.invalidateMemory, ""},
		{"POST", b + "/reflect", "reflect", "read", "Reflect: an agent loop over memories, observations and mental models.", s.reflectQuery, "ReflectRequest"},
		{"GET", b + "/observations", "observations_list", "read", "List observations with proof_count and trend (query: q, state, limit, offset).", s.listObservations, ""},
		{"GET", b + "/observations/{observation_id}", "observation_get", "read", "Get one observation with its evidence, proof_count, trend and history.", s.getObservation, ""},
		{"GET", b + "/entities", "entities_list", "read", "List entities (query: q, limit, offset).", s.listEntities, ""},
		{"GET", b + "/entities/{entity_id}", "entity_get", "read", "Get one entity with its aliases and recent facts.", s.getEntity, ""},
		{"POST", b + "/entities/{entity_id}/merge", "entity_merge", "write", "Merge this entity into another.", s.mergeEntity, "EntityMergeRequest"},
		{"POST", b + "/entities/{entity_id}/aliases", "entity_alias", "write", "Add an alias to an entity.", s.addEntityAlias, "EntityAliasRequest"},
		{"GET", b + "/mental-models", "mental_models_list", "read", "List mental models.", s.listMentalModels, ""},
		{"POST", b + "/mental-models", "mental_model_create", "write", "Create a mental model.", s.createMentalModel, "MentalModelCreate"},
		{"GET", b + "/mental-models/{mental_model_id}", "mental_model_get", "read", "Get a mental model (served from the LRU cache).", s.getMentalModel, ""},
		{"PATCH", b + "/mental-models/{mental_model_id}", "mental_model_patch", "write", "Change fields of a mental model.", s.patchMentalModel, "MentalModelPatch"},
		{"DELETE", b + "/mental-models/{mental_model_id}", "mental_model_delete", "write", "Delete a mental model.", s.deleteMentalModel, ""},
		{"POST", b + "/mental-models/{mental_model_id}/refresh", "mental_model_refresh", "write", "Regenerate a mental model from its source query.", s.refreshMentalModel, ""},
		{"GET", b + "/documents", "documents_list", "read", "List documents (query: limit, offset).", s.listDocuments, ""},
		{"DELETE", b + "/documents/{document_id}", "document_delete", "write", "Delete a document and everything derived from it.", s.deleteDocument, ""},
		{"GET", b + "/stats", "stats", "read", "Bank counters.", s.stats, ""},
	}, s.inspectRoutes()...)
}

func (s *Server) routes() {
	for _, rt := range s.table() {
		s.handle(rt.method+" "+rt.path, rt.name, rt.scope, rt.h)
	}
	if s.d.Console != nil {
		s.mux.Handle("GET /console/", s.d.Console)
		s.mux.Handle("GET /console", http.RedirectHandler("/console/", http.StatusMovedPermanently))
	}
	if s.d.Gatherer != nil {
		s.metricsHandler = promhttp.HandlerFor(s.d.Gatherer, promhttp.HandlerOpts{})
	}
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) error {
	if s.metricsHandler == nil {
		return &apiError{Status: http.StatusNotFound, Code: "not_found", Message: "metrics are not enabled on this server"}
	}
	s.metricsHandler.ServeHTTP(w, r)
	return nil
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) error {
	checks := map[string]string{}
	ok := !s.draining.Load()
	if !ok {
		checks["server"] = "draining"
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	for name, check := range s.d.Ready {
		if err := check(ctx); err != nil {
			checks[name] = err.Error()
			ok = false
		} else {
			checks[name] = "ok"
		}
	}
	status := http.StatusOK
	if !ok {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, map[string]any{"ready": ok, "checks": checks})
	return nil
}

func (s *Server) bankID(r *http.Request) (string, error) {
	id := r.PathValue("bank_id")
	if !event.BankIDPattern.MatchString(id) {
		return "", badRequest("bank_id", "bank_id must match "+event.BankIDPattern.String())
	}
	return id, nil
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) error {
	id, err := s.bankID(r)
	if err != nil {
		return err
	}
	st, err := s.d.Store.BankStats(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}
