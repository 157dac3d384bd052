package pipeline

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memstream/memstream/chunk"
	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/extract"
	"github.com/memstream/memstream/store"
)

// Extractor turns chunks into facts, one slice per input.
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
}

// DeadLetterWriter writes a record to the dead-letter topic and returns once
// Kafka has acknowledged it.
type DeadLetterWriter interface {
	DeadLetter(ctx context.Context, m Message, e *event.Error, bankID string) error
}

// Config sizes the pipeline.
type Config struct {
	Lanes         int
	ChannelSize   int
	BatchSize     int
	BatchWait     time.Duration
	ChunkMaxChars int
	MaxEventBytes int
	// MaxRetries bounds retries of a failing extract call before the batch's
	// records are dead-lettered. Persistence is retried until shutdown: a
	// database outage must stall ingest, never drop it.
	MaxRetries int
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

// Pipeline is the running set of lanes.
type Pipeline struct {
	cfg      Config
	deps     Deps
	log      *slog.Logger
	m        *metrics
	splitter *chunk.Splitter
	lanes    []chan Message
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	closed   chan struct{}
	once     sync.Once
	hist     *history
}

// New builds and starts the pipeline's lanes.
func New(cfg Config, deps Deps) (*Pipeline, error) {
	cfg = cfg.WithDefaults()
	if err := deps.validate(); err != nil {
		return nil, err
	}
	sp, err := chunk.New(chunk.Config{MaxRunes: cfg.ChunkMaxChars})
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pipeline{
		cfg: cfg, deps: deps, log: deps.Logger, m: newMetrics(deps.Registerer), splitter: sp,
		ctx: ctx, cancel: cancel, closed: make(chan struct{}), hist: newHistory(),
	}
	for range cfg.Lanes {
		in := make(chan Message, cfg.ChannelSize)
		p.lanes = append(p.lanes, in)
		p.startLane(in)
	}
	return p, nil
}

// Submit hands a record to its lane, blocking while the lane is full.
func (p *Pipeline) Submit(ctx context.Context, m Message) error {
	lane := p.lanes[p.laneOf(m)]
	select {
	case lane <- m:
		p.m.in.Inc()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.closed:
		return errors.New("pipeline closed")
	}
}

func (p *Pipeline) laneOf(m Message) int {
	h := fnv.New32a()
	if len(m.Record.Key) > 0 {
		h.Write(m.Record.Key)
	} else {
		// Unkeyed records have no order to keep beyond their partition.
		fmt.Fprintf(h, "%s/%d", m.Record.Topic, m.Record.Partition)
	}
	return int(h.Sum32() % uint32(len(p.lanes)))
}

// Close stops accepting records, lets the lanes finish what they hold, and
// returns when they have (or ctx ends, in which case in-flight work is
// abandoned unacknowledged and will be redelivered).
func (p *Pipeline) Close(ctx context.Context) error {
	p.once.Do(func() {
		close(p.closed)
		for _, l := range p.lanes {
			close(l)
		}
	})
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
		p.cancel()
		return nil
	case <-ctx.Done():
		p.cancel()
		<-done
		return ctx.Err()
	}
}

// Abort stops the lanes at once without acknowledging anything further:
// what a crash does to in-flight work.
func (p *Pipeline) Abort() {
	p.cancel()
	p.once.Do(func() {
		close(p.closed)
		for _, l := range p.lanes {
			close(l)
		}
	})
	p.wg.Wait()
}

// item is one record on its way through a lane.
type item struct {
	msg    Message
	ev     *event.Decoded
	chunks []chunk.Chunk
	audit  []store.AuditRow
	facts  [][]extract.Fact // per chunk
	embs   [][][]float32    // per chunk, per fact
	start  time.Time
}

func (p *Pipeline) startLane(in <-chan Message) {
	prepared := make(chan *item, p.cfg.ChannelSize)
	extracted := make(chan []*item, 4)
	p.wg.Add(3)
	go func() { defer p.wg.Done(); defer close(prepared); p.prepareStage(in, prepared) }()
	go func() { defer p.wg.Done(); defer close(extracted); p.extractStage(prepared, extracted) }()
	go func() { defer p.wg.Done(); p.persistStage(extracted) }()
	p.m.lanes.Inc()
}

