package kafkait

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/broker"
	"github.com/memstream/memstream/event"
)

// TestKafkaIngestExactlyOnceAndReplay: n events → exactly n persisted, each
// fact once; replaying the whole topic under a new group adds no row.
func TestKafkaIngestExactlyOnceAndReplay(t *testing.T) {
	h := newHarness(t, 4)
	const n = 1200
	h.produce(h.records("alice", 0, n)...)
	r := h.start("g1")
	h.waitCommitted("g1", n, 3*time.Minute)
	r.stop(t)
	h.checkExactlyOnce("alice", n)
	before := h.snapshot()
	if before["entities"] == 0 || before["unit_entities"] == 0 {
		t.Fatalf("no entities resolved: %v", before)
	}

	r2 := h.start("g-replay")
	h.waitCommitted("g-replay", n, 3*time.Minute)
	r2.stop(t)
	after := h.snapshot()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("replay changed %s: %d → %d", k, v, after[k])
		}
	}
}

// TestKafkaPoisonDeadLettered: malformed records go to the DLQ with the
// original value and the error and source headers; good records persist.
func TestKafkaPoisonDeadLettered(t *testing.T) {
	h := newHarness(t, 4)
	poison := map[string][]byte{
		event.ClassInvalidJSON:   []byte(`{"bank_id": "alice", "content": `),
		event.ClassInvalidUTF8:   append([]byte(`{"bank_id":"alice","content":"`), 0xff, 0xfe, '"', '}'),
		event.ClassOversized:     []byte(`{"bank_id":"alice","content":"` + strings.Repeat("x", 2<<20) + `"}`),
		event.ClassSchema:        []byte(`{"content":"hello there, I live in Paris"}`),
		event.ClassInvalidBankID: []byte(`{"bank_id":"../etc","content":"x"}`),
	}
	byValue := map[string]string{}
	var recs []*kgo.Record
	for class, v := range poison {
		byValue[string(v)] = class
		recs = append(recs, &kgo.Record{Topic: h.topic, Key: []byte("alice/poison"), Value: v,
			Headers: []kgo.RecordHeader{{Key: "trace-id", Value: []byte(class)}}})
	}
	recs = append(recs, h.records("bob", 0, 40)...)
	h.produce(recs...)
	r := h.start("g-poison")
	h.waitCommitted("g-poison", len(recs), 2*time.Minute)
	r.stop(t)
	if got := h.count(`SELECT count(*) FROM events WHERE bank_id = 'bob'`); got != 40 {
		t.Fatalf("good events = %d, want 40", got)
	}
	if got := h.count(`SELECT count(*) FROM dead_letters`); got != len(poison) {
		t.Errorf("dead_letters rows = %d, want %d", got, len(poison))
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(h.brokers...), kgo.ConsumeTopics(h.dlq),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for len(seen) < len(poison) && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
			class, ok := byValue[string(rec.Value)]
			if !ok {
				t.Errorf("unexpected DLQ record %.60q", rec.Value)
				return
			}
			hdr := map[string]string{}
			for _, hd := range rec.Headers {
				hdr[hd.Key] = string(hd.Value)
			}
			if hdr[broker.HeaderErrorClass] != class {
				t.Errorf("%s: class header %q", class, hdr[broker.HeaderErrorClass])
			}
			if hdr["trace-id"] != class {
				t.Errorf("%s: original header lost: %v", class, hdr)
			}
			if hdr[broker.HeaderSourceTopic] != h.topic {
				t.Errorf("%s: source topic header %q, want %q", class, hdr[broker.HeaderSourceTopic], h.topic)
			}
			for _, k := range []string{broker.HeaderErrorMessage, broker.HeaderErrorStage, broker.HeaderSourcePartition, broker.HeaderSourceOffset} {
				if hdr[k] == "" {
					t.Errorf("%s: header %s missing", class, k)
				}
			}
			if string(rec.Key) != "alice/poison" {
				t.Errorf("%s: key %q not kept", class, rec.Key)
			}
			seen[class] = true
		})
	}
	if len(seen) != len(poison) {
		t.Fatalf("DLQ has %d of %d poison records", len(seen), len(poison))
	}
}

// TestKafkaCrashMidStream: an ingester dies without committing or draining
// a third of the way in; its successor in the group redelivers the rest and
// nothing is lost or doubled.
func TestKafkaCrashMidStream(t *testing.T) {
	h := newHarness(t, 4)
	const n = 900
	h.produce(h.records("carol", 0, n)...)
	r := h.start("g-crash")
	h.waitCount(n/3, 2*time.Minute, `SELECT count(*) FROM events`)
	r.crash()
	r2 := h.start("g-crash")
	h.waitCommitted("g-crash", n, 3*time.Minute)
	r2.stop(t)
	h.checkExactlyOnce("carol", n)
}
