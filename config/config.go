package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/memstream/memstream/event"
)

// Config is the effective configuration of one memstream process.
type Config struct {
	// DataDir holds the managed PostgreSQL's and the embedded broker's data.
	DataDir       string        `yaml:"data_dir"`
	Log           Log           `yaml:"log"`
	Kafka         Kafka         `yaml:"kafka"`
	Database      Database      `yaml:"database"`
	HTTP          HTTP          `yaml:"http"`
	Auth          Auth          `yaml:"auth"`
	LLM           LLM           `yaml:"llm"`
	Embed         Embed         `yaml:"embed"`
	Rerank        Rerank        `yaml:"rerank"`
	Pipeline      Pipeline      `yaml:"pipeline"`
	Defense       Defense       `yaml:"defense"`
	Consolidation Consolidation `yaml:"consolidation"`
	Reflect       Reflect       `yaml:"reflect"`
	Webhooks      Webhooks      `yaml:"webhooks"`
}

// Webhooks configures where the API's webhooks may send deliveries.
type Webhooks struct {
	// AllowPrivate lets a webhook target loopback, private, link-local and
	// other non-public addresses. Off, such a URL is refused when the
	// webhook is created or changed, and every delivery is refused if the
	// name it dials resolves to one then (a changed DNS answer).
	AllowPrivate bool `yaml:"allow_private"`
}

// Log configures the process logger.
type Log struct {
	// Level is the least level logged: debug, info, warn or error.
	Level string `yaml:"level"`
	// Format is text or json.
	Format string `yaml:"format"`
}

// NewLogger returns the process's logger writing to w at log.level, as
// JSON when log.format is json and as text otherwise.
func (l Log) NewLogger(w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(l.Level))
	opts := &slog.HandlerOptions{Level: lvl}
	if l.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// Kafka configures the broker connection and the ingest consumer.
type Kafka struct {
	// Brokers lists seed brokers; empty means the embedded in-process broker.
	Brokers []string `yaml:"brokers"`
	// EmbeddedAddr is where the embedded broker listens.
	EmbeddedAddr string `yaml:"embedded_addr"`
	// EmbeddedPartitions is the partition count of topics the embedded broker creates.
	EmbeddedPartitions int `yaml:"embedded_partitions"`
	// Topics lists the event topics the ingest consumer reads.
	Topics []string `yaml:"topics"`
	// DLQTopic receives refused records with their error headers.
	DLQTopic string `yaml:"dlq_topic"`
	// Group is the ingest consumer group.
	Group string `yaml:"group"`
	// MaxEventBytes is the largest event accepted, on Kafka and over HTTP;
	// a larger one is dead-lettered (oversized) or refused.
	MaxEventBytes int `yaml:"max_event_bytes"`
	// MaxInflightRecords and MaxInflightBytes bound what the consumer has
	// polled and not yet acknowledged; past them polling pauses.
	MaxInflightRecords int `yaml:"max_inflight_records"`
	MaxInflightBytes   int `yaml:"max_inflight_bytes"`
	// CommitInterval is how often the committed watermark is sent to Kafka
	// (also on revoke and shutdown).
	CommitInterval time.Duration `yaml:"commit_interval"`
	// ShutdownTimeout bounds a graceful stop: drain, commit, stop.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// ClientID prefixes the Kafka client ids of this process's clients.
	ClientID string `yaml:"client_id"`
}

// Embedded reports whether memstream runs its own in-process broker.
func (k Kafka) Embedded() bool { return len(k.Brokers) == 0 }

// Addrs are the brokers a client dials: the configured ones, or the
// embedded broker's address.
func (k Kafka) Addrs() []string {
	if k.Embedded() {
		return []string{k.EmbeddedAddr}
	}
	return k.Brokers
}

