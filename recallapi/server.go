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
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/pipeline"
	"github.com/memstream/memstream/recall"
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
}

// Recaller answers recall requests.
type Recaller interface {
	Recall(ctx context.Context, req recall.Request) (recall.Response, error)
}

// Publisher produces events to Kafka and returns once they are acknowledged.
type Publisher interface {
	Publish(ctx context.Context, events []pipeline.Event) error
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
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 10 << 20
	}
	if cfg.RetainWait <= 0 {
		cfg.RetainWait = 30 * time.Second
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
			ak.scopes[sc] = true
		}
		s.keys = append(s.keys, ak)
	}
	s.reqs = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "memstream_api_request_seconds", Help: "HTTP request latency by route and status class.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
	}, []string{"route", "code"})
	if d.Registerer != nil {
		d.Registerer.MustRegister(s.reqs)
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
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: 200}
		if err := s.authorize(r, scope); err != nil {
			s.writeError(rec, r, err)
		} else if err := h(rec, r); err != nil {
			s.writeError(rec, r, err)
		}
		s.reqs.WithLabelValues(route, fmt.Sprintf("%dxx", rec.status/100)).Observe(time.Since(start).Seconds())
	})
}

func (s *Server) authorize(r *http.Request, scope string) error {
	if scope == "" || len(s.keys) == 0 {
		return nil
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return &apiError{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "missing bearer token"}
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
		return &apiError{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "unknown bearer token"}
	}
	// The same 403 whether or not the bank exists: a key for bank B
	// learns nothing about bank A.
	forbidden := &apiError{Status: http.StatusForbidden, Code: "forbidden", Message: "this key may not " + scope + " this bank"}
	if bank := r.PathValue("bank_id"); bank != "" && !key.all && !key.banks[bank] {
		return forbidden
	}
	if r.PathValue("bank_id") == "" && scope != "read" && !key.all {
		return forbidden
	}
	if !key.allows(scope) {
		return forbidden
	}
	return nil
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) { r.status = code; r.ResponseWriter.WriteHeader(code) }

// Serve listens on cfg.Addr until ctx ends, then shuts down gracefully:
// readiness fails first so load balancers stop sending.
func (s *Server) Serve(ctx context.Context, ready chan<- string) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("http listen %s: %w", s.cfg.Addr, err)
	}
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
	return []route{
		{"GET", "/health", "health", "", "Liveness.", s.health, ""},
		{"GET", "/health/ready", "ready", "", "Readiness: database and Kafka reachable, not draining.", s.ready, ""},
		{"GET", "/openapi.json", "openapi", "", "This OpenAPI 3 description.", s.openapi, ""},
		{"GET", "/v1/default/banks", "banks_list", "read", "List banks.", s.listBanks, ""},
		{"GET", b, "bank_get", "read", "Get a bank profile.", s.getBank, ""},
		{"PUT", b, "bank_put", "admin", "Create or replace a bank profile.", s.putBank, "Bank"},
		{"PATCH", b, "bank_patch", "admin", "Change fields of a bank profile (disposition, defense policy, consolidation pause/resume).", s.patchBank, "Bank"},
		{"DELETE", b, "bank_delete", "admin", "Delete a bank and everything in it.", s.deleteBank, ""},
		{"POST", b + "/memories", "retain", "write", "Retain: produce items to Kafka; with async:false wait until persisted.", s.retain, "RetainRequest"},
		{"POST", b + "/memories/recall", "recall", "read", "Recall: four retrievers, fusion, rerank, token budget.", s.recall, "RecallRequest"},
		{"GET", b + "/stats", "stats", "read", "Bank counters.", s.stats, ""},
	}
}

func (s *Server) routes() {
	for _, rt := range s.table() {
		s.handle(rt.method+" "+rt.path, rt.name, rt.scope, rt.h)
	}
	if s.d.Gatherer != nil {
		s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.d.Gatherer, promhttp.HandlerOpts{}))
	}
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
	if !pipeline.BankIDPattern.MatchString(id) {
		return "", badRequest("bank_id", "bank_id must match "+pipeline.BankIDPattern.String())
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
