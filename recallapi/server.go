package recallapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
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
	"github.com/memstream/memstream/internal/lifetime"
	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/reflect"
	"github.com/memstream/memstream/store"
)

// Store is what the API reads and writes directly (*store.Store).
type Store interface {
	ActiveDirectives(ctx context.Context, bankID string) ([]store.Directive, error)
	AddAudit(ctx context.Context, a store.AuditEntry) error
	AddBankAlias(ctx context.Context, bankID, alias string, primary bool) error
	AddEntityAlias(ctx context.Context, bankID string, id uuid.UUID, alias string, keys []string) (store.Entity, error)
	AllBankAliases(ctx context.Context) (map[string]string, error)
	AuditStats(ctx context.Context, bankID, action, trunc string, since time.Time) ([]store.AuditBucket, error)
	BankActivity(ctx context.Context, bankID string, since, until time.Time, buckets int) (store.Activity, error)
	BankConfig(ctx context.Context, bankID string) (map[string]any, error)
	BankHindsightStats(ctx context.Context, bankID string) (store.HindsightStats, error)
	BankPolicy(ctx context.Context, id string) (json.RawMessage, error)
	BankStats(ctx context.Context, bankID string) (store.Stats, error)
	CancelOperation(ctx context.Context, bankID string, id uuid.UUID) error
	ClaimOperation(ctx context.Context, kinds []string, owner string, lease time.Duration) (store.Operation, bool, error)
	ClaimDeadLetters(ctx context.Context, bankID, class string, pos []store.DeadLetterPos) ([]store.DeadLetter, error)
	ClaimDeliveries(ctx context.Context, limit int) ([]store.WebhookDelivery, error)
	ClearMemories(ctx context.Context, bankID, factType string) (int, error)
	ClearMemoryObservations(ctx context.Context, bankID string, id uuid.UUID) (int, error)
	ClearObservations(ctx context.Context, bankID string) (int, error)
	ConsolidationLeft(ctx context.Context, bankID string, before time.Time) (int, error)
	CreateDirective(ctx context.Context, d store.Directive) (store.Directive, error)
	CreateKnowledgeNode(ctx context.Context, n store.KnowledgeNode) (store.KnowledgeNode, error)
	CreateMentalModel(ctx context.Context, m store.MentalModel) (store.MentalModel, error)
	CreateOperation(ctx context.Context, o store.Operation) (out store.Operation, existing bool, err error)
	CreateWebhook(ctx context.Context, w store.Webhook) (store.Webhook, error)
	DeleteBank(ctx context.Context, id string) error
	DeleteBankAlias(ctx context.Context, bankID, alias string) error
	DeleteDirective(ctx context.Context, bankID string, id uuid.UUID) error
	DeleteDocument(ctx context.Context, bankID, docID string) (store.DocumentDeletion, error)
	DeleteKnowledgeNode(ctx context.Context, bankID string, id uuid.UUID) ([]uuid.UUID, error)
	DeleteMentalModel(ctx context.Context, bankID string, id uuid.UUID) error
	DeleteOperation(ctx context.Context, bankID string, id uuid.UUID) error
	DeleteWebhook(ctx context.Context, bankID string, id uuid.UUID) error
	DeliveryFailed(ctx context.Context, d store.WebhookDelivery, status *int, body, errMsg string, maxAttempts int, retryIn time.Duration) (bool, error)
	DeliverySucceeded(ctx context.Context, d store.WebhookDelivery, status int, body string) (bool, error)
	DueOperations(ctx context.Context, kinds []string, limit int) ([]store.Operation, error)
	DocumentFiles(ctx context.Context, bankID, docID string) ([]store.StoredFile, error)
	DocumentHistory(ctx context.Context, bankID, docID string) ([]store.DocumentEvent, error)
	EditMemory(ctx context.Context, bankID string, id uuid.UUID, e store.MemoryEdit) (store.Memory, error)
	EnqueueConsolidation(ctx context.Context, bankIDs ...string) error
	ReleaseHeldConsolidation(ctx context.Context, bankID string) error
	EnsureBank(ctx context.Context, id string) error
	EntityCooccurrence(ctx context.Context, bankID string, ids []uuid.UUID, min int) ([]store.EntityEdge, error)
	EntityNeighbourhood(ctx context.Context, bankID string, id uuid.UUID, limit int) (store.EntityGraph, error)
	EntityObservations(ctx context.Context, bankID string, ids []uuid.UUID, perEntity int) (map[uuid.UUID][]store.EntityObservation, error)
	EventsPersisted(ctx context.Context, bankID string, keys []string) (int, error)
	FactScopes(ctx context.Context, bankID string) ([]store.TagScope, error)
	FinishClaimedOperation(ctx context.Context, id uuid.UUID, owner, status, errMsg string, result []byte) (bool, error)
	FinishOperation(ctx context.Context, id uuid.UUID, status, errMsg string, result json.RawMessage) (bool, error)
	FinishOperationAnnounced(ctx context.Context, id uuid.UUID, status, errMsg string, result json.RawMessage, ev store.WebhookEvent) (bool, error)
	GetAudit(ctx context.Context, bankID string, id uuid.UUID) (store.AuditEntry, error)
	GetBank(ctx context.Context, id string) (store.Bank, error)
	GetChunk(ctx context.Context, id uuid.UUID) (store.Chunk, error)
	GetDeadLetter(ctx context.Context, bankID string, p store.DeadLetterPos) (store.DeadLetter, error)
	GetDirective(ctx context.Context, bankID string, id uuid.UUID) (store.Directive, error)
	GetDocument(ctx context.Context, bankID, docID string) (store.DocumentDetail, error)
	GetEntity(ctx context.Context, bankID string, id uuid.UUID) (store.EntityDetail, error)
	GetFile(ctx context.Context, key string) (store.StoredFile, error)
	GetKnowledgeNode(ctx context.Context, bankID string, id uuid.UUID) (store.KnowledgeNode, error)
	GetMemories(ctx context.Context, bankID string, ids []uuid.UUID) ([]store.Memory, error)
	GetMemory(ctx context.Context, bankID string, id uuid.UUID) (store.Memory, error)
	GetMentalModel(ctx context.Context, bankID string, id uuid.UUID) (store.MentalModel, error)
	GetObservation(ctx context.Context, bankID string, id uuid.UUID) (store.Observation, error)
	GetOperation(ctx context.Context, bankID string, id uuid.UUID) (store.Operation, error)
	GetWebhook(ctx context.Context, bankID string, id uuid.UUID) (store.Webhook, error)
	HeartbeatOperation(ctx context.Context, id uuid.UUID, owner string, lease time.Duration) (bool, error)
	InvalidateMemory(ctx context.Context, bankID string, id uuid.UUID, reason string) (store.Memory, error)
	LinksAmong(ctx context.Context, bankID string, ids []uuid.UUID) ([]store.Link, error)
	ListAudit(ctx context.Context, bankID, action, transport string, start, end *time.Time, limit, offset int) ([]store.AuditEntry, int, error)
	ListLLMRequests(ctx context.Context, bankID string, f store.LLMRequestFilter) ([]store.LLMRequest, int, error)
	LLMRequestStats(ctx context.Context, bankID, operation, callType, trunc string, since time.Time) ([]store.LLMRequestBucket, error)
	ListBankAliases(ctx context.Context, bankID string) ([]store.BankAlias, error)
	ListBankSummaries(ctx context.Context, ids []string, all bool, q string, limit, offset int) ([]store.BankSummary, int, error)
	ListChunks(ctx context.Context, bankID, docID string, limit, offset int) ([]store.Chunk, int, error)
	ListDeadLetters(ctx context.Context, bankID, class string, limit, offset int) ([]store.DeadLetter, int, []store.DeadLetterClass, error)
	ListDeliveries(ctx context.Context, bankID string, webhookID uuid.UUID, before *time.Time, limit int) ([]store.WebhookDelivery, error)
	ListDirectives(ctx context.Context, bankID string, activeOnly bool, limit, offset int) ([]store.Directive, int, error)
	ListDocuments(ctx context.Context, bankID, q string, tags []string, tagsMatch string, limit, offset int) ([]store.Document, int, error)
	ListEntities(ctx context.Context, bankID, q string, limit, offset int) ([]store.Entity, int, error)
	ListKnowledgeNodes(ctx context.Context, bankID string) ([]store.KnowledgeNode, error)
	ListMemories(ctx context.Context, bankID string, f store.MemoryFilter) ([]store.Memory, int, error)
	ListMentalModels(ctx context.Context, bankID string) ([]store.MentalModel, error)
	ListOperations(ctx context.Context, bankID, status, kind string, limit, offset int) ([]store.Operation, int, error)
	ListTags(ctx context.Context, bankID, pattern string, limit, offset int) ([]store.TagCount, int, error)
	ListWebhooks(ctx context.Context, bankID string, limit, offset int) ([]store.Webhook, int, error)
	LookupMemories(ctx context.Context, bankID string, ids []uuid.UUID) ([]store.MemoryBrief, error)
	MemoriesTimeseries(ctx context.Context, bankID, field, trunc string, since time.Time) ([]store.TimeBucket, error)
	MemoryChunks(ctx context.Context, bankID string, ids []uuid.UUID) (map[uuid.UUID]store.MemoryChunk, error)
	MemoryHistory(ctx context.Context, bankID string, id uuid.UUID) ([]store.HistoryEntry, error)
	MemoryProvenance(ctx context.Context, bankID string, id uuid.UUID) (store.Provenance, error)
	MentalModelHistory(ctx context.Context, bankID string, id uuid.UUID) ([]store.MentalModelVersion, error)
	MergeEntity(ctx context.Context, bankID string, src, into uuid.UUID) (store.Entity, error)
	NextDeliveryDue(ctx context.Context) (time.Time, bool, error)
	NextOperationDue(ctx context.Context) (time.Time, bool, error)
	MoveKnowledgeNode(ctx context.Context, bankID string, id uuid.UUID, name *string, move bool, parent *uuid.UUID) (store.KnowledgeNode, error)
	NotifyBankMentalModels(ctx context.Context, bankID string) error
	NotifyMentalModel(ctx context.Context, bankID string, id uuid.UUID) error
	ObservationScopes(ctx context.Context, bankID string, limit, offset int) ([]store.TagScope, int, error)
	ObservationSources(ctx context.Context, bankID string, ids []uuid.UUID) (map[uuid.UUID][]uuid.UUID, error)
	OperationItemStates(ctx context.Context, id uuid.UUID) ([]store.ItemState, error)
	PutBank(ctx context.Context, b store.Bank) (store.Bank, error)
	PutFile(ctx context.Context, f store.StoredFile) (store.StoredFile, error)
	QueueWebhookEvent(ctx context.Context, ev store.WebhookEvent) error
	ReclaimOperations(ctx context.Context, maxRuns int) ([]store.Operation, error)
	ReleaseClaimedOperation(ctx context.Context, id uuid.UUID, owner string) error
	ReleaseRetain(ctx context.Context, id uuid.UUID, owner string) error
	HeartbeatRetain(ctx context.Context, id uuid.UUID, owner string, lease time.Duration) (bool, error)
	TakeOverRetain(ctx context.Context, bankID string, id uuid.UUID, owner string, lease time.Duration) (store.Operation, error)
	ResetBankConfig(ctx context.Context, bankID string) error
	RetryOperation(ctx context.Context, bankID string, id uuid.UUID) (store.Operation, error)
	SetBankAliasPrimary(ctx context.Context, bankID, alias string, primary bool) error
	SetBankConfig(ctx context.Context, bankID string, overrides map[string]any) (map[string]any, error)
	SetDocumentTags(ctx context.Context, bankID, docID string, tags []string) error
	SetOperationItems(ctx context.Context, id uuid.UUID, items []store.OperationItem) error
	SetOperationResponse(ctx context.Context, id uuid.UUID, response json.RawMessage) error
	UnclaimDeadLetter(ctx context.Context, bankID string, p store.DeadLetterPos) error
	UpdateDirective(ctx context.Context, bankID string, id uuid.UUID, p store.DirectivePatch) (store.Directive, error)
	UpdateMentalModel(ctx context.Context, bankID string, id uuid.UUID, p store.MentalModelPatch) (store.MentalModel, error)
	UpdateWebhook(ctx context.Context, bankID string, id uuid.UUID, p store.WebhookPatch) (store.Webhook, error)

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
	// DryRefresh returns what Refresh would write, and the ids of the
	// observations it rests on, writing nothing.
	DryRefresh(ctx context.Context, bankID, id string) (string, []string, error)
}