// Database configures PostgreSQL.
type Database struct {
	// URL is a postgres:// URL, or "embedded" for the managed private server.
	URL string `yaml:"url"`
	// ReadURL, when set, is a read-only server (a streaming replica of
	// URL's) that recall reads from; writes, jobs and everything else stay
	// on URL. Empty reads from URL.
	ReadURL string `yaml:"read_url"`
	// EmbeddedPort is the managed server's port, on loopback only.
	EmbeddedPort int `yaml:"embedded_port"`
	// MaxConns sizes the connection pool, shared by ingest, the worker and
	// the API (a recall may hold up to seven at once).
	MaxConns int `yaml:"max_conns"`
	// BankIndexMax is how many banks at most get an HNSW index of their own
	// (the largest ones with bank_index_min_facts facts): under a bank
	// filter the shared index visits about 1/share tuples for each one it
	// keeps. Every statement on memory_units locks each index while it is
	// planned, so it is bounded (at most 48; docs/OPERATIONS.md, "Bank HNSW
	// indexes"); 0 builds none and drops those built.
	BankIndexMax int `yaml:"bank_index_max"`
	// BankIndexMinFacts is the fewest facts a bank needs for an index of
	// its own.
	BankIndexMinFacts int `yaml:"bank_index_min_facts"`
	// BankIndexInterval is how often the worker checks the bank sizes and
	// builds or drops bank indexes (CREATE INDEX CONCURRENTLY).
	BankIndexInterval time.Duration `yaml:"bank_index_interval"`
}

// Embedded reports whether memstream manages its own PostgreSQL server.
func (d Database) Embedded() bool { return d.URL == "embedded" }

// HTTP configures the API server.
type HTTP struct {
	// Addr is the API address; one off loopback needs auth.keys or
	// auth.disabled.
	Addr string `yaml:"addr"`
	// RetainWait is how long a retain with async:false waits for its
	// events' outcome, and a retried idempotent retain for the first answer.
	RetainWait time.Duration `yaml:"retain_wait"`
	// MaxBodyBytes bounds a request body; a larger one gets a 413.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// ReadTimeout and WriteTimeout bound reading a request and writing its
	// answer.
	ReadTimeout  time.Duration `yaml:"read_timeout"`
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// OperationLease is how long an API replica holds an operation it runs
	// (mental-model refresh, export, import, clone) between renewals; when
	// the replica dies, another takes the operation back after this.
	OperationLease time.Duration `yaml:"operation_lease"`
	// AuditLogEnabled is whether API writes are recorded in a bank's audit
	// log (GET …/audit-logs) when the bank's configuration does not set
	// audit_log_enabled; a bank's own value wins, seen within 5 s on other
	// replicas. Hindsight's default is off; memstream's stays on.
	AuditLogEnabled bool `yaml:"audit_log_enabled"`
	// AuditRetention is how long an entry of a bank's API audit log (GET
	// …/audit-logs) is kept; older ones are pruned every minute. 0 keeps
	// them forever, as Hindsight does by default (where the log is off by
	// default; memstream's is on unless http.audit_log_enabled or the
	// bank turns it off).
	AuditRetention time.Duration `yaml:"audit_retention"`
}

// Auth configures bearer-key access control.
type Auth struct {
	// Disabled serves every bank without a key; needed to serve off
	// loopback without keys.
	Disabled bool `yaml:"disabled"`
	// Keys lists the bearer keys: [{name, key or sha256, banks, scopes}].
	Keys []Key `yaml:"keys"`
}

// Key is one bearer key: the secret (or its SHA-256), its banks and scopes.
type Key struct {
	// Name names the key in logs and audit rows.
	Name string `yaml:"name"`
	// Key is the secret itself, or SHA256 its hex SHA-256.
	Key    string `yaml:"key"`
	SHA256 string `yaml:"sha256"`
	// Banks are the banks the key may use; "*" is every bank.
	Banks []string `yaml:"banks"`
	// Scopes are read, write and admin.
	Scopes []string `yaml:"scopes"`
}

// LLM configures the language-model provider.
type LLM struct {
	// Provider is offline (the built-in extractor and rules) or openai (any
	// OpenAI-compatible chat server).
	Provider string `yaml:"provider"`
	// BaseURL, APIKey and Model address the openai provider.
	BaseURL string `yaml:"base_url"`
	APIKey  string `yaml:"api_key"`
	Model   string `yaml:"model"`
	// Concurrency is how many LLM calls run at once in this process,
	// shared by extraction, reflect and consolidation (live calls first).
	Concurrency int `yaml:"concurrency"`
	// Timeout bounds one LLM call.
	Timeout time.Duration `yaml:"timeout"`
	// MaxRetries bounds the retries of one call after a transient
	// failure (429, 5xx, timeouts).
	MaxRetries int `yaml:"max_retries"`
	// ChunksPerCall is how many chunks one extraction call carries.
	ChunksPerCall int `yaml:"chunks_per_call"`
	// TraceRetention is how long a request to the LLM stays in its bank's
	// trace (GET …/llm-requests); older rows are pruned every minute.
	TraceRetention time.Duration `yaml:"trace_retention"`
	// TraceMaxPerBank is how many of its newest LLM requests a bank's
	// trace keeps; 0 turns the trace off.
	TraceMaxPerBank int `yaml:"trace_max_per_bank"`
}

