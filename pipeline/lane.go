package pipeline

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memstream/memstream/chunk"
	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/extract"
	"github.com/memstream/memstream/store"
)

// Stage names, as in metrics, logs and the error.stage header.
const (
	stagePrepare    = "prepare"
	stageExtract    = "extract"
	stageEmbed      = "embed"
	stageResolve    = "resolve"
	stagePersist    = "persist"
	stageDeadLetter = "dead_letter"
)

// lane is one FIFO chain of stages: prepare → extract → persist, joined by
// bounded channels. Shared lanes batch many records per call; long lanes
// take one unit of a long event at a time.
type lane struct {
	p    *Pipeline
	name string
	long bool
	in   chan envelope
	ctx  context.Context

	// Watchdog state: what each stage works on, and since when.
	mu      sync.Mutex
	working map[string]*work
}

// work is a stage's current call (or stall) as the watchdog sees it.
type work struct {
	since     time.Time
	topic     string
	partition int32
	offset    int64
	bank      string
	err       error
	class     faultClass
}

func newLane(p *Pipeline, name string, long bool) *lane {
	return &lane{p: p, name: name, long: long, in: make(chan envelope, p.cfg.ChannelSize), working: map[string]*work{}}
}

func (l *lane) start(ctx context.Context, wg *sync.WaitGroup) {
	l.ctx = ctx
	prepared := make(chan *item, l.p.cfg.ChannelSize)
	extracted := make(chan []*item, 4)
	wg.Add(3)
	go func() { defer wg.Done(); defer close(prepared); l.prepareStage(prepared) }()
	go func() { defer wg.Done(); defer close(extracted); l.extractStage(prepared, extracted) }()
	go func() { defer wg.Done(); l.persistStage(extracted) }()
}

// work marks stage as busy with it; a new call keeps the time of a stall
// that is still going on.
func (l *lane) work(stage string, it *item) {
	r := it.msg.Record
	l.mu.Lock()
	defer l.mu.Unlock()
	if w := l.working[stage]; w != nil && w.offset == r.Offset && w.partition == r.Partition && w.topic == r.Topic {
		return
	}
	l.working[stage] = &work{since: time.Now(), topic: r.Topic, partition: r.Partition, offset: r.Offset, bank: it.ev.BankID}
}

func (l *lane) stall(stage string, it *item, err error, class faultClass) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w := l.working[stage]; w != nil {
		w.err, w.class = err, class
		if w.bank == "" && it.ev != nil {
			w.bank = it.ev.BankID
		}
	}
	l.p.m.stalls.WithLabelValues(stage, class.String()).Inc()
}

func (l *lane) idle(stage string) {
	l.mu.Lock()
	delete(l.working, stage)
	l.mu.Unlock()
}

// record is one Kafka record on its way through a lane. A long event is
// cut into units (items) that share it: the record is acknowledged when
// its last unit is persisted, and dead-lettered once if any unit fails.
type record struct {
	msg       Message
	env       envelope
	blocked   *blockedEvent // set when the defense policy blocked the event
	remaining atomic.Int32
	failed    atomic.Bool
	start     time.Time
}

func (r *record) isFailed() bool { return r.failed.Load() }

// item is one extraction unit of a record: the whole event, or (in a long
// lane) a run of its chunks.
type item struct {
	msg      Message
	rec      *record
	ev       *event.Decoded
	chunks   []chunk.Chunk
	chunkIdx []int // the event-wide index of each chunk
	// final is set on the item holding the record's last chunks: its last
	// part claims the event's key.
	final bool
	// split is set when the record has several items, so even a record
	// small enough for one part is stored in units.
	split  bool
	audit  []store.AuditRow
	inputs []extract.Input  // per chunk, with the conversation's earlier messages
	facts  [][]extract.Fact // per chunk
	embs   [][][]float32    // per chunk, per fact
	parts  []part           // how the item is persisted, set after embedding
}