// ChangeListener delivers notifications from every replica: mental-model
// changes (so the cache here never serves a copy older than the last
// committed write) and new operations and webhook deliveries (so idle
// runners wake at once instead of polling). *store.Store implements it
// with Postgres LISTEN/NOTIFY (store.Listen).
type ChangeListener interface {
	Listen(ctx context.Context, channels []string, ready func(), on func(channel, payload string)) error
}

// Recaller answers recall requests.
type Recaller interface {
	Recall(ctx context.Context, req recall.Request) (recall.Response, error)
}

// Publisher produces events to Kafka and returns once they are
// acknowledged, with the position each landed at.
type Publisher interface {
	Publish(ctx context.Context, events []event.Event) ([]event.Position, error)
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
	// MaxEventBytes is kafka.max_event_bytes: a retained item larger than
	// this as an event is refused, since the pipeline would dead-letter it.
	MaxEventBytes int
	ReadTimeout   time.Duration
	WriteTimeout  time.Duration
	Auth          config.Auth
	BasePolicy    defense.Policy
	// MentalModelCacheSize bounds the mental-model LRU (entries; default
	// 4096).
	MentalModelCacheSize int
	// Version is memstream's version, reported by /health/live and
	// /version.
	Version string
	// RequestTimeout bounds each request's work, so a slow query is
	// cancelled instead of outliving its client (default 30 s; retain
	// gets RetainWait on top).
	RequestTimeout time.Duration
	// OperationLease is how long a replica holds an operation it runs
	// (refresh, export, import, clone) without renewing it; the lease is
	// renewed every third of it, and one that runs out (the replica died)
	// lets another replica take the operation back (http.operation_lease,
	// default 30 s).
	OperationLease time.Duration
	// AllowPrivateWebhooks lets webhooks target loopback, private and
	// link-local addresses (webhooks.allow_private; default false).
	AllowPrivateWebhooks bool
	// AuditLogOff turns the API audit log off for banks whose
	// configuration does not set audit_log_enabled
	// (http.audit_log_enabled: false, Hindsight's default); the zero value
	// audits them, as memstream always has.
	AuditLogOff bool
	// LLMTrace and Worker are reported by /version's features: whether
	// LLM requests are recorded (llm.trace_max_per_bank > 0) and whether
	// this process consolidates.
	LLMTrace, Worker bool
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
	// CheckLLM, when set, tells whether the configured LLM answers
	// (…/health/llm); without it the offline providers are reported.
	CheckLLM LLMChecker
	// Embedder embeds a memory's new text when it is edited; without it a
	// text edit answers 503.
	Embedder TextEmbedder
	// Extractor extracts facts for …/memories/dry-run-extract.
	Extractor DryRunExtractor
	// Resolver resolves webhook hosts for the address policy; nil is the
	// system resolver.
	Resolver Resolver
}