// Embed configures the embedding provider.
type Embed struct {
	// Provider is local (the in-process models), hash (hashed n-grams, for
	// tests) or openai (an OpenAI-compatible server).
	Provider string `yaml:"provider"`
	// BaseURL is the openai provider's server.
	BaseURL string `yaml:"base_url"`
	// APIKey is the openai provider's key.
	APIKey string `yaml:"api_key"`
	// Model names the model: for openai the server's model name, for local
	// use-multilingual-v3+all-minilm-l6-v2 (896 dimensions: the
	// multilingual USE and the English MiniLM joined) or
	// use-multilingual-v3 (512: the USE alone, weaker on English
	// paraphrase, about a third of the embedding cost per fact); empty
	// means the provider's default, those named first here and
	// text-embedding-3-small for openai.
	Model string `yaml:"model"`
	// Dim is the vector size; a database keeps the one it was made with.
	Dim int `yaml:"dim"`
	// BatchSize is how many texts one embedding request carries.
	BatchSize int `yaml:"batch_size"`
	// CacheSize is the LRU of vectors by text and kind.
	CacheSize int `yaml:"cache_size"`
	// QueryPrefix and DocumentPrefix are prepended to query and document
	// texts. PrefixAuto means the provider's own default: the local model's
	// instruction prefixes, none for hash and openai.
	QueryPrefix    string `yaml:"query_prefix"`
	DocumentPrefix string `yaml:"document_prefix"`
	// ModelDir is where the local models' files are: a directory holding
	// use-multilingual-v3/ and all-minilm-l6-v2/, or one model's own files;
	// empty means the directory scripts/install-model.sh installs into.
	ModelDir string `yaml:"model_dir"`
	// Threads bounds the local model's concurrent forward passes; 0 means
	// one per CPU.
	Threads int `yaml:"threads"`
	// SendInputType adds "input_type": "query" or "document" to openai
	// requests, for servers that take it (Cohere-, Voyage-, NIM-style).
	SendInputType bool `yaml:"send_input_type"`
}

// USELocalModel is the multilingual Universal Sentence Encoder v3 on its
// own: the local provider's lighter model.
const USELocalModel = "use-multilingual-v3"

// JoinedLocalModel is the USE and the English all-MiniLM-L6-v2 side by
// side, one vector made of both (package embed, Concat).
const JoinedLocalModel = "use-multilingual-v3+all-minilm-l6-v2"

// DefaultLocalModel is the local provider's default model, the joined one:
// it is ahead of the USE alone on the held-out evaluation
// (docs/EMBEDDINGS.md).
const DefaultLocalModel = JoinedLocalModel

// LocalModelDim is the vector size of DefaultLocalModel.
const LocalModelDim = 896

// DefaultOpenAIModel is the openai provider's default model.
const DefaultOpenAIModel = "text-embedding-3-small"

// LocalModels maps each model the local provider runs to its vector size
// (package embed's tests keep the two tables equal).
var LocalModels = map[string]int{
	USELocalModel:    512,
	JoinedLocalModel: LocalModelDim,
}

// ModelName is the model e names once defaults are applied: Model, or the
// provider's default ("hash" for hash).
func (e Embed) ModelName() string {
	switch {
	case e.Provider == "hash":
		return "hash"
	case e.Model != "":
		return e.Model
	case e.Provider == "local":
		return DefaultLocalModel
	}
	return DefaultOpenAIModel
}

// PrefixAuto is the value of embed.query_prefix and embed.document_prefix
// that selects the provider's own default.
const PrefixAuto = "auto"

// Rerank configures the optional cross-encoder.
type Rerank struct {
	// Provider is none or http (a cross-encoder behind a rerank endpoint).
	Provider string `yaml:"provider"`
	// URL, APIKey and Model address the http reranker.
	URL    string `yaml:"url"`
	APIKey string `yaml:"api_key"`
	Model  string `yaml:"model"`
	// Timeout bounds one rerank call; a failed or late rerank keeps the
	// fused order.
	Timeout time.Duration `yaml:"timeout"`
}

