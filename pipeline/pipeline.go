package pipeline

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/memstream/memstream/internal/wait"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/chunk"
	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/extract"
	"github.com/memstream/memstream/store"
)

// Extractor turns chunks into facts, one slice per input. It may report
// per-input failures with an *extract.BatchError, and classifies its
// errors through Transient, Unavailable and InputRejected methods (see
// classify): an outage stalls ingest, it never drops records.
type Extractor interface {
	Extract(ctx context.Context, in []extract.Input) ([][]extract.Fact, error)
}

// Embedder embeds the texts of extracted facts, which are stored and
// searched (documents, not queries), into vectors of one dimension.
type Embedder interface {
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
}

// Gate applies the bank's defense policy to one text.
type Gate interface {
	Check(eventID, text string, p defense.Policy) (defense.Result, []defense.AuditRecord, error)
}

// PolicySource returns a bank's defense policy.
type PolicySource interface {
	Policy(ctx context.Context, bankID string) (defense.Policy, error)
}

// EntityResolver maps the entity mentions of a batch to canonical entities.
type EntityResolver interface {
	Resolve(ctx context.Context, bankID string, mentions []Mention) ([]Resolved, error)
}

// Persister is the store's write side used by the pipeline.
type Persister interface {
	PersistBatch(ctx context.Context, evs []store.EventRecord) (store.PersistResult, error)
	RecordDeadLetter(ctx context.Context, topic string, partition int32, offset int64, bankID, class, stage string) error
	// RecordAudit writes the defense audit rows of an event that is not
	// persisted (a blocked one); persisted events carry theirs in
	// EventRecord.Audit.
	RecordAudit(ctx context.Context, bankID, eventKey string, rows []store.AuditRow) error
	// ExistingEvents reports which events are already stored ("bank\x00key").
	ExistingEvents(ctx context.Context, banks, keys []string) (map[string]bool, error)
	// StoredChunks lists the chunk indexes of an event already persisted,
	// for an event stored in units to resume after a restart.
	StoredChunks(ctx context.Context, bankID, eventKey string) (map[int]bool, error)
}

// DeadLetterWriter writes a record to the dead-letter topic and returns once
// Kafka has acknowledged it.
type DeadLetterWriter interface {
	DeadLetter(ctx context.Context, r *kgo.Record, e *event.Error, bankID string) error
}

// Config sizes the pipeline.
type Config struct {
	// Lanes is the number of shared lanes; records are routed to them by
	// a hash of their key.
	Lanes       int
	ChannelSize int
	BatchSize   int
	BatchWait   time.Duration
	// ChunkMaxChars is the most characters of one chunk.
	ChunkMaxChars int
	MaxEventBytes int
	// MaxRetries bounds retries of a stage failure the pipeline cannot
	// classify before the records that fail alone are dead-lettered.
	// Outages (transient or unavailable providers, the database down)
	// are retried until the pipeline stops: they stall ingest, never drop
	// it.
	MaxRetries int
	// LongEventBytes routes records at least this large to a long lane,
	// so that one long event never holds a shared lane. Later records of
	// the same key follow it there, to keep their order.
	LongEventBytes int
	// LongLanes is the number of long lanes.
	LongLanes int
	// UnitChunks cuts an event of a long lane into units of at most this
	// many chunks, each extracted and persisted in its own transaction,
	// so that the work per step is bounded and a restart resumes after
	// the units already stored.
	UnitChunks int
	// MaxEventSeconds is the watchdog's limit: a lane whose current step
	// has made no progress for this long is reported stuck, with its
	// record, by /health/ready and memstream_pipeline_lane_stuck.
	MaxEventSeconds time.Duration
	// MaxFactsPerEvent bounds the facts one transaction writes for one
	// event: an event with more is persisted in further units, cut at
	// chunk boundaries.
	MaxFactsPerEvent int
	// MaxFactsPerChunk bounds the facts of one chunk in one transaction:
	// a chunk with more is persisted in parts of this many facts.
	MaxFactsPerChunk int
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Lanes <= 0 {
		c.Lanes = 2
	}
	if c.ChannelSize <= 0 {
		c.ChannelSize = 1024
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 256
	}
	if c.BatchWait <= 0 {
		c.BatchWait = 50 * time.Millisecond
	}
	if c.ChunkMaxChars <= 0 {
		c.ChunkMaxChars = 3000
	}
	if c.MaxEventBytes <= 0 {
		c.MaxEventBytes = event.DefaultMaxBytes
	}
	if c.MaxRetries <= 0 {
		c.MaxRetries = 5
	}
	if c.LongEventBytes <= 0 {
		c.LongEventBytes = 128 << 10
	}
	if c.LongLanes <= 0 {
		c.LongLanes = 1
	}
	if c.UnitChunks <= 0 {
		c.UnitChunks = 16
	}
	if c.MaxEventSeconds <= 0 {
		c.MaxEventSeconds = 2 * time.Minute
	}
	if c.MaxFactsPerEvent <= 0 {
		c.MaxFactsPerEvent = 2000
	}
	if c.MaxFactsPerChunk <= 0 {
		c.MaxFactsPerChunk = 200
	}
	c.MaxFactsPerChunk = min(c.MaxFactsPerChunk, c.MaxFactsPerEvent)
	return c
}