// part is what one persist transaction of an item writes: chunks lo..hi-1
// of the item, or for a chunk with more facts than MaxFactsPerChunk, its
// facts factLo..factHi-1 (factHi 0 means every fact of the chunks).
type part struct {
	lo, hi         int
	factLo, factHi int
	// writeChunk is false for every part of a split chunk but its last,
	// so that StoredChunks lists a chunk only once all its facts are in.
	writeChunk bool
	key        string // events.event_key of the part
	unitOf     string // the event's key, unless this part claims it
	audit      bool   // the part that claims the event carries its audit rows
}

func (l *lane) prepareStage(out chan<- *item) {
	handle := func(env envelope) {
		if l.ctx.Err() != nil {
			return // aborted: drop unacknowledged, Kafka redelivers
		}
		if l.long && !l.p.keys.waitShared(l.ctx, env.key) {
			return
		}
		rec := &record{msg: env.msg, env: env, start: time.Now()}
		l.work(stagePrepare, &item{msg: env.msg, ev: &event.Decoded{}})
		items, rerr := l.prepare(l.ctx, rec)
		l.idle(stagePrepare)
		l.p.m.stageSeconds.WithLabelValues(stagePrepare).Observe(time.Since(rec.start).Seconds())
		if rerr != nil {
			l.failRecord(rec, rerr)
			return
		}
		if len(items) == 0 {
			return // the lane stopped
		}
		rec.remaining.Store(int32(len(items)))
		for _, it := range items {
			select {
			case out <- it:
			case <-l.ctx.Done():
				return
			}
		}
		l.p.m.depth.WithLabelValues("prepared").Set(float64(len(out)))
	}
	for {
		select {
		case env := <-l.in:
			handle(env)
			continue
		case <-l.ctx.Done():
			return
		case <-l.p.closing:
		}
		// Stopping: finish what was submitted, then end the lane.
		for {
			select {
			case env := <-l.in:
				handle(env)
			default:
				return
			}
		}
	}
}

func (l *lane) extractStage(in <-chan *item, out chan<- []*item) {
	size := l.p.cfg.BatchSize
	if l.long {
		size = 1
	}
	batch := make([]*item, 0, size)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	flush := func() {
		if len(batch) == 0 {
			return
		}
		ready := l.extractBatch(batch)
		if len(ready) > 0 {
			select {
			case out <- ready:
			case <-l.ctx.Done():
			}
		}
		batch = make([]*item, 0, size)
	}
	for {
		select {
		case it, ok := <-in:
			if !ok {
				flush()
				return
			}
			if len(batch) == 0 {
				timer.Reset(l.p.cfg.BatchWait)
			}
			batch = append(batch, it)
			if len(batch) >= size {
				timer.Stop()
				flush()
			}
		case <-timer.C:
			flush()
		}
	}
}

func (l *lane) persistStage(in <-chan []*item) {
	for batch := range in {
		if l.ctx.Err() != nil {
			continue
		}
		l.persistBatch(batch)
	}
}

// fail dead-letters the record of it (once, whichever unit failed).
func (l *lane) fail(it *item, e *event.Error) { l.failRecord(it.rec, e) }

func (l *lane) failRecord(rec *record, e *event.Error) {
	if !rec.failed.CompareAndSwap(false, true) {
		return
	}
	l.p.deadLetter(l, rec, e)
}

// unitDone acknowledges the record once its last unit is stored.
func (l *lane) unitDone(it *item) {
	rec := it.rec
	if rec.remaining.Add(-1) != 0 || rec.isFailed() {
		return
	}
	l.p.m.e2eSeconds.Observe(time.Since(rec.start).Seconds())
	l.p.m.out.Inc()
	l.p.finish(rec)
}

// finish acknowledges a record (persisted or dead-lettered) and releases
// its place in the key table.
func (p *Pipeline) finish(rec *record) {
	rec.msg.Ack()
	p.keys.leave(rec.env.key, rec.env.long)
}