// Pipeline sizes the ingest stages.
type Pipeline struct {
	// ChunkMaxChars is the largest chunk.
	ChunkMaxChars int `yaml:"chunk_max_chars"`
	// BatchSize and BatchWait shape extract and persist batches: a batch
	// closes when full or this long after its first record.
	BatchSize int           `yaml:"batch_size"`
	BatchWait time.Duration `yaml:"batch_wait"`
	// ChannelSize bounds each lane's input channel.
	ChannelSize int `yaml:"channel_size"`
	// PersistWorkers is how many shared lanes run; a key always goes to
	// the same lane, so a conversation stays in order.
	PersistWorkers int `yaml:"persist_workers"`
	// MaxRetries bounds retries of a record whose failure is neither
	// transient nor an outage before it is dead-lettered.
	MaxRetries int `yaml:"max_retries"`
	// MaxFactsPerEvent bounds the facts one event persists in one
	// transaction; a larger event is persisted in further units of at most
	// this many facts, never truncated.
	MaxFactsPerEvent int `yaml:"max_facts_per_event"`
	// MaxFactsPerChunk bounds the facts of one chunk persisted in one
	// transaction; past it the chunk's further facts go to further units,
	// never dropped.
	MaxFactsPerChunk int `yaml:"max_facts_per_chunk"`
	// LongEventBytes sends records at least this large to a long lane of
	// their own, so that one long event never holds a shared lane.
	LongEventBytes int `yaml:"long_event_bytes"`
	// LongLanes is how many long lanes run.
	LongLanes int `yaml:"long_lanes"`
	// UnitChunks cuts a long event into units of this many chunks, each
	// extracted and persisted in its own transaction.
	UnitChunks int `yaml:"unit_chunks"`
	// MaxEventSeconds is the stall watchdog's limit: a lane whose current
	// step has not progressed for this many seconds is reported stuck by
	// /health/ready and memstream_pipeline_lane_stuck.
	MaxEventSeconds int `yaml:"max_event_seconds"`
}

// Defense holds the default defense policy for banks without their own.
type Defense struct {
	// DefaultAction is allow, redact or block.
	DefaultAction string `yaml:"default_action"`
	// EnableEmail and EnablePhone add e-mail addresses and phone numbers
	// to the findings (off: they are kept as written).
	EnableEmail bool `yaml:"enable_email"`
	EnablePhone bool `yaml:"enable_phone"`
	// AuditSalt salts the fingerprints of audited findings.
	AuditSalt string `yaml:"audit_salt"`
	// AuditRetention is how long a finding stays in the defense audit
	// (label, action and fingerprint, never the value); older ones are
	// pruned every minute. The audit may be a compliance record: the
	// default is 90 days, and 0 keeps it forever.
	AuditRetention time.Duration `yaml:"audit_retention"`
}

// Consolidation configures the background workers.
type Consolidation struct {
	// Enabled runs the worker in processes with the worker role.
	Enabled bool `yaml:"enabled"`
	// Workers is how many consolidation jobs (banks) run at once.
	Workers int `yaml:"workers"`
	// BatchSize is how many facts one batch adjudicates and applies in one
	// transaction.
	BatchSize int `yaml:"batch_size"`
	// PollInterval is how often an idle worker looks for queued banks.
	PollInterval time.Duration `yaml:"poll_interval"`
	// RatePerSecond caps facts adjudicated per second; 0 is no cap.
	RatePerSecond float64 `yaml:"rate_per_second"`
	// MentalModelMinInterval bounds how often a mental model is refreshed.
	MentalModelMinInterval time.Duration `yaml:"mental_model_min_interval"`
	// MaxDrain bounds one consolidation job: past it the drain stops after
	// its current batch and the bank is enqueued again behind the others.
	MaxDrain time.Duration `yaml:"max_drain"`
	// JobRetention and FailedJobRetention are how long finished jobs stay
	// in the jobs table.
	JobRetention       time.Duration `yaml:"job_retention"`
	FailedJobRetention time.Duration `yaml:"failed_job_retention"`
	// AdjudicateConcurrency is how many LLM adjudication calls of one
	// batch may be in flight at once (llm.provider openai).
	AdjudicateConcurrency int `yaml:"adjudicate_concurrency"`
}

// Reflect configures the reflect agent loop.
type Reflect struct {
	// MaxIterations bounds the agent loop's tool rounds.
	MaxIterations int `yaml:"max_iterations"`
	// Timeout bounds one reflect.
	Timeout time.Duration `yaml:"timeout"`
	// ContextTokens bounds the memories the loop puts in the model's
	// context, counted with the recall budget's tokenizer.
	ContextTokens int `yaml:"context_tokens"`
}