// Deps are the pipeline's collaborators.
type Deps struct {
	Gate       Gate
	Policies   PolicySource
	Extractor  Extractor
	Embedder   Embedder
	Resolver   EntityResolver
	Store      Persister
	DeadLetter DeadLetterWriter
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

func (d Deps) validate() error {
	var missing []string
	if d.Gate == nil {
		missing = append(missing, "Gate")
	}
	if d.Policies == nil {
		missing = append(missing, "Policies")
	}
	if d.Extractor == nil {
		missing = append(missing, "Extractor")
	}
	if d.Embedder == nil {
		missing = append(missing, "Embedder")
	}
	if d.Resolver == nil {
		missing = append(missing, "Resolver")
	}
	if d.Store == nil {
		missing = append(missing, "Store")
	}
	if d.DeadLetter == nil {
		missing = append(missing, "DeadLetter")
	}
	if d.Logger == nil {
		missing = append(missing, "Logger")
	}
	if len(missing) > 0 {
		return fmt.Errorf("pipeline: missing dependencies: %s", strings.Join(missing, ", "))
	}
	return nil
}

// ErrClosed is returned by Submit once the pipeline is stopping.
var ErrClosed = errors.New("pipeline closed")

// Pipeline is the set of lanes between the consumer and the store. Build
// it with New, run it with Run, feed it with Submit, and end it with Stop
// (drain) or Abort (crash).
type Pipeline struct {
	cfg      Config
	deps     Deps
	log      *slog.Logger
	m        *metrics
	splitter *chunk.Splitter
	shared   []*lane
	long     []*lane
	keys     keyTable

	mu       sync.Mutex
	started  bool
	cancel   context.CancelFunc
	closing  chan struct{} // closed by Stop and Abort: no more Submits
	lanesRun sync.WaitGroup
	done     chan struct{} // closed when every lane goroutine has returned
	once     sync.Once
	hist     *history
}

// New builds the pipeline. Its lanes start with Run.
func New(deps Deps, cfg Config) (*Pipeline, error) {
	cfg = cfg.WithDefaults()
	if err := deps.validate(); err != nil {
		return nil, err
	}
	sp, err := chunk.New(chunk.Config{MaxRunes: cfg.ChunkMaxChars})
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	m, err := newMetrics(deps.Registerer)
	if err != nil {
		return nil, err
	}
	p := &Pipeline{
		cfg: cfg, deps: deps, log: deps.Logger, m: m, splitter: sp,
		closing: make(chan struct{}), done: make(chan struct{}), hist: newHistory(),
	}
	p.keys.init()
	for i := range cfg.Lanes {
		p.shared = append(p.shared, newLane(p, fmt.Sprint(i), false))
	}
	for i := range cfg.LongLanes {
		p.long = append(p.long, newLane(p, fmt.Sprintf("long%d", i), true))
	}
	return p, nil
}

// Run starts the lanes and the watchdog and returns when the lanes have
// ended: after Stop drained them, after Abort, or when ctx ends, which
// abandons in-flight work unacknowledged (Kafka redelivers it).
func (p *Pipeline) Run(ctx context.Context) error {
	p.mu.Lock()
	if p.started {
		p.mu.Unlock()
		return errors.New("pipeline: Run called twice")
	}
	select {
	case <-p.closing:
		p.mu.Unlock()
		return ErrClosed
	default:
	}
	ctx, cancel := context.WithCancel(ctx)
	p.started, p.cancel = true, cancel
	for _, l := range p.lanes() {
		l.start(ctx, &p.lanesRun)
	}
	p.mu.Unlock()
	defer cancel()
	watchdogDone := make(chan struct{})
	wctx, stopWatchdog := context.WithCancel(ctx)
	go func() { defer close(watchdogDone); p.watchdog(wctx) }()
	p.m.lanes.Set(float64(len(p.shared) + len(p.long)))
	p.lanesRun.Wait()
	stopWatchdog()
	<-watchdogDone
	p.m.lanes.Set(0)
	close(p.done)
	return nil
}

func (p *Pipeline) lanes() []*lane { return append(append([]*lane{}, p.shared...), p.long...) }

// Stop stops accepting records and lets the lanes finish what they hold
// until ctx ends; then it aborts what is left (unacknowledged, so Kafka
// redelivers it) and returns ctx.Err(). It returns once every lane
// goroutine has returned.
func (p *Pipeline) Stop(ctx context.Context) error {
	p.once.Do(func() { close(p.closing) })
	p.mu.Lock()
	started := p.started
	p.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		p.abortLanes()
		<-p.done
		return ctx.Err()
	}
}