func (p *Pipeline) prepareStage(in <-chan Message, out chan<- *item) {
	for m := range in {
		if p.ctx.Err() != nil {
			continue // aborted: drop unacknowledged, Kafka redelivers
		}
		start := time.Now()
		it, rerr := p.prepare(m)
		p.m.stageSeconds.WithLabelValues("prepare").Observe(time.Since(start).Seconds())
		if rerr != nil {
			if it != nil && len(it.audit) > 0 {
				p.recordBlockedAudit(it)
			}
			p.deadLetter(m, rerr, bankOf(it, m))
			continue
		}
		it.start = start
		select {
		case out <- it:
		case <-p.ctx.Done():
		}
		p.m.depth.WithLabelValues("prepared").Set(float64(len(out)))
	}
}

// bankOf is the bank a record prepared as it, or, when it could not be
// decoded, the bank its raw value or key names, so that its dead letter
// counts for the bank.
func bankOf(it *item, m Message) string {
	if it != nil && it.ev != nil {
		return it.ev.BankID
	}
	return event.BankOf(m.Record.Key, m.Record.Value)
}

// prepare decodes, applies defense and chunks one record.
func (p *Pipeline) prepare(m Message) (*item, *event.Error) {
	ev, err := event.Decode(m.Record, p.cfg.MaxEventBytes)
	if err != nil {
		var re *event.Error
		errors.As(err, &re)
		return nil, re
	}
	it := &item{msg: m, ev: ev}
	policy, perr := p.deps.Policies.Policy(p.ctx, ev.BankID)
	if perr != nil {
		// Without the bank's policy we cannot know what to redact; the
		// default policy redacts everything it recognises.
		p.log.Warn("defense policy unavailable; using default", slog.String("bank", ev.BankID), slog.Any("error", perr))
		policy = defense.DefaultPolicy()
	}
	// check applies the policy to one stored text. The audit rows are kept
	// even when the text blocks the event, so the blocked event is
	// audited too.
	check := func(text string) (string, *event.Error) {
		if text == "" {
			return text, nil
		}
		res, audit, cerr := p.deps.Gate.Check(ev.Key, text, policy)
		for _, a := range audit {
			it.audit = append(it.audit, store.AuditRow{Label: a.Label, Action: string(a.Action), Fingerprint: a.Fingerprint})
		}
		if cerr != nil {
			var be *defense.BlockedError
			if errors.As(cerr, &be) {
				return "", event.Errorf(event.ClassBlockedByPolicy, "defense", "%v", cerr)
			}
			return "", event.Errorf(event.ClassBlockedByPolicy, "defense", "defense check failed: %v", cerr)
		}
		if res.Blocked {
			return "", event.Errorf(event.ClassBlockedByPolicy, "defense", "blocked by policy: %s", strings.Join(res.BlockedLabels, ", "))
		}
		return res.Text, nil
	}
	msgs := make([]chunk.Message, 0, len(ev.Messages))
	for i, dm := range ev.Messages {
		text, rerr := check(dm.Content)
		if rerr != nil {
			return it, rerr
		}
		ev.Messages[i].Content = text
		msgs = append(msgs, chunk.Message{Index: dm.Index, Role: dm.Role, Name: dm.Name, Content: text, Timestamp: dm.At})
	}
	// Context, tags and metadata values are stored with the document and
	// every fact, so they pass the same gate as the messages.
	var rerr *event.Error
	if ev.Context, rerr = check(ev.Context); rerr != nil {
		return it, rerr
	}
	for i, tag := range ev.Tags {
		if ev.Tags[i], rerr = check(tag); rerr != nil {
			return it, rerr
		}
	}
	for _, k := range slices.Sorted(maps.Keys(ev.Metadata)) {
		if ev.Metadata[k], rerr = check(ev.Metadata[k]); rerr != nil {
			return it, rerr
		}
	}
	it.chunks = p.splitter.Split(msgs)
	return it, nil
}

// recordBlockedAudit writes the audit rows of an event that goes to the
// dead-letter topic instead of Postgres. Like the dead-letter count it is
// best effort: the record itself is safe in the DLQ, and stalling the
// partition on an audit write would be worse than a logged gap.
func (p *Pipeline) recordBlockedAudit(it *item) {
	if err := p.deps.Store.RecordAudit(p.ctx, it.ev.BankID, it.ev.Key, it.audit); err != nil {
		p.log.Warn("could not record defense audit of a dead-lettered event", slog.String("bank", it.ev.BankID),
			slog.String("event_id", it.ev.Key), slog.Any("error", err))
	}
}