// Default returns the configuration used with no file, environment or flags.
func Default() Config {
	return Config{
		DataDir: "./.memstream",
		Log:     Log{Level: "info", Format: "text"},
		Kafka: Kafka{
			EmbeddedAddr:       "127.0.0.1:9092",
			EmbeddedPartitions: 6,
			Topics:             []string{"memstream.events"},
			DLQTopic:           "memstream.events.dlq",
			Group:              "memstream-ingest",
			MaxEventBytes:      event.DefaultMaxBytes,
			MaxInflightRecords: 20000,
			MaxInflightBytes:   256 << 20,
			CommitInterval:     time.Second,
			ShutdownTimeout:    30 * time.Second,
			ClientID:           "memstream",
		},
		Database: Database{URL: "embedded", EmbeddedPort: 54329, MaxConns: 16,
			BankIndexMax: 16, BankIndexMinFacts: 4000, BankIndexInterval: 10 * time.Minute},
		HTTP: HTTP{
			Addr:           "127.0.0.1:8888",
			RetainWait:     30 * time.Second,
			MaxBodyBytes:   10 << 20,
			ReadTimeout:    30 * time.Second,
			WriteTimeout:   120 * time.Second,
			OperationLease: 30 * time.Second,
			// On, as memstream's audit log always was (Hindsight's is off).
			AuditLogEnabled: true,
			// 30 days: the audit-logs stats route's 30d period is whole.
			AuditRetention: 30 * 24 * time.Hour,
		},
		LLM: LLM{
			Provider:      "offline",
			Model:         "gpt-4o-mini",
			Concurrency:   8,
			Timeout:       60 * time.Second,
			MaxRetries:    4,
			ChunksPerCall: 4,
			// A week, so that the stats route's default 7d period is whole.
			TraceRetention:  7 * 24 * time.Hour,
			TraceMaxPerBank: 10000,
		},
		Embed: Embed{Provider: "local", Dim: LocalModelDim, BatchSize: 128, CacheSize: 50000,
			QueryPrefix: PrefixAuto, DocumentPrefix: PrefixAuto},
		Rerank: Rerank{Provider: "none", Timeout: 5 * time.Second},
		Pipeline: Pipeline{
			ChunkMaxChars:  3000,
			BatchSize:      256,
			BatchWait:      50 * time.Millisecond,
			ChannelSize:    1024,
			PersistWorkers: 2,
			MaxRetries:     5,
			// A 3000-character chunk holds at most ~1500 sentences; 2000
			// facts per unit keep a unit's transaction to a few seconds.
			MaxFactsPerEvent: 2000,
			MaxFactsPerChunk: 200,
			LongEventBytes:   128 << 10,
			LongLanes:        1,
			UnitChunks:       16,
			MaxEventSeconds:  120,
		},
		Defense: Defense{DefaultAction: "redact", AuditRetention: 90 * 24 * time.Hour},
		Consolidation: Consolidation{
			Enabled:                true,
			Workers:                2,
			BatchSize:              256,
			PollInterval:           500 * time.Millisecond,
			MentalModelMinInterval: 30 * time.Second,
			MaxDrain:               2 * time.Minute,
			JobRetention:           time.Hour,
			FailedJobRetention:     7 * 24 * time.Hour,
			AdjudicateConcurrency:  4,
		},
		Reflect: Reflect{MaxIterations: 10, Timeout: 60 * time.Second, ContextTokens: 32000},
	}
}

// FieldError names the configuration key that holds a bad value.
type FieldError struct {
	Key string
	Msg string
}

func (e *FieldError) Error() string { return fmt.Sprintf("config %s: %s", e.Key, e.Msg) }

