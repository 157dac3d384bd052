package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/memstream/memstream/internal/wait"

	"github.com/memstream/memstream/chunk"
	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/extract"
	"github.com/memstream/memstream/store"
)

// prepare decodes, applies defense and chunks one record, and cuts the
// event of a long lane into units of at most UnitChunks chunks. It returns
// nil, nil when the lane stopped meanwhile.
func (l *lane) prepare(ctx context.Context, rec *record) ([]*item, *event.Error) {
	p, long := l.p, l.long
	m := rec.msg
	ev, err := event.Decode(m.Record, p.cfg.MaxEventBytes)
	if err != nil {
		var re *event.Error
		if !errors.As(err, &re) {
			re = event.Errorf(event.ClassSchema, "decode", "%v", err)
		}
		return nil, re
	}
	it := &item{msg: m, rec: rec, ev: ev, final: true}
	// Without the bank's policy the event cannot be checked: falling back
	// to a default could store what the bank blocks, so the record stalls
	// until the policy can be read (or is dead-lettered if it is invalid).
	var policy defense.Policy
	delay := 100 * time.Millisecond
	for {
		var perr error
		policy, perr = p.deps.Policies.Policy(ctx, ev.BankID)
		if perr == nil {
			break
		}
		var re *event.Error
		if errors.As(perr, &re) {
			return nil, re
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		stalled := &item{msg: m, rec: rec, ev: ev}
		l.stall(stagePrepare, stalled, perr, classify(perr, faultTransient))
		p.log.Warn("defense policy unavailable; the record waits for it", slog.String("bank", ev.BankID), slog.Any("error", perr))
		if !wait.Sleep(ctx, wait.Jitter(delay)) {
			return nil, nil
		}
		delay = min(delay*2, 10*time.Second)
	}
	var blocked *event.Error
	// check applies the policy to one stored text. After a block it goes
	// on over the remaining texts: their masked forms make the redacted
	// dead letter, and their audit rows are kept too.
	check := func(text string) string {
		if text == "" {
			return text
		}
		res, audit, cerr := p.deps.Gate.Check(ev.Key, text, policy)
		for _, a := range audit {
			it.audit = append(it.audit, store.AuditRow{Label: a.Label, Action: string(a.Action), Fingerprint: a.Fingerprint})
		}
		if blocked == nil {
			var be *defense.BlockedError
			switch {
			case errors.As(cerr, &be):
				blocked = event.Errorf(event.ClassBlockedByPolicy, "defense", "%v", cerr)
			case cerr != nil:
				blocked = event.Errorf(event.ClassBlockedByPolicy, "defense", "defense check failed: %v", cerr)
			case res.Blocked:
				blocked = event.Errorf(event.ClassBlockedByPolicy, "defense", "blocked by policy: %s", strings.Join(res.BlockedLabels, ", "))
			}
		}
		if cerr != nil && res.Text == "" {
			// The gate failed without a masked text: keep nothing of it.
			return defense.RedactionMarker("unscanned")
		}
		return res.Text
	}
	msgs := make([]chunk.Message, 0, len(ev.Messages))
	for i, dm := range ev.Messages {
		text := check(dm.Content)
		ev.Messages[i].Content = text
		msgs = append(msgs, chunk.Message{Index: dm.Index, Role: dm.Role, Name: dm.Name, Content: text, Timestamp: dm.At})
	}
	// Context, tags and metadata values are stored with the document and
	// every fact, so they pass the same gate as the messages.
	ev.Context = check(ev.Context)
	for i, tag := range ev.Tags {
		ev.Tags[i] = check(tag)
	}
	for _, k := range slices.Sorted(maps.Keys(ev.Metadata)) {
		ev.Metadata[k] = check(ev.Metadata[k])
	}
	if blocked != nil {
		rec.blocked = &blockedEvent{ev: ev, audit: it.audit}
		return nil, blocked
	}
	it.chunks = p.splitter.Split(msgs)
	it.chunkIdx = make([]int, len(it.chunks))
	for i := range it.chunkIdx {
		it.chunkIdx[i] = i
	}
	if !long || len(it.chunks) <= p.cfg.UnitChunks {
		return []*item{it}, nil
	}
	return p.units(ctx, it), nil
}

// units cuts a long event into extraction units of UnitChunks chunks,
// leaving out the chunks a previous run already stored, so a restart
// resumes where it stopped. Row ids derive from the event key and
// event-wide chunk indexes, so they are the same whatever the cut.
func (p *Pipeline) units(ctx context.Context, it *item) []*item {
	stored, err := p.deps.Store.StoredChunks(ctx, it.ev.BankID, it.ev.Key)
	if err != nil {
		// Persisting again is idempotent; only the work is repeated.
		p.log.Warn("could not list stored chunks; the long event starts over", slog.String("bank", it.ev.BankID),
			slog.String("event_id", it.ev.Key), slog.Any("error", err))
		stored = nil
	}
	var chunks []chunk.Chunk
	var idx []int
	for i, c := range it.chunks {
		// The event's last chunk always goes: its unit claims the event.
		if !stored[i] || i == len(it.chunks)-1 {
			chunks, idx = append(chunks, c), append(idx, i)
		}
	}
	if len(stored) > 0 {
		p.m.resumedChunks.Add(float64(len(it.chunks) - len(chunks)))
	}
	var out []*item
	for lo := 0; lo < len(chunks); lo += p.cfg.UnitChunks {
		hi := min(lo+p.cfg.UnitChunks, len(chunks))
		out = append(out, &item{msg: it.msg, rec: it.rec, ev: it.ev, chunks: chunks[lo:hi], chunkIdx: idx[lo:hi],
			final: hi == len(chunks), split: true, audit: it.audit})
	}
	return out
}

// UnitKey is the events key of a unit of an event stored in several: the
// event key, "#c", the event-wide index of the unit's first chunk, and
// for the parts of one dense chunk, "p" and the part number. Units are
// cut by chunk index and fact count, so a restart that extracts the same
// facts cuts the same units.
func UnitKey(eventKey string, firstChunk, part int) string {
	if part < 0 {
		return fmt.Sprintf("%s#c%d", eventKey, firstChunk)
	}
	return fmt.Sprintf("%s#c%dp%d", eventKey, firstChunk, part)
}

// plan cuts an extracted item into parts: runs of whole chunks of at most
// MaxFactsPerEvent facts, and a chunk of more than MaxFactsPerChunk facts
// in parts of that many. A record of one part claims its event key; in a
// record of several, the last part of its final item claims it and every
// other part its own key.
func (p *Pipeline) plan(it *item) {
	var parts []part
	cur, curFacts := part{writeChunk: true, key: "", factHi: 0}, 0
	flush := func(hi int) {
		if hi > cur.lo {
			cur.hi = hi
			parts = append(parts, cur)
		}
		cur, curFacts = part{lo: hi, writeChunk: true}, 0
	}
	for ci := range it.chunks {
		n := len(it.facts[ci])
		if n > p.cfg.MaxFactsPerChunk {
			flush(ci)
			for f, j := 0, 0; f < n; f, j = f+p.cfg.MaxFactsPerChunk, j+1 {
				hi := min(f+p.cfg.MaxFactsPerChunk, n)
				parts = append(parts, part{lo: ci, hi: ci + 1, factLo: f, factHi: hi, writeChunk: hi == n, key: UnitKey(it.ev.Key, it.chunkIdx[ci], j)})
			}
			cur.lo = ci + 1
			continue
		}
		if curFacts+n > p.cfg.MaxFactsPerEvent {
			flush(ci)
		}
		curFacts += n
	}
	flush(len(it.chunks))
	for i := range parts {
		if parts[i].key == "" {
			parts[i].key = UnitKey(it.ev.Key, it.chunkIdx[parts[i].lo], -1)
		}
		parts[i].unitOf = it.ev.Key
	}
	if len(parts) == 0 {
		// No chunks at all (an event of empty messages): one empty part
		// still claims the event.
		parts = []part{{writeChunk: true}}
	}
	if it.final {
		last := &parts[len(parts)-1]
		last.key, last.unitOf, last.audit = it.ev.Key, "", true
	}
	if len(parts) > 1 || it.split {
		p.m.units.Add(float64(len(parts)))
	}
	it.parts = parts
}

// extractBatch runs extraction and embedding for a batch, per record:
// records that fail go to the dead-letter topic or stall, the rest go on.
func (l *lane) extractBatch(batch []*item) []*item {
	if l.ctx.Err() != nil {
		return nil
	}
	batch = l.skipStored(batch)
	if len(batch) == 0 {
		return nil
	}
	// The inputs, with each conversation's earlier messages, are built
	// once: a retry of some records must not see their own text as
	// history.
	inputs := l.p.inputs(l.ctx, batch)
	k := 0
	for _, it := range batch {
		it.inputs = inputs[k : k+len(it.chunks)]
		k += len(it.chunks)
	}
	batch = l.runStage(stageExtract, faultUnknown, batch, l.p.extract)
	if len(batch) == 0 {
		return nil
	}
	batch = l.runStage(stageEmbed, faultUnknown, batch, l.p.embed)
	n := 0
	for _, it := range batch {
		for _, fs := range it.facts {
			n += len(fs)
		}
		l.p.plan(it)
	}
	l.p.m.facts.Add(float64(n))
	return batch
}

// extract fills it.facts for every item, reporting per-record failures.
func (p *Pipeline) extract(ctx context.Context, items []*item) error {
	var inputs []extract.Input
	owner := make([]int, 0, len(items))
	for i, it := range items {
		inputs = append(inputs, it.inputs...)
		for range it.inputs {
			owner = append(owner, i)
		}
	}
	facts, err := p.deps.Extractor.Extract(ctx, inputs)
	var ibe *extract.BatchError
	if err != nil && !errors.As(err, &ibe) {
		return err
	}
	if len(facts) != len(inputs) {
		return fmt.Errorf("extractor returned %d results for %d inputs", len(facts), len(inputs))
	}
	be := newBatchError()
	if ibe != nil {
		ibe.Each(func(i int, err error) { be.fail(items[owner[i]], err) })
	}
	k := 0
	for _, it := range items {
		it.facts = facts[k : k+len(it.chunks)]
		k += len(it.chunks)
	}
	return be.orNil()
}

// embed fills it.embs for every item.
func (p *Pipeline) embed(ctx context.Context, items []*item) error {
	var texts []string
	for _, it := range items {
		for _, fs := range it.facts {
			for _, f := range fs {
				texts = append(texts, f.EmbeddingText())
			}
		}
	}
	var vecs [][]float32
	if len(texts) > 0 {
		var err error
		if vecs, err = p.deps.Embedder.EmbedDocuments(ctx, texts); err != nil {
			return err
		}
		if len(vecs) != len(texts) {
			return fmt.Errorf("embedder returned %d vectors for %d texts", len(vecs), len(texts))
		}
	}
	k := 0
	for _, it := range items {
		it.embs = make([][][]float32, len(it.facts))
		for ci, fs := range it.facts {
			it.embs[ci] = vecs[k : k+len(fs)]
			k += len(fs)
		}
	}
	return nil
}

// skipStored acknowledges the units of a batch that are already in
// PostgreSQL (a replay, or a redelivery after a crash) without extracting
// them again: their facts are durably committed, which is all an
// acknowledgement promises. Persist would skip them anyway; this saves the
// extraction and embedding work. On a lookup error the batch goes on whole.
func (l *lane) skipStored(batch []*item) []*item {
	banks, keys := make([]string, len(batch)), make([]string, len(batch))
	for i, it := range batch {
		banks[i], keys[i] = it.ev.BankID, it.ev.Key
	}
	stored, err := l.p.deps.Store.ExistingEvents(l.ctx, banks, keys)
	if err != nil || len(stored) == 0 {
		return batch
	}
	fresh := batch[:0:0]
	for _, it := range batch {
		if stored[it.ev.BankID+"\x00"+it.ev.Key] {
			l.p.m.duplicates.Inc()
			l.unitDone(it)
			continue
		}
		fresh = append(fresh, it)
	}
	return fresh
}

// persistBatch resolves entities and writes the batch: the records of one
// part together in one transaction, the parts of a record stored in units
// one transaction each. Resolution and database outages stall the batch
// until they pass; a record the database rejects is found by writing the
// records one by one, and only it is dead-lettered.
func (l *lane) persistBatch(batch []*item) {
	recs := map[*item][]store.EventRecord{}
	batch = l.runStage(stageResolve, faultTransient, batch, func(ctx context.Context, items []*item) error {
		return l.p.buildRecords(ctx, items, recs)
	})
	var group []*item
	flush := func() {
		if len(group) == 0 {
			return
		}
		l.runStage(stagePersist, faultTransient, group, func(ctx context.Context, items []*item) error {
			evs := make([]store.EventRecord, len(items))
			for i, it := range items {
				evs[i] = recs[it][0]
			}
			if err := l.persist(ctx, evs); err != nil {
				return err
			}
			for _, it := range items {
				l.unitDone(it)
			}
			return nil
		})
		group = nil
	}
	for _, it := range batch {
		if len(recs[it]) == 1 && !it.split {
			group = append(group, it)
			continue
		}
		flush()
		l.persistParts(it, recs[it])
	}
	flush()
}

// persistParts writes the parts of an item one transaction each, after
// dropping the parts whose chunks a previous run already stored.
func (l *lane) persistParts(it *item, recs []store.EventRecord) {
	stored, err := l.p.deps.Store.StoredChunks(l.ctx, it.ev.BankID, it.ev.Key)
	if err != nil {
		stored = nil // writing again is idempotent
	}
	for i, rec := range recs {
		pt := it.parts[i]
		if i < len(recs)-1 || !it.final {
			done := len(stored) > 0
			for uci := pt.lo; uci < pt.hi && done; uci++ {
				done = stored[it.chunkIdx[uci]]
			}
			if done {
				continue
			}
		}
		ok := l.runStage(stagePersist, faultTransient, []*item{it}, func(ctx context.Context, _ []*item) error {
			return l.persist(ctx, []store.EventRecord{rec})
		})
		if len(ok) == 0 {
			return // dead-lettered, or the lane stopped
		}
	}
	l.unitDone(it)
}

func (l *lane) persist(ctx context.Context, evs []store.EventRecord) error {
	res, err := l.p.deps.Store.PersistBatch(ctx, evs)
	if err != nil {
		return err
	}
	l.p.m.persisted.Add(float64(res.NewEvents))
	l.p.m.duplicates.Add(float64(res.Duplicates))
	return nil
}

// deadLetter writes the record to the dead-letter topic, retrying until
// Kafka acknowledges it, then acknowledges the record. A record blocked by
// the defense policy goes there redacted: the topic keeps its key, headers
// and the fingerprints of what was found, never the secret.
func (p *Pipeline) deadLetter(l *lane, rec *record, e *event.Error) {
	p.m.deadLettered.WithLabelValues(e.Class).Inc()
	m := rec.msg
	bank := ""
	if rec.blocked != nil {
		bank = rec.blocked.ev.BankID
		p.recordBlockedAudit(l.ctx, rec.blocked)
		m = Message{Record: redactedRecord(m.Record, rec.blocked), Ack: m.Ack}
	} else {
		// A record that did not decode still counts for the bank it names.
		bank = event.BankOf(m.Record.Key, m.Record.Value)
	}
	delay := 100 * time.Millisecond
	stall := &item{msg: m, rec: rec, ev: &event.Decoded{Event: event.Event{BankID: bank}}}
	l.work(stageDeadLetter, stall)
	for {
		err := p.deps.DeadLetter.DeadLetter(l.ctx, m.Record, e, bank)
		if err == nil {
			break
		}
		if l.ctx.Err() != nil {
			l.idle(stageDeadLetter)
			return
		}
		l.stall(stageDeadLetter, stall, err, faultTransient)
		p.log.Warn("dead-letter write failed; retrying", slog.String("topic", m.Record.Topic),
			slog.Int("partition", int(m.Record.Partition)), slog.Int64("offset", m.Record.Offset), slog.Any("error", err))
		if !wait.Sleep(l.ctx, wait.Jitter(delay)) {
			l.idle(stageDeadLetter)
			return
		}
		delay = min(delay*2, 5*time.Second)
	}
	l.idle(stageDeadLetter)
	// Counting the dead letter in Postgres is for stats only; the record
	// itself is safe in the dead-letter topic.
	if err := p.deps.Store.RecordDeadLetter(l.ctx, m.Record.Topic, m.Record.Partition, m.Record.Offset, bank, e.Class, e.Stage); err != nil {
		p.log.Warn("could not count dead letter", slog.Any("error", err))
	}
	p.log.Info("record dead-lettered", slog.String("topic", m.Record.Topic), slog.Int("partition", int(m.Record.Partition)),
		slog.Int64("offset", m.Record.Offset), slog.String("class", e.Class), slog.String("stage", e.Stage), slog.String("bank", bank))
	p.finish(rec)
}

// recordBlockedAudit writes the audit rows of an event that goes to the
// dead-letter topic instead of Postgres. Like the dead-letter count it is
// best effort: the record itself is safe in the DLQ, and stalling the
// partition on an audit write would be worse than a logged gap.
func (p *Pipeline) recordBlockedAudit(ctx context.Context, b *blockedEvent) {
	if len(b.audit) == 0 {
		return
	}
	if err := p.deps.Store.RecordAudit(ctx, b.ev.BankID, b.ev.Key, b.audit); err != nil {
		p.log.Warn("could not record defense audit of a dead-lettered event", slog.String("bank", b.ev.BankID),
			slog.String("event_id", b.ev.Key), slog.Any("error", err))
	}
}