// Abort stops the lanes at once without acknowledging anything further:
// what a crash does to in-flight work.
func (p *Pipeline) Abort() {
	p.once.Do(func() { close(p.closing) })
	p.abortLanes()
	p.mu.Lock()
	started := p.started
	p.mu.Unlock()
	if started {
		<-p.done
	}
}

func (p *Pipeline) abortLanes() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cancel != nil {
		p.cancel()
	}
}

// Submit hands a record to its lane, blocking while the lane is full. It
// never panics, whatever Stop or Abort do meanwhile: after they begin it
// returns ErrClosed, and a record it has handed over but no lane
// processes is simply never acknowledged.
func (p *Pipeline) Submit(ctx context.Context, m Message) error {
	select {
	case <-p.closing:
		return ErrClosed
	default:
	}
	rk := routeKey(m)
	h := fnv.New32a()
	h.Write([]byte(rk))
	hash := h.Sum32()
	long := p.keys.enter(rk, len(m.Record.Value) >= p.cfg.LongEventBytes)
	l := p.shared[hash%uint32(len(p.shared))]
	if long {
		l = p.long[hash%uint32(len(p.long))]
	}
	env := envelope{msg: m, key: rk, long: long}
	select {
	case l.in <- env:
		p.m.in.Inc()
		return nil
	case <-ctx.Done():
		p.keys.leave(rk, long)
		return ctx.Err()
	case <-p.closing:
		p.keys.leave(rk, long)
		return ErrClosed
	}
}

// routeKey is what keeps records in order: the record key, or for unkeyed
// records their partition.
func routeKey(m Message) string {
	if len(m.Record.Key) > 0 {
		return string(m.Record.Key)
	}
	return fmt.Sprintf("%s/%d", m.Record.Topic, m.Record.Partition)
}

// envelope is a submitted record with its routing.
type envelope struct {
	msg  Message
	key  string
	long bool
}

// keyTable counts each route key's records in shared and long lanes.
// A key with records in a long lane sends its later records there too,
// and a long lane starts a record only once its key has none left in a
// shared lane: both keep the records of one key in offset order.
type keyTable struct {
	mu      sync.Mutex
	counts  map[string]*keyCount
	changed wait.Broadcast
}

type keyCount struct{ shared, long int }

func (k *keyTable) init() { k.counts = map[string]*keyCount{} }

// enter registers a record of key and reports whether it goes to a long
// lane.
func (k *keyTable) enter(key string, big bool) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.counts[key]
	if c == nil {
		c = &keyCount{}
		k.counts[key] = c
	}
	long := big || c.long > 0
	if long {
		c.long++
	} else {
		c.shared++
	}
	return long
}

func (k *keyTable) leave(key string, long bool) {
	k.mu.Lock()
	c := k.counts[key]
	if c != nil {
		if long {
			c.long--
		} else {
			c.shared--
		}
		if c.long <= 0 && c.shared <= 0 {
			delete(k.counts, key)
		}
	}
	k.mu.Unlock()
	k.changed.Fire()
}

// waitShared blocks until key has no record left in a shared lane.
func (k *keyTable) waitShared(ctx context.Context, key string) bool {
	for {
		ch := k.changed.C()
		k.mu.Lock()
		c := k.counts[key]
		clear := c == nil || c.shared == 0
		k.mu.Unlock()
		if clear {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}