func fieldErr(key, format string, args ...any) error {
	return &FieldError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

var topicRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,249}$`)

// Validate checks every value and returns an error naming the first bad key.
func (c *Config) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if c.DataDir == "" {
		add(fieldErr("data_dir", "must not be empty"))
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		add(fieldErr("log.level", "must be debug, info, warn or error, got %q", c.Log.Level))
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		add(fieldErr("log.format", "must be text or json, got %q", c.Log.Format))
	}
	for _, b := range c.Kafka.Brokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			add(fieldErr("kafka.brokers", "%q is not host:port", b))
		}
	}
	if c.Kafka.Embedded() {
		if _, _, err := net.SplitHostPort(c.Kafka.EmbeddedAddr); err != nil {
			add(fieldErr("kafka.embedded_addr", "%q is not host:port", c.Kafka.EmbeddedAddr))
		}
	}
	add(positive("kafka.embedded_partitions", c.Kafka.EmbeddedPartitions))
	if len(c.Kafka.Topics) == 0 {
		add(fieldErr("kafka.topics", "must list at least one topic"))
	}
	for _, t := range c.Kafka.Topics {
		if !topicRE.MatchString(t) {
			add(fieldErr("kafka.topics", "%q is not a valid topic name", t))
		}
	}
	if !topicRE.MatchString(c.Kafka.DLQTopic) {
		add(fieldErr("kafka.dlq_topic", "%q is not a valid topic name", c.Kafka.DLQTopic))
	}
	if c.Kafka.Group == "" {
		add(fieldErr("kafka.group", "must not be empty"))
	}
	add(positive("kafka.max_event_bytes", c.Kafka.MaxEventBytes))
	add(positive("kafka.max_inflight_records", c.Kafka.MaxInflightRecords))
	add(positive("kafka.max_inflight_bytes", c.Kafka.MaxInflightBytes))
	if c.Kafka.MaxInflightBytes > 0 && c.Kafka.MaxInflightBytes < c.Kafka.MaxEventBytes {
		add(fieldErr("kafka.max_inflight_bytes", "must be at least kafka.max_event_bytes (%d)", c.Kafka.MaxEventBytes))
	}
	add(positiveDur("kafka.commit_interval", c.Kafka.CommitInterval))
	add(positiveDur("kafka.shutdown_timeout", c.Kafka.ShutdownTimeout))

	if !c.Database.Embedded() {
		u, err := url.Parse(c.Database.URL)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			add(fieldErr("database.url", "must be \"embedded\" or a postgres:// URL with a host"))
		}
	}
	if c.Database.ReadURL != "" {
		u, err := url.Parse(c.Database.ReadURL)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			add(fieldErr("database.read_url", "must be empty or a postgres:// URL with a host (a streaming replica of database.url)"))
		}
	}
	if c.Database.EmbeddedPort <= 0 || c.Database.EmbeddedPort > 65535 {
		add(fieldErr("database.embedded_port", "must be a port number, got %d", c.Database.EmbeddedPort))
	}
	add(positive("database.max_conns", c.Database.MaxConns))
	// Every statement on memory_units locks each of its indexes: with
	// the table's own nine and 48 bank indexes that is most of the lock
	// table's default 64 per connection; thousands exhaust it.
	if c.Database.BankIndexMax < 0 || c.Database.BankIndexMax > 48 {
		add(fieldErr("database.bank_index_max", "must be in [0, 48], got %d", c.Database.BankIndexMax))
	}
	add(positive("database.bank_index_min_facts", c.Database.BankIndexMinFacts))
	add(positiveDur("database.bank_index_interval", c.Database.BankIndexInterval))

	if _, _, err := net.SplitHostPort(c.HTTP.Addr); err != nil {
		add(fieldErr("http.addr", "%q is not host:port", c.HTTP.Addr))
	} else if !c.Auth.Disabled && len(c.Auth.Keys) == 0 && !IsLoopback(c.HTTP.Addr) {
		add(fieldErr("http.addr", "%q is not loopback and no auth.keys are configured; set auth.keys or auth.disabled: true", c.HTTP.Addr))
	}
	add(positiveDur("http.retain_wait", c.HTTP.RetainWait))
	if c.HTTP.MaxBodyBytes <= 0 {
		add(fieldErr("http.max_body_bytes", "must be positive, got %d", c.HTTP.MaxBodyBytes))
	}
	add(positiveDur("http.read_timeout", c.HTTP.ReadTimeout))
	add(positiveDur("http.write_timeout", c.HTTP.WriteTimeout))
	add(retention("http.audit_retention", c.HTTP.AuditRetention))
	if c.HTTP.OperationLease < time.Second {
		add(fieldErr("http.operation_lease", "must be at least 1s, got %s", c.HTTP.OperationLease))
	}

	for i, k := range c.Auth.Keys {
		key := fmt.Sprintf("auth.keys[%d]", i)
		if (k.Key == "") == (k.SHA256 == "") {
			add(fieldErr(key+".key", "set exactly one of key and sha256"))
		}
		if k.SHA256 != "" && !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(k.SHA256) {
			add(fieldErr(key+".sha256", "must be 64 lower-case hex digits"))
		}
		if len(k.Banks) == 0 {
			add(fieldErr(key+".banks", "must list banks or \"*\""))
		}
		if len(k.Scopes) == 0 {
			add(fieldErr(key+".scopes", "must list at least one of read, write, admin"))
		}
		for _, s := range k.Scopes {
			if s != "read" && s != "write" && s != "admin" {
				add(fieldErr(key+".scopes", "unknown scope %q (read, write, admin)", s))
			}
		}
	}

	switch c.LLM.Provider {
	case "offline":
	case "openai":
		add(httpURL("llm.base_url", c.LLM.BaseURL, true))
		if c.LLM.Model == "" {
			add(fieldErr("llm.model", "must be set for provider openai"))
		}
	default:
		add(fieldErr("llm.provider", "must be offline or openai, got %q", c.LLM.Provider))
	}
	add(positive("llm.concurrency", c.LLM.Concurrency))
	add(positiveDur("llm.timeout", c.LLM.Timeout))
	if c.LLM.MaxRetries < 0 {
		add(fieldErr("llm.max_retries", "must not be negative"))
	}
	add(positive("llm.chunks_per_call", c.LLM.ChunksPerCall))
	add(positiveDur("llm.trace_retention", c.LLM.TraceRetention))
	if c.LLM.TraceMaxPerBank < 0 {
		add(fieldErr("llm.trace_max_per_bank", "must not be negative (0 turns the trace off), got %d", c.LLM.TraceMaxPerBank))
	}

	switch c.Embed.Provider {
	case "local", "hash":
	case "openai":
		add(httpURL("embed.base_url", c.Embed.BaseURL, true))
	default:
		add(fieldErr("embed.provider", "must be local, hash or openai, got %q", c.Embed.Provider))
	}
	switch {
	case c.Embed.Dim < 8 || c.Embed.Dim > 4000:
		add(fieldErr("embed.dim", "must be between 8 and 4000, got %d", c.Embed.Dim))
	case c.Embed.Provider == "local":
		name := c.Embed.ModelName()
		if want, ok := LocalModels[name]; !ok {
			add(fieldErr("embed.model", "the local provider runs %s (the default) or %s, got %q", JoinedLocalModel, USELocalModel, name))
		} else if c.Embed.Dim != want {
			add(fieldErr("embed.dim", "the local model %s makes %d dimensions, got %d", name, want, c.Embed.Dim))
		}
	}
	if c.Embed.Threads < 0 {
		add(fieldErr("embed.threads", "must not be negative"))
	}
	add(positive("embed.batch_size", c.Embed.BatchSize))
	if c.Embed.CacheSize < 0 {
		add(fieldErr("embed.cache_size", "must not be negative"))
	}

	switch c.Rerank.Provider {
	case "none":
	case "http":
		add(httpURL("rerank.url", c.Rerank.URL, true))
	default:
		add(fieldErr("rerank.provider", "must be none or http, got %q", c.Rerank.Provider))
	}

	add(positive("pipeline.chunk_max_chars", c.Pipeline.ChunkMaxChars))
	add(positive("pipeline.batch_size", c.Pipeline.BatchSize))
	add(positiveDur("pipeline.batch_wait", c.Pipeline.BatchWait))
	add(positive("pipeline.channel_size", c.Pipeline.ChannelSize))
	add(positive("pipeline.persist_workers", c.Pipeline.PersistWorkers))
	add(positive("pipeline.max_facts_per_event", c.Pipeline.MaxFactsPerEvent))
	add(positive("pipeline.max_facts_per_chunk", c.Pipeline.MaxFactsPerChunk))
	if c.Pipeline.MaxFactsPerChunk > c.Pipeline.MaxFactsPerEvent && c.Pipeline.MaxFactsPerEvent > 0 {
		add(fieldErr("pipeline.max_facts_per_chunk", "must not exceed pipeline.max_facts_per_event (%d), got %d",
			c.Pipeline.MaxFactsPerEvent, c.Pipeline.MaxFactsPerChunk))
	}
	if c.Pipeline.MaxRetries < 0 {
		add(fieldErr("pipeline.max_retries", "must not be negative"))
	}
	add(positive("pipeline.long_event_bytes", c.Pipeline.LongEventBytes))
	add(positive("pipeline.long_lanes", c.Pipeline.LongLanes))
	add(positive("pipeline.unit_chunks", c.Pipeline.UnitChunks))
	add(positive("pipeline.max_event_seconds", c.Pipeline.MaxEventSeconds))

	switch c.Defense.DefaultAction {
	case "allow", "redact", "block":
	default:
		add(fieldErr("defense.default_action", "must be allow, redact or block, got %q", c.Defense.DefaultAction))
	}
	add(retention("defense.audit_retention", c.Defense.AuditRetention))

	add(positive("consolidation.workers", c.Consolidation.Workers))
	add(positive("consolidation.batch_size", c.Consolidation.BatchSize))
	add(positiveDur("consolidation.poll_interval", c.Consolidation.PollInterval))
	if c.Consolidation.RatePerSecond < 0 {
		add(fieldErr("consolidation.rate_per_second", "must not be negative (0 means unlimited)"))
	}
	add(positiveDur("consolidation.max_drain", c.Consolidation.MaxDrain))
	add(positiveDur("consolidation.job_retention", c.Consolidation.JobRetention))
	add(positiveDur("consolidation.failed_job_retention", c.Consolidation.FailedJobRetention))
	add(positive("consolidation.adjudicate_concurrency", c.Consolidation.AdjudicateConcurrency))

	add(positive("reflect.max_iterations", c.Reflect.MaxIterations))
	add(positiveDur("reflect.timeout", c.Reflect.Timeout))
	add(positive("reflect.context_tokens", c.Reflect.ContextTokens))
	return errors.Join(errs...)
}

func positive(key string, v int) error {
	if v <= 0 {
		return fieldErr(key, "must be positive, got %d", v)
	}
	return nil
}

// retention checks a keep-for duration where 0 means forever.
func retention(key string, d time.Duration) error {
	if d < 0 {
		return fieldErr(key, "must not be negative (0 keeps forever), got %s", d)
	}
	return nil
}

func positiveDur(key string, d time.Duration) error {
	if d <= 0 {
		return fieldErr(key, "must be a positive duration, got %s", d)
	}
	return nil
}

func httpURL(key, raw string, required bool) error {
	if raw == "" {
		if required {
			return fieldErr(key, "must be set")
		}
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fieldErr(key, "%q is not an http(s) URL", raw)
	}
	return nil
}

// IsLoopback reports whether a host:port address binds to loopback only.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Load builds the configuration from defaults, the YAML file at path (if not
// empty), the environment and the key=value overrides, then validates it.
func Load(path string, environ []string, overrides []string) (Config, error) {
	cfg := Default()
	if path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return cfg, fmt.Errorf("config file: %w", err)
		}
		if err := decodeYAML(raw, &cfg); err != nil {
			return cfg, fmt.Errorf("config file %s: %w", path, err)
		}
	}
	if err := applyEnv(&cfg, environ); err != nil {
		return cfg, err
	}
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		if !ok {
			return cfg, fmt.Errorf("override %q: want key=value", o)
		}
		if err := Set(&cfg, strings.TrimSpace(k), v); err != nil {
			return cfg, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func decodeYAML(raw []byte, cfg *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true) // a misspelt key is an error, not a silent default
	// An empty file decodes to io.EOF and leaves the defaults in place.
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		return nameKeys(raw, err)
	}
	return nil
}

// nameKeys adds the dotted key to each "line N: cannot unmarshal !!str
// `v` into T" of a YAML type error (a string where a boolean or a number
// belongs), which yaml.v3 reports by line alone: an operator fixes a key,
// not a line. On a line with several keys (a flow mapping) the ones whose
// value is v are named.
func nameKeys(raw []byte, err error) error {
	var te *yaml.TypeError
	var root yaml.Node
	if !errors.As(err, &te) || yaml.Unmarshal(raw, &root) != nil {
		return err
	}
	type scalar struct{ key, value string }
	lines := map[int][]scalar{}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if path != "" {
					k = path + "." + k
				}
				walk(n.Content[i+1], k)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s[%d]", path, i))
			}
		default:
			lines[n.Line] = append(lines[n.Line], scalar{path, n.Value})
		}
	}
	walk(&root, "")
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		msgs[i] = m
		var line int
		if _, scanErr := fmt.Sscanf(m, "line %d:", &line); scanErr != nil {
			continue
		}
		var all, same []string
		for _, sc := range lines[line] {
			all = append(all, sc.key)
			if strings.Contains(m, "`"+sc.value+"`") {
				same = append(same, sc.key)
			}
		}
		if len(same) > 0 {
			all = same
		}
		if len(all) > 0 {
			msgs[i] = strings.Join(all, ", ") + " (" + m + ")"
		}
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// PostgresDataDir is where the managed PostgreSQL server keeps its files.
func (c Config) PostgresDataDir() string { return filepath.Join(c.DataDir, "postgres") }

// KafkaDataDir is where the embedded broker keeps its log.
func (c Config) KafkaDataDir() string { return filepath.Join(c.DataDir, "kafka") }