func (p *Pipeline) extractStage(in <-chan *item, out chan<- []*item) {
	batch := make([]*item, 0, p.cfg.BatchSize)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	flush := func() {
		if len(batch) == 0 {
			return
		}
		ready := p.extractBatch(batch)
		if len(ready) > 0 {
			select {
			case out <- ready:
			case <-p.ctx.Done():
			}
		}
		batch = make([]*item, 0, p.cfg.BatchSize)
	}
	for {
		select {
		case it, ok := <-in:
			if !ok {
				flush()
				return
			}
			if len(batch) == 0 {
				timer.Reset(p.cfg.BatchWait)
			}
			batch = append(batch, it)
			if len(batch) >= p.cfg.BatchSize {
				timer.Stop()
				flush()
			}
		case <-timer.C:
			flush()
		}
	}
}

// extractBatch runs extraction and embedding for a batch. Items whose
// extraction keeps failing are dead-lettered; the rest go on.
func (p *Pipeline) extractBatch(batch []*item) []*item {
	if p.ctx.Err() != nil {
		return nil
	}
	start := time.Now()
	batch = p.skipStored(batch)
	if len(batch) == 0 {
		return nil
	}
	inputs := p.inputs(batch)
	var facts [][]extract.Fact
	err := p.retry("extract", func() error {
		var err error
		facts, err = p.deps.Extractor.Extract(p.ctx, inputs)
		if err == nil && len(facts) != len(inputs) {
			err = fmt.Errorf("extractor returned %d results for %d inputs", len(facts), len(inputs))
		}
		return err
	})
	if err != nil {
		if p.ctx.Err() != nil {
			return nil
		}
		if len(batch) > 1 {
			// One record the extractor chokes on must not take its batch
			// with it: halve until the failing records stand alone.
			mid := len(batch) / 2
			return append(p.extractBatch(batch[:mid]), p.extractBatch(batch[mid:])...)
		}
		for _, it := range batch {
			p.deadLetter(it.msg, event.Errorf(event.ClassExtractFailed, "extract", "%v", err), it.ev.BankID)
		}
		return nil
	}
	var texts []string
	k := 0
	for _, it := range batch {
		it.facts = facts[k : k+len(it.chunks)]
		k += len(it.chunks)
		for _, fs := range it.facts {
			for _, f := range fs {
				texts = append(texts, f.EmbeddingText())
			}
		}
	}
	var vecs [][]float32
	err = p.retry("embed", func() error {
		var err error
		vecs, err = p.deps.Embedder.EmbedDocuments(p.ctx, texts)
		if err == nil && len(vecs) != len(texts) {
			err = fmt.Errorf("embedder returned %d vectors for %d texts", len(vecs), len(texts))
		}
		return err
	})
	if err != nil {
		if p.ctx.Err() != nil {
			return nil
		}
		for _, it := range batch {
			p.deadLetter(it.msg, event.Errorf(event.ClassExtractFailed, "embed", "%v", err), it.ev.BankID)
		}
		return nil
	}
	k = 0
	for _, it := range batch {
		it.embs = make([][][]float32, len(it.facts))
		for ci, fs := range it.facts {
			it.embs[ci] = vecs[k : k+len(fs)]
			k += len(fs)
		}
	}
	p.m.stageSeconds.WithLabelValues("extract").Observe(time.Since(start).Seconds())
	p.m.facts.Add(float64(len(texts)))
	return batch
}

// skipStored acknowledges the events of a batch that are already in
// PostgreSQL (a replay, or a redelivery after a crash) without extracting
// them again: their facts are durably committed, which is all an
// acknowledgement promises. Persist would skip them anyway; this saves the
// extraction and embedding work. On a lookup error the batch goes on whole.
func (p *Pipeline) skipStored(batch []*item) []*item {
	banks, keys := make([]string, len(batch)), make([]string, len(batch))
	for i, it := range batch {
		banks[i], keys[i] = it.ev.BankID, it.ev.Key
	}
	stored, err := p.deps.Store.ExistingEvents(p.ctx, banks, keys)
	if err != nil || len(stored) == 0 {
		return batch
	}
	fresh := batch[:0:0]
	for _, it := range batch {
		if stored[it.ev.BankID+"\x00"+it.ev.Key] {
			p.m.duplicates.Inc()
			it.msg.Ack()
			continue
		}
		fresh = append(fresh, it)
	}
	return fresh
}

// retry runs fn with exponential backoff and jitter, MaxRetries times.
func (p *Pipeline) retry(stage string, fn func() error) error {
	var err error
	delay := 100 * time.Millisecond
	for attempt := 0; attempt <= p.cfg.MaxRetries; attempt++ {
		if err = fn(); err == nil {
			return nil
		}
		if p.ctx.Err() != nil {
			return err
		}
		p.m.retries.WithLabelValues(stage).Inc()
		p.log.Warn("stage failed; retrying", slog.String("stage", stage), slog.Int("attempt", attempt+1), slog.Any("error", err))
		if !sleepCtx(p.ctx, jitter(delay)) {
			return err
		}
		delay = min(delay*2, 10*time.Second)
	}
	return err
}

