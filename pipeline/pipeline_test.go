package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/memstream/memstream/broker"
	"github.com/memstream/memstream/consumer"
	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/pipeline"
	"github.com/memstream/memstream/store"
)

const (
	topic = "memstream.events"
	dlq   = "memstream.events.dlq"
)

type harness struct {
	t       *testing.T
	cluster *kfake.Cluster
	brokers []string
	st      *store.Store
	prod    *kgo.Client
	log     *slog.Logger
	url     string // the store's database, search_path set to the test's schema
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	url, _ := pgtest.Schema(t)
	return newHarnessURL(t, url)
}

// newHarnessURL migrates the store at url and starts a kfake cluster with
// the event and dead-letter topics.
func newHarnessURL(t *testing.T, url string) *harness {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	st, err := store.Open(ctx, store.Deps{Logger: log}, store.Config{URL: url, MaxConns: 8, Dim: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	pgtest.Attach(t, st, url)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, topic, dlq))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	prod, err := broker.NewProducer(broker.ProducerDeps{}, broker.ProducerConfig{Brokers: c.ListenAddrs(), ClientID: "test-producer"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	return &harness{t: t, cluster: c, brokers: c.ListenAddrs(), st: st, prod: prod, log: log, url: url}
}

type running struct {
	pipe   *pipeline.Pipeline
	cons   *consumer.Consumer
	cancel context.CancelFunc
	done   chan error // the consumer's Run
	pdone  chan error // the pipeline's Run
}

func (h *harness) start(group string) *running { return h.startWith(group, options{}) }

// stop drains gracefully, as the process does on SIGTERM: the consumer
// first (drain, commit, leave), then the pipeline, under one deadline.
func (r *running) stop(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.cons.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-r.done; err != nil {
		t.Fatal(err)
	}
	if err := r.pipe.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	r.cancel()
	if err := <-r.pdone; err != nil {
		t.Fatal(err)
	}
}

// crash abandons everything in flight without committing.
func (r *running) crash() {
	r.pipe.Abort()
	r.cons.Kill()
	r.cancel()
	<-r.done
	<-r.pdone
}

func flightEvent(bank string, i int) []byte {
	b, _ := json.Marshal(map[string]any{
		"bank_id": bank, "event_id": fmt.Sprintf("%s-e%05d", bank, i), "document_id": fmt.Sprintf("conv-%d", i%17),
		"messages": []map[string]string{
			{"role": "user", "name": "Alice", "content": fmt.Sprintf("I booked flight number QX%05d to Lisbon for the conference.", i), "timestamp": "2026-11-01T10:00:00Z"},
			{"role": "assistant", "content": "Noted, I will remind you the day before.", "timestamp": "2026-11-01T10:00:05Z"},
		},
	})
	return b
}

func (h *harness) produce(vals ...[]byte) {
	h.t.Helper()
	var recs []*kgo.Record
	for i, v := range vals {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i%13)), Value: v})
	}
	if err := h.prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) count(q string, args ...any) int {
	h.t.Helper()
	var n int
	if err := pgtest.DB(h.st).QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

func (h *harness) waitEvents(want int, timeout time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		n := h.count(`SELECT count(*) FROM events`) + h.count(`SELECT count(*) FROM dead_letters`)
		if n >= want {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("only %d of %d events after %s", n, want, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// snapshot counts every table that a replay must not grow.
func (h *harness) snapshot() map[string]int {
	out := map[string]int{}
	for _, t := range []string{"events", "documents", "chunks", "memory_units", "entities", "entity_aliases", "unit_entities", "memory_links", "defense_audit"} {
		out[t] = h.count("SELECT count(*) FROM " + t)
	}
	return out
}

func TestIngestExactlyOnceAndReplay(t *testing.T) {
	h := newHarness(t)
	// MEMSTREAM_TEST_EVENTS scales the run (the 10 000); the
	// default keeps make test fast under the race detector.
	n := 1500
	if v, err := strconv.Atoi(os.Getenv("MEMSTREAM_TEST_EVENTS")); err == nil && v > 0 {
		n = v
	}
	var vals [][]byte
	for i := 0; i < n; i++ {
		vals = append(vals, flightEvent("alice", i))
	}
	h.produce(vals...)
	r := h.start("g1")
	h.waitEvents(n, 4*time.Minute)
	r.stop(t)

	if got := h.count(`SELECT count(*) FROM events`); got != n {
		t.Fatalf("events = %d, want %d", got, n)
	}
	// Every event's flight number is a fact exactly once.
	if got := h.count(`SELECT count(DISTINCT substring(text from 'QX[0-9]{5}')) FROM memory_units WHERE text ~ 'QX[0-9]{5}'`); got != n {
		t.Fatalf("distinct flight facts = %d, want %d", got, n)
	}
	if dup := h.count(`SELECT count(*) FROM (SELECT substring(text from 'QX[0-9]{5}') f FROM memory_units WHERE text ~ 'QX[0-9]{5}' GROUP BY 1 HAVING count(*) > 1) d`); dup != 0 {
		t.Fatalf("%d flight facts stored twice", dup)
	}
	before := h.snapshot()
	if before["entities"] == 0 || before["unit_entities"] == 0 {
		t.Fatalf("no entities resolved: %v", before)
	}

	// Replay everything under a new group: nothing new anywhere, and no
	// event is extracted again (the pipeline acknowledges stored events
	// before the extractor sees them).
	watch := &failingExtractor{inner: offlineExtractor(t), poison: ""}
	r2 := h.startWith("g-replay", options{extractor: watch})
	h.waitCommitted("g-replay", n, 3*time.Minute)
	r2.stop(t)
	after := h.snapshot()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("replay changed %s: %d → %d", k, v, after[k])
		}
	}
	if c := watch.seen.Load(); c != 0 {
		t.Errorf("the replay sent %d stored chunks to the extractor again, want 0", c)
	}
}

// waitCommitted waits until the group has committed offsets covering want
// records of the topic: proof that the watermark moved past all of them.
func (h *harness) waitCommitted(group string, want int, timeout time.Duration) {
	h.t.Helper()
	adm := kadm.NewClient(h.prod)
	deadline := time.Now().Add(timeout)
	for {
		offs, err := adm.FetchOffsets(context.Background(), group)
		total := int64(0)
		if err == nil {
			offs.Each(func(o kadm.OffsetResponse) {
				if o.Topic == topic {
					total += o.At
				}
			})
		}
		if total >= int64(want) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("group %s committed %d of %d records", group, total, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestPoisonRecordsDeadLettered(t *testing.T) {
	h := newHarness(t)
	big := `{"bank_id":"alice","content":"` + strings.Repeat("x", 2<<20) + `"}`
	poison := map[string][]byte{
		event.ClassInvalidJSON:   []byte(`{"bank_id": "alice", "content": `),
		event.ClassInvalidUTF8:   append([]byte(`{"bank_id":"alice","content":"`), 0xff, 0xfe, '"', '}'),
		event.ClassOversized:     []byte(big),
		"missing_bank":           []byte(`{"content":"hello there, I live in Paris"}`),
		"both":                   []byte(`{"bank_id":"alice","content":"x","messages":[{"role":"user","content":"y"}]}`),
		"neither":                []byte(`{"bank_id":"alice"}`),
		event.ClassInvalidBankID: []byte(`{"bank_id":"../etc","content":"x"}`),
		"bad_role":               []byte(`{"bank_id":"alice","messages":[{"role":"robot","content":"y"}]}`),
	}
	wantClass := map[string]string{
		event.ClassInvalidJSON: event.ClassInvalidJSON, event.ClassInvalidUTF8: event.ClassInvalidUTF8, event.ClassOversized: event.ClassOversized,
		"missing_bank": event.ClassSchema, "both": event.ClassSchema, "neither": event.ClassSchema, event.ClassInvalidBankID: event.ClassInvalidBankID, "bad_role": event.ClassSchema,
	}
	var vals [][]byte
	byValue := map[string]string{}
	for name, v := range poison {
		vals = append(vals, v)
		byValue[string(v)] = name
	}
	for i := 0; i < 20; i++ {
		vals = append(vals, flightEvent("bob", i))
	}
	h.produce(vals...)
	// Keyed bank_id/document_id: the key names the bank when the value
	// cannot.
	keyedPoison := []byte(`{"content": "x"`)
	h.produceKeyed([]string{"carol/d1"}, [][]byte{keyedPoison})
	poison["keyed"] = keyedPoison
	byValue[string(keyedPoison)] = "keyed"
	wantClass["keyed"] = event.ClassInvalidJSON
	r := h.start("g-poison")
	h.waitCommitted("g-poison", len(vals)+1, time.Minute)
	r.stop(t)
	if got := h.count(`SELECT count(*) FROM events WHERE bank_id = 'bob'`); got != 20 {
		t.Fatalf("good events = %d, want 20", got)
	}
	// Dead letters of the decode stage count for the bank their raw JSON
	// or record key names (issue 15 item 7); only the records naming no
	// valid bank stay without one.
	for bank, want := range map[string]int{"alice": 6, "carol": 1} {
		st, err := h.st.BankStats(context.Background(), bank)
		if err != nil {
			t.Fatal(err)
		}
		if st.EventsDeadLettered != int64(want) {
			t.Errorf("bank %s: events_dead_lettered = %d, want %d", bank, st.EventsDeadLettered, want)
		}
	}
	if got := h.count(`SELECT count(*) FROM dead_letters WHERE bank_id IS NULL`); got != 2 {
		t.Errorf("%d dead letters without a bank, want 2 (missing and invalid bank id)", got)
	}
	// Every poison record is in the DLQ with its original value and headers.
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.brokers...), kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for len(seen) < len(poison) && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
			name, ok := byValue[string(rec.Value)]
			if !ok {
				t.Errorf("unexpected DLQ record %.60q", rec.Value)
				return
			}
			hdr := map[string]string{}
			for _, hd := range rec.Headers {
				hdr[hd.Key] = string(hd.Value)
			}
			if hdr[broker.HeaderErrorClass] != wantClass[name] {
				t.Errorf("%s: class %q, want %q", name, hdr[broker.HeaderErrorClass], wantClass[name])
			}
			for _, k := range []string{broker.HeaderErrorMessage, broker.HeaderErrorStage, broker.HeaderSourceTopic, broker.HeaderSourcePartition, broker.HeaderSourceOffset} {
				if hdr[k] == "" {
					t.Errorf("%s: header %s missing", name, k)
				}
			}
			seen[name] = true
		})
	}
	if len(seen) != len(poison) {
		t.Fatalf("DLQ has %d of %d poison records", len(seen), len(poison))
	}
}

func TestCrashMidStreamLosesAndDoublesNothing(t *testing.T) {
	h := newHarness(t)
	const n = 600
	var vals [][]byte
	for i := 0; i < n; i++ {
		vals = append(vals, flightEvent("carol", i))
	}
	h.produce(vals...)
	// Drop some commits: the watermark must still hold.
	var dropped atomic.Int32
	h.cluster.ControlKey(int16(kmsg.OffsetCommit), func(kmsg.Request) (kmsg.Response, error, bool) {
		h.cluster.KeepControl()
		if dropped.Add(1)%3 == 0 {
			return nil, fmt.Errorf("injected commit failure"), true
		}
		return nil, nil, false
	})
	r := h.start("g-crash")
	deadline := time.Now().Add(time.Minute)
	for h.count(`SELECT count(*) FROM events`) < n/3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	r.crash()
	r2 := h.start("g-crash")
	h.waitCommitted("g-crash", n, 2*time.Minute)
	r2.stop(t)
	if got := h.count(`SELECT count(*) FROM events WHERE bank_id = 'carol'`); got != n {
		t.Fatalf("events = %d, want %d", got, n)
	}
	if dup := h.count(`SELECT count(*) FROM (SELECT substring(text from 'QX[0-9]{5}') f FROM memory_units WHERE text ~ 'QX[0-9]{5}' GROUP BY 1 HAVING count(*) > 1) d`); dup != 0 {
		t.Fatalf("%d facts doubled after crash", dup)
	}
	if got := h.count(`SELECT count(DISTINCT substring(text from 'QX[0-9]{5}')) FROM memory_units WHERE text ~ 'QX[0-9]{5}'`); got != n {
		t.Fatalf("distinct facts = %d, want %d", got, n)
	}
}