// TextEmbedder embeds document texts (package embed).
type TextEmbedder interface {
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
}

// Server is the HTTP API.
type Server struct {
	cfg      Config
	d        Deps
	log      *slog.Logger
	keys     []apiKey
	mux      *http.ServeMux
	ln       net.Listener // bound by Listen (or Run)
	life     lifetime.Stopper
	draining atomic.Bool
	reqs     *prometheus.HistogramVec
	// passes counts the operation runner's and webhook sender's looks at
	// the store: flat while the API is idle.
	passes *prometheus.CounterVec
	models *modelCache
	// metricsHandler serves /metrics when Deps.Gatherer is set.
	metricsHandler http.Handler
	// patterns are the mux patterns registered by handle, for the OpenAPI
	// drift test.
	patterns []string

	// runners carry out the operation kinds the API owns (refreshes,
	// transfers), by kind.
	runners     map[string]func(ctx context.Context, o store.Operation) (json.RawMessage, error)
	runnerKinds []string
	// owner names this replica's operation leases.
	owner   string
	running atomic.Int32
	wake    chan struct{}
	// hookWake wakes the webhook sender.
	hookWake chan struct{}
	// idlePoll is how long the runner and the sender sleep with nothing
	// due: long with a listener (NOTIFY wakes them), short without.
	idlePoll time.Duration
	aliases  aliasCache
	// audits is each bank's audit_log_enabled, cached.
	audits *auditSwitch

	started time.Time

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
func New(d Deps, cfg Config) (*Server, error) {
	if d.Store == nil || d.Recaller == nil || d.Publisher == nil || d.Gate == nil {
		return nil, errors.New("recallapi: Deps.Store, Recaller, Publisher and Gate are required")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 10 << 20
	}
	if cfg.MaxEventBytes <= 0 {
		cfg.MaxEventBytes = event.DefaultMaxBytes
	}
	if cfg.RetainWait <= 0 {
		cfg.RetainWait = 30 * time.Second
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.OperationLease <= 0 {
		cfg.OperationLease = 30 * time.Second
	}
	if !cfg.Auth.Disabled && len(cfg.Auth.Keys) == 0 && cfg.Addr != "" && !config.IsLoopback(cfg.Addr) {
		return nil, fmt.Errorf("config http.addr: %s is not loopback and no auth.keys are configured", cfg.Addr)
	}
	s := &Server{cfg: cfg, d: d, log: d.Logger, mux: http.NewServeMux(), wake: make(chan struct{}, 1), hookWake: make(chan struct{}, 1),
		started: time.Now(), owner: ownerName(), idlePoll: 250 * time.Millisecond}
	if d.Listener != nil {
		s.idlePoll = idlePollListening
	}
	s.runners = map[string]func(ctx context.Context, o store.Operation) (json.RawMessage, error){
		"refresh_mental_model": s.runRefresh,
		"export":               s.runExport,
		"import":               s.runImport,
		"clone":                s.runClone,
	}
	s.runnerKinds = slices.Sorted(maps.Keys(s.runners))
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
	s.passes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "memstream_api_background_passes_total",
		Help: "Passes of the API's background loops over the store (loop: operations, webhooks); idle loops sleep until work is due or announced.",
	}, []string{"loop"})
	if d.Registerer != nil {
		d.Registerer.MustRegister(s.reqs, s.passes)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.MentalModelCacheSize <= 0 {
		cfg.MentalModelCacheSize = 4096
		s.cfg.MentalModelCacheSize = 4096
	}
	var err error
	if s.audits, err = newAuditSwitch(!cfg.AuditLogOff, d.Store.BankConfig); err != nil {
		return nil, err
	}
	if s.models, err = newModelCache(cfg.MentalModelCacheSize, d.Registerer); err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

// Handler exposes the routes (tests use httptest with it).
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// serveHTTP answers requests no route matches in the API's JSON error
// shape (the mux alone answers them in plain text): 405 with Allow for a
// known path and another method, 404 otherwise.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	// Handler only finds the route; ServeHTTP also sets the path values.
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	probe := &headerProbe{header: http.Header{}}
	h.ServeHTTP(probe, r)
	switch probe.status {
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", probe.header.Get("Allow"))
		writeJSON(w, probe.status, (&apiError{Code: "method_not_allowed",
			Message: r.Method + " is not allowed on " + r.URL.Path + "; allowed: " + probe.header.Get("Allow")}).body())
	case http.StatusNotFound, 0:
		writeJSON(w, http.StatusNotFound, (&apiError{Code: "route_not_found",
			Message: "no route " + r.Method + " " + r.URL.Path + "; see /openapi.json"}).body())
	default:
		// The mux's own redirects (a cleaned path, a trailing slash).
		for k, v := range probe.header {
			w.Header()[k] = v
		}
		w.WriteHeader(probe.status)
	}
}

// headerProbe records what the mux would answer, without writing it.
type headerProbe struct {
	header http.Header
	status int
}

func (p *headerProbe) Header() http.Header         { return p.header }
func (p *headerProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *headerProbe) WriteHeader(code int)        { p.status = code }

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
		if bank := r.PathValue("bank_id"); bank != "" {
			if real := s.resolveBank(r.Context(), bank); real != bank {
				r.SetPathValue("bank_id", real)
			}
		}
		if err := checkParams(r, pattern); err != nil {
			s.writeError(rec, r, err)
		} else if key, err := s.authorize(r, scope); err != nil {
			s.writeError(rec, r, err)
		} else {
			if key != nil {
				r = r.WithContext(context.WithValue(r.Context(), keyCtx{}, key))
			}
			// The switch as the request found it: a request that turns
			// the bank's audit log off is still recorded.
			wasOn := false
			if bank := auditedBank(r); scope != "" && bank != "" {
				wasOn = s.audits.on(r.Context(), bank)
			}
			if err := h(rec, r); err != nil {
				s.writeError(rec, r, err)
			}
			if scope != "" {
				s.audit(r, route, rec.status, start, wasOn)
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
	key := s.keyFor(tok)
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

// Listen binds cfg.Addr and returns the bound address (with ":0", the
// port the system chose), so a caller can announce it before Run serves.
// Run listens itself when Listen was not called.
func (s *Server) Listen() (string, error) {
	if s.ln != nil {
		return s.ln.Addr().String(), nil
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return "", fmt.Errorf("http listen %s: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	return ln.Addr().String(), nil
}

// Run serves until ctx ends or Stop is called, then shuts down
// gracefully: readiness fails first so load balancers stop sending.
func (s *Server) Run(ctx context.Context) error {
	ctx, end, ok := s.life.Begin(ctx)
	defer end()
	if !ok {
		return nil
	}
	if _, err := s.Listen(); err != nil {
		return err
	}
	s.Start(ctx)
	defer s.Close()
	srv := &http.Server{Handler: s.Handler(), ReadTimeout: s.cfg.ReadTimeout, WriteTimeout: s.cfg.WriteTimeout, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.draining.Store(true)
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Stop ends Run and waits for its graceful shutdown, or until ctx ends.
func (s *Server) Stop(ctx context.Context) error { return s.life.Stop(ctx) }

// Start starts the background work of the server: the operation runner,
// the webhook sender and the mental-model change listener (when
// Deps.Listener is set). Run calls it; tests that use
// Handler call it themselves. It is safe to call more than once.
func (s *Server) Start(ctx context.Context) {
	s.startOnce.Do(func() {
		ctx, s.stop = context.WithCancel(ctx)
		s.wg.Add(2)
		go func() {
			defer s.wg.Done()
			s.runOperations(ctx)
		}()
		go func() {
			defer s.wg.Done()
			s.sendWebhooks(ctx)
		}()
		if s.d.Listener == nil {
			return
		}
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

// idlePollListening is how long the operation runner and the webhook
// sender sleep with nothing due while a listener runs: NOTIFY wakes them
// for new work, and the store tells them when retries and checks are due,
// so this poll only bounds what a lost notification can delay.
const idlePollListening = 30 * time.Second

// ownerName names this process's operation leases in the store (and in
// logs): host, pid and a random suffix, unique per Server.
func ownerName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), uuid.NewString()[:8])
}

// listen keeps a LISTEN connection up until ctx ends. Each (re)connect
// purges the cache, because changes made while no connection listened
// were never announced to this replica, and wakes the operation runner and
// the webhook sender for work announced meanwhile.
func (s *Server) listen(ctx context.Context) {
	backoff := 100 * time.Millisecond
	channels := []string{store.MentalModelChannel, store.OperationsChannel, store.WebhooksChannel}
	for {
		err := s.d.Listener.Listen(ctx, channels, func() {
			s.models.purge()
			s.kick()
			s.kickWebhooks()
			backoff = 100 * time.Millisecond
		}, func(channel, payload string) {
			switch channel {
			case store.OperationsChannel:
				s.kick()
			case store.WebhooksChannel:
				s.kickWebhooks()
			case store.MentalModelChannel:
				bankID, id, _ := strings.Cut(payload, "/")
				if id == "*" {
					s.models.invalidateBank(bankID, "notify")
					return
				}
				s.models.invalidate(bankID, id, "notify")
			}
		})
		if ctx.Err() != nil {
			return
		}
		// While disconnected, nothing would evict stale copies: stop
		// serving from the cache until the listener is back.
		s.models.disable()
		s.log.Warn("change listener lost; retrying", slog.Any("error", err), slog.Duration("backoff", backoff))
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
		{"GET", "/health/live", "get_liveness", "", "Liveness with version and uptime (Hindsight).", s.liveness, ""},
		{"GET", "/health/ready", "ready", "", "Readiness: the dependencies of this replica's roles reachable (database; brokers for ingest), not draining.", s.ready, ""},
		{"GET", "/version", "get_version", "", "API version and feature flags (Hindsight).", s.version, ""},
		{"GET", "/openapi.json", "openapi", "", "This OpenAPI 3 description.", s.openapi, ""},
		{"GET", "/metrics", "metrics", "", "Prometheus metrics.", s.metrics, ""},
		{"GET", "/v1/default/banks", "banks_list", "read", "List banks (query: q, limit, offset).", s.listBanks, ""},
		{"GET", b, "bank_get", "read", "Get a bank profile.", s.getBank, ""},
		{"PUT", b, "bank_put", "admin", "Create or replace a bank profile.", s.putBank, "Bank"},
		{"PATCH", b, "bank_patch", "admin", "Change fields of a bank profile (disposition, defense policy, consolidation pause/resume).", s.patchBank, "Bank"},
		{"DELETE", b, "bank_delete", "admin", "Delete a bank and everything in it.", s.deleteBank, ""},
		{"GET", b + "/profile", "get_bank_profile", "read", "Retired in Hindsight 1.1.0: answers 410 (use …/config).", s.profileRetired, ""},
		{"PUT", b + "/profile", "update_bank_disposition", "admin", "Retired in Hindsight 1.1.0: answers 410 (use …/config).", s.profileRetired, ""},
		{"POST", b + "/background", "add_bank_background", "admin", "Retired in Hindsight 1.1.0: answers 410 (use …/config).", s.profileRetired, ""},
		{"GET", b + "/config", "get_bank_config", "read", "The bank's resolved configuration and its overrides.", s.getBankConfig, ""},
		{"PATCH", b + "/config", "update_bank_config", "admin", "Set configuration overrides of the bank.", s.patchBankConfig, "BankConfigUpdate"},
		{"DELETE", b + "/config", "reset_bank_config", "admin", "Remove every configuration override of the bank.", s.resetBankConfig, ""},
		{"GET", b + "/aliases", "list_bank_aliases", "read", "Other names of the bank.", s.listBankAliases, ""},
		{"POST", b + "/aliases", "create_bank_alias", "admin", "Add a name the bank answers to.", s.createBankAlias, "BankAlias"},
		{"PATCH", b + "/aliases/{alias}", "set_bank_alias_primary", "admin", "Make an alias the bank's primary name, or not.", s.setBankAliasPrimary, "BankAliasPrimary"},
		{"DELETE", b + "/aliases/{alias}", "delete_bank_alias", "admin", "Remove an alias.", s.deleteBankAlias, ""},
		{"GET", b + "/stats", "stats", "read", "Bank counters: Hindsight's names and memstream's own.", s.stats, ""},
		{"GET", b + "/stats/memories-timeseries", "get_memories_timeseries", "read", "Memories per time bucket and fact type (query: period, time_field).", s.memoriesTimeseries, ""},
		{"POST", b + "/health/llm", "test_bank_llm", "read", "Whether the LLM each operation uses answers.", s.testBankLLM, ""},
		{"POST", b + "/prompts/preview", "preview_prompt", "read", "The prompt an operation would send (retain, consolidation, reflect).", s.previewPrompt, "PromptPreviewRequest"},
		{"POST", b + "/consolidate", "trigger_consolidation", "write", "Consolidate the bank's pending facts now; returns an operation.", s.triggerConsolidation, ""},
		{"POST", b + "/consolidation/recover", "recover_consolidation", "write", "Requeue consolidation of facts whose consolidation failed.", s.recoverConsolidation, ""},
		{"POST", b + "/consolidation-strategies/preview", "preview_consolidation_strategies", "read", "How tag scopes would split the bank's facts for consolidation.", s.previewStrategies, "ConsolidationStrategiesPreviewRequest"},

		{"POST", b + "/memories", "retain", "write", "Retain: validate as the pipeline does, produce to Kafka; with async:false report each item's outcome.", s.retain, "RetainRequest"},
		{"DELETE", b + "/memories", "clear_bank_memories", "write", "Delete every memory of the bank (query: type).", s.clearBankMemories, ""},
		{"POST", b + "/memories/recall", "recall", "read", "Recall: four retrievers, fusion, rerank, token budget.", s.recall, "RecallRequest"},
		{"POST", b + "/memories/dry-run-extract", "dry_run_extract_memories", "read", "Extract facts from content without storing anything.", s.dryRunExtract, "DryRunExtractRequest"},
		{"GET", b + "/memories/list", "memories_list", "read", "List memories (query: type, q, state, document_id, entity_id, tags, tags_match, time_field, start_date, end_date, limit, offset).", s.listMemories, ""},
		{"GET", b + "/memories/{memory_id}", "memory_get", "read", "Get one memory.", s.getMemory, ""},
		{"PATCH", b + "/memories/{memory_id}", "update_memory", "write", "Edit a memory (text, context, dates, type, state); the change is kept in its history.", s.updateMemory, "UpdateMemoryRequest"},
		{"DELETE", b + "/memories/{memory_id}", "memory_invalidate", "write", "Invalidate one memory (query: reason); the row stays, recall skips it.", s.invalidateMemory, ""},
		{"GET", b + "/memories/{memory_id}/history", "get_observation_history", "read", "Every change to a memory or observation.", s.memoryHistory, ""},
		{"DELETE", b + "/memories/{memory_id}/observations", "clear_memory_observations", "write", "Delete the observations built on one memory.", s.clearMemoryObservations, ""},
		{"GET", b + "/graph", "get_graph", "read", "The memory graph: memories and their links (query: type, limit, q, tags, tags_match, document_id, chunk_id).", s.memoryGraph, ""},
		{"GET", b + "/tags", "list_tags", "read", "Tags in use with their counts (query: q, limit, offset).", s.listTags, ""},
		{"GET", b + "/attachments/{attachment_id}", "get_bank_attachment", "read", "The bytes of a file retained with retain_files.", s.getAttachment, ""},
		{"POST", b + "/files/retain", "file_retain", "write", "Retain uploaded text files (multipart); returns one operation per file.", s.fileRetain, ""},

		{"POST", b + "/reflect", "reflect", "read", "Reflect: an agent loop over memories, observations and mental models, following the bank's directives.", s.reflectQuery, "ReflectRequest"},
		{"GET", b + "/observations", "observations_list", "read", "List observations with proof_count and trend (query: q, state, limit, offset).", s.listObservations, ""},
		{"DELETE", b + "/observations", "clear_observations", "write", "Delete every observation of the bank; facts go back to consolidation.", s.clearObservations, ""},
		{"GET", b + "/observations/scopes", "list_observation_scopes", "read", "The tag scopes observations are kept in, with counts.", s.observationScopes, ""},
		{"GET", b + "/observations/{observation_id}", "observation_get", "read", "Get one observation with its evidence, proof_count, trend and history.", s.getObservation, ""},

		{"GET", b + "/entities", "entities_list", "read", "List entities (query: q, tags, tags_match, limit, offset).", s.listEntities, ""},
		{"GET", b + "/entities/graph", "get_entity_graph", "read", "Entities and how often they are mentioned together (query: limit, min_count).", s.entitiesGraph, ""},
		{"GET", b + "/entities/{entity_id}", "entity_get", "read", "Get one entity with its aliases, observations and recent facts.", s.getEntity, ""},
		{"POST", b + "/entities/{entity_id}/merge", "entity_merge", "write", "Merge this entity into another.", s.mergeEntity, "EntityMergeRequest"},
		{"POST", b + "/entities/{entity_id}/aliases", "entity_alias", "write", "Add an alias to an entity.", s.addEntityAlias, "EntityAliasRequest"},
		{"POST", b + "/entities/{entity_id}/regenerate", "regenerate_entity_observations", "write", "Retired in Hindsight 1.1.0: answers 410.", s.regenerateRetired, ""},

		{"GET", b + "/mental-models", "mental_models_list", "read", "List mental models (query: tags, tags_match, detail, limit, offset).", s.listMentalModels, ""},
		{"POST", b + "/mental-models", "mental_model_create", "write", "Create a mental model; its first content is generated by an operation.", s.createMentalModel, "MentalModelCreate"},
		{"GET", b + "/mental-models/{mental_model_id}", "mental_model_get", "read", "Get a mental model (served from the LRU cache; query: detail).", s.getMentalModel, ""},
		{"PATCH", b + "/mental-models/{mental_model_id}", "mental_model_patch", "write", "Change fields of a mental model.", s.patchMentalModel, "MentalModelPatch"},
		{"DELETE", b + "/mental-models/{mental_model_id}", "mental_model_delete", "write", "Delete a mental model.", s.deleteMentalModel, ""},
		{"POST", b + "/mental-models/{mental_model_id}/refresh", "mental_model_refresh", "write", "Regenerate a mental model from its source query; returns an operation.", s.refreshMentalModel, ""},
		{"POST", b + "/mental-models/{mental_model_id}/dry-run-refresh", "dry_run_refresh_mental_model", "write", "What a refresh would write, without writing it.", s.dryRunRefresh, ""},
		{"POST", b + "/mental-models/{mental_model_id}/clear", "clear_mental_model", "write", "Empty a mental model's content, keeping its definition.", s.clearMentalModel, ""},
		{"GET", b + "/mental-models/{mental_model_id}/history", "get_mental_model_history", "read", "Every content a mental model had.", s.mentalModelHistory, ""},

		{"GET", b + "/directives", "list_directives", "read", "List directives (query: tags, tags_match, active_only, limit, offset).", s.listDirectives, ""},
		{"POST", b + "/directives", "create_directive", "write", "Create a directive: a rule reflect follows.", s.createDirective, "DirectiveCreate"},
		{"GET", b + "/directives/{directive_id}", "get_directive", "read", "Get one directive.", s.getDirective, ""},
		{"PATCH", b + "/directives/{directive_id}", "update_directive", "write", "Change fields of a directive.", s.patchDirective, "DirectivePatch"},
		{"DELETE", b + "/directives/{directive_id}", "delete_directive", "write", "Delete a directive.", s.deleteDirective, ""},

		{"GET", b + "/documents", "documents_list", "read", "List documents (query: q, tags, tags_match, limit, offset).", s.listDocuments, ""},
		{"GET", b + "/documents/{document_id}", "get_document", "read", "Get one document with its text and counts.", s.getDocument, ""},
		{"PATCH", b + "/documents/{document_id}", "update_document", "write", "Change a document's tags (its memories' too).", s.updateDocument, "UpdateDocumentRequest"},
		{"DELETE", b + "/documents/{document_id}", "document_delete", "write", "Delete a document and everything derived from it.", s.deleteDocument, ""},
		{"GET", b + "/documents/{document_id}/chunks", "list_document_chunks", "read", "The chunks of a document (query: limit, offset).", s.listDocumentChunks, ""},
		{"GET", b + "/documents/{document_id}/history", "get_document_history", "read", "What happened to a document: each retain and edit (query: limit, offset).", s.documentHistory, ""},
		{"POST", b + "/documents/{document_id}/reprocess", "reprocess_document", "write", "Extract a document again from its stored chunks; returns an operation.", s.reprocessDocument, ""},
		{"GET", "/v1/default/chunks/{chunk_id}", "get_chunk", "read", "Get one chunk (of a bank the key may read).", s.getChunk, ""},

		{"GET", b + "/operations", "list_operations", "read", "List async operations (query: status, type, limit, offset).", s.listOperations, ""},
		{"GET", b + "/operations/{operation_id}", "get_operation_status", "read", "One operation; a retain's lists what became of each item.", s.getOperation, ""},
		{"DELETE", b + "/operations/{operation_id}", "cancel_operation", "write", "Cancel a pending operation.", s.cancelOperation, ""},
		{"POST", b + "/operations/{operation_id}/retry", "retry_operation", "write", "Run a failed or cancelled operation again.", s.retryOperation, ""},
		{"DELETE", b + "/operations/{operation_id}/delete", "delete_operation", "write", "Delete the record of a finished operation.", s.deleteOperation, ""},

		{"GET", b + "/webhooks", "list_webhooks", "read", "List webhooks.", s.listWebhooks, ""},
		{"POST", b + "/webhooks", "create_webhook", "admin", "Create a webhook: signed deliveries of the bank's events, retried from a queue.", s.createWebhook, "WebhookCreate"},
		{"PATCH", b + "/webhooks/{webhook_id}", "update_webhook", "admin", "Change fields of a webhook.", s.patchWebhook, "WebhookPatch"},
		{"DELETE", b + "/webhooks/{webhook_id}", "delete_webhook", "admin", "Delete a webhook.", s.deleteWebhook, ""},
		{"GET", b + "/webhooks/{webhook_id}/deliveries", "list_webhook_deliveries", "read", "A webhook's deliveries, newest first (query: limit, cursor).", s.listWebhookDeliveries, ""},

		{"GET", b + "/export", "export_bank_template", "read", "The bank's configuration, mental models and directives as a template.", s.exportTemplate, ""},
		{"POST", b + "/import", "import_bank_template", "admin", "Apply a bank template (query: dry_run).", s.importTemplate, "BankTemplateManifest"},
		{"GET", "/v1/bank-template-schema", "get_bank_template_schema", "", "The JSON Schema of a bank template.", s.templateSchema, ""},
		{"POST", b + "/transfer/export", "export_bank_transfer", "read", "Export the bank to an archive; returns an operation whose result names the file.", s.exportTransfer, ""},
		{"POST", b + "/transfer/import", "import_bank_transfer", "admin", "Import an archive into the bank (multipart); returns an operation.", s.importTransfer, ""},
		{"POST", b + "/clone", "clone_bank", "admin", "Copy the bank into another (query: target_bank_id); returns an operation.", s.cloneBank, ""},
		{"GET", "/v1/default/files/download/{key}", "download_file", "read", "Download a file an operation produced (an export archive).", s.downloadFile, ""},
		{"GET", b + "/document-transfer", "export_documents_sync_removed", "read", "Retired in Hindsight 1.1.0: answers 410.", s.documentTransferRetired, ""},
		{"POST", b + "/document-transfer", "import_documents", "admin", "Import an archive's documents into this bank (multipart; query: on_conflict skip, replace or new-id); returns an operation. Deprecated in Hindsight 1.1.0 for …/transfer/import.", s.importDocuments, ""},
		{"POST", b + "/document-transfer/export", "export_documents", "read", "Export the bank's documents (query: document_id, repeated) to an archive; returns an operation whose result names the file. Deprecated in Hindsight 1.1.0 for …/transfer/export.", s.exportDocuments, ""},

		{"GET", b + "/knowledge-base/tree", "get_knowledge_base_tree", "read", "The knowledge base: folders and pages (pages are mental models).", s.knowledgeTree, ""},
		{"POST", b + "/knowledge-base/folders", "create_knowledge_folder", "write", "Create a folder.", s.createKnowledgeFolder, "CreateFolderRequest"},
		{"POST", b + "/knowledge-base/pages", "create_knowledge_page", "write", "Create a page: a mental model placed in the tree.", s.createKnowledgePage, "CreatePageRequest"},
		{"GET", b + "/knowledge-base/pages/{page_id}", "get_knowledge_page", "read", "A page with its markdown.", s.getKnowledgePage, ""},
		{"GET", b + "/knowledge-base/search", "search_knowledge_base", "read", "Search pages (query: q, limit).", s.searchKnowledgeBase, ""},
		{"GET", b + "/knowledge-base/export", "export_knowledge_base", "read", "Every page as a markdown file.", s.exportKnowledgeBase, ""},
		{"PATCH", b + "/knowledge-base/nodes/{node_id}", "update_knowledge_node", "write", "Rename, move or edit a folder or page.", s.updateKnowledgeNode, "UpdateNodeRequest"},
		{"DELETE", b + "/knowledge-base/nodes/{node_id}", "delete_knowledge_node", "write", "Delete a folder (with what it holds) or a page.", s.deleteKnowledgeNode, ""},

		{"GET", b + "/audit-logs", "list_audit_logs", "read", "What was done to the bank through the API (query: action, transport, start_date, end_date, limit, offset).", s.listAuditLogs, ""},
		{"GET", b + "/audit-logs/stats", "audit_log_stats", "read", "Audit log counts per time bucket and action (query: action, period).", s.auditLogStats, ""},
		{"GET", b + "/audit-logs/{log_id}", "get_audit_log", "read", "One audit log entry.", s.getAuditLog, ""},
		{"GET", b + "/llm-requests", "list_llm_requests", "read", "The requests memstream sent to the LLM for the bank, newest first (query: status, operation, scope, call_type, provider, trace_id, document_id, memory_id, group, start_date, end_date, limit, offset).", s.listLLMRequests, ""},
		{"GET", b + "/llm-requests/stats", "llm_request_stats", "read", "LLM request counts by status and token sums per time bucket (query: operation, call_type, period).", s.llmRequestStats, ""},
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