func jitter(d time.Duration) time.Duration {
	return d/2 + time.Duration(rand.Int64N(int64(d)))
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (p *Pipeline) persistStage(in <-chan []*item) {
	for batch := range in {
		if p.ctx.Err() != nil {
			continue
		}
		p.persistBatch(batch)
	}
}

// persistBatch resolves entities and writes the batch in one transaction.
// Transient failures (the database restarting) are retried until they
// pass or the pipeline is aborted; a batch that keeps failing for another
// reason is split so that only the guilty record is dead-lettered.
func (p *Pipeline) persistBatch(batch []*item) {
	start := time.Now()
	recs, bad := p.buildRecords(batch)
	for i, it := range batch {
		if bad[i] != nil {
			p.deadLetter(it.msg, bad[i], it.ev.BankID)
		}
	}
	var good []*item
	var goodRecs []store.EventRecord
	for i, it := range batch {
		if bad[i] == nil {
			good = append(good, it)
			goodRecs = append(goodRecs, recs[i])
		}
	}
	if len(good) == 0 {
		return
	}
	p.writeRecords(good, goodRecs, 0)
	p.m.stageSeconds.WithLabelValues("persist").Observe(time.Since(start).Seconds())
}

func (p *Pipeline) writeRecords(items []*item, recs []store.EventRecord, depth int) {
	delay := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		res, err := p.deps.Store.PersistBatch(p.ctx, recs)
		if err == nil {
			p.m.persisted.Add(float64(res.NewEvents))
			p.m.duplicates.Add(float64(res.Duplicates))
			for _, it := range items {
				p.m.e2eSeconds.Observe(time.Since(it.start).Seconds())
				it.msg.Ack()
			}
			p.m.out.Add(float64(len(items)))
			return
		}
		if p.ctx.Err() != nil {
			return // aborted: unacknowledged, redelivered later
		}
		p.m.retries.WithLabelValues("persist").Inc()
		if !store.IsTransient(err) && attempt >= p.cfg.MaxRetries {
			if len(items) == 1 {
				p.deadLetter(items[0].msg, event.Errorf(event.ClassPersistFailed, "persist", "%v", err), recs[0].BankID)
				return
			}
			mid := len(items) / 2
			p.writeRecords(items[:mid], recs[:mid], depth+1)
			p.writeRecords(items[mid:], recs[mid:], depth+1)
			return
		}
		p.log.Warn("persist failed; retrying", slog.Int("events", len(items)), slog.Int("attempt", attempt+1),
			slog.String("bank", recs[0].BankID), slog.Any("error", err))
		if !sleepCtx(p.ctx, jitter(delay)) {
			return
		}
		delay = min(delay*2, 5*time.Second)
	}
}

// deadLetter writes the record to the dead-letter topic, retrying until
// Kafka acknowledges it, then acknowledges the record.
func (p *Pipeline) deadLetter(m Message, e *event.Error, bankID string) {
	p.m.deadLettered.WithLabelValues(e.Class).Inc()
	delay := 100 * time.Millisecond
	for {
		err := p.deps.DeadLetter.DeadLetter(p.ctx, m, e, bankID)
		if err == nil {
			break
		}
		if p.ctx.Err() != nil {
			return
		}
		p.log.Warn("dead-letter write failed; retrying", slog.String("topic", m.Record.Topic),
			slog.Int("partition", int(m.Record.Partition)), slog.Int64("offset", m.Record.Offset), slog.Any("error", err))
		if !sleepCtx(p.ctx, jitter(delay)) {
			return
		}
		delay = min(delay*2, 5*time.Second)
	}
	// Counting the dead letter in Postgres is for stats only; the record
	// itself is safe in the dead-letter topic.
	if err := p.deps.Store.RecordDeadLetter(p.ctx, m.Record.Topic, m.Record.Partition, m.Record.Offset, bankID, e.Class, e.Stage); err != nil {
		p.log.Warn("could not count dead letter", slog.Any("error", err))
	}
	p.log.Info("record dead-lettered", slog.String("topic", m.Record.Topic), slog.Int("partition", int(m.Record.Partition)),
		slog.Int64("offset", m.Record.Offset), slog.String("class", e.Class), slog.String("stage", e.Stage), slog.String("bank", bankID))
	m.Ack()
}
