package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/event"
)

const (
	tEvents = "memstream.events"
	tDLQ    = "memstream.events.dlq"
)

// seedDLQ dead-letters n records through the real dead-letter writer:
// even ones belong to bank alice, odd ones to bob, each with a trace header.
func seedDLQ(t *testing.T, cl *kgo.Client, n int) {
	t.Helper()
	dl, err := NewDeadLetters(DeadLetterDeps{Client: cl}, DeadLetterConfig{Topic: tDLQ})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		bank := "alice"
		if i%2 == 1 {
			bank = "bob"
		}
		v, _ := json.Marshal(map[string]any{"bank_id": bank, "event_id": fmt.Sprintf("e%03d", i), "content": "hello"})
		src := &kgo.Record{Topic: tEvents, Partition: int32(i % 3), Offset: int64(100 + i),
			Key: RecordKey(bank, fmt.Sprintf("doc%d", i)), Value: v,
			Headers: []kgo.RecordHeader{{Key: "trace-id", Value: []byte(fmt.Sprintf("t%03d", i))}}}
		err := dl.DeadLetter(context.Background(), src,
			&event.Error{Class: event.ClassSchema, Stage: "decode", Msg: "test failure"}, "")
		if err != nil {
			t.Fatal(err)
		}
	}
}

// readTopic returns every record of topic from the start.
func readTopic(t *testing.T, brokers []string, topic string, want int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < want && ctx.Err() == nil {
		out = append(out, cl.PollFetches(ctx).Records()...)
	}
	// A short extra poll catches records beyond want, which would be a bug.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	out = append(out, cl.PollFetches(ctx2).Records()...)
	return out
}

func TestReplayDLQ(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, tEvents, tDLQ))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	cl, err := NewProducer(ProducerDeps{}, ProducerConfig{Brokers: brokers, ClientID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 30
	seedDLQ(t, cl, n)
	dlqRecs := readTopic(t, brokers, tDLQ, n)
	if len(dlqRecs) != n {
		t.Fatalf("DLQ holds %d records, want %d", len(dlqRecs), n)
	}
	// Per partition, the alice records before the first bob record are the
	// ones a bank-filtered run may commit past.
	prefix := 0
	byPart := map[int32][]*kgo.Record{}
	for _, r := range dlqRecs {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	for _, rs := range byPart {
		for _, r := range rs {
			if recordBank(r) != "alice" {
				break
			}
			prefix++
		}
	}
	cfg := ReplayConfig{Brokers: brokers, ClientID: "test-replay", DLQTopic: tDLQ, DefaultTopic: tEvents,
		Group: DLQReplayGroup, FromOffset: -1, IdleTimeout: 2 * time.Second}
	ctx := context.Background()

	// 1. Only alice: 15 replayed, 15 bob records left in place.
	alice := cfg
	alice.Bank = "alice"
	res, err := ReplayDLQ(ctx, cl, alice)
	if err != nil {
		t.Fatal(err)
	}
	if res.Replayed != n/2 || res.Skipped != n/2 {
		t.Fatalf("bank run: replayed %d skipped %d, want %d and %d", res.Replayed, res.Skipped, n/2, n/2)
	}
	got := readTopic(t, brokers, tEvents, n/2)
	if len(got) != n/2 {
		t.Fatalf("events topic holds %d records after the bank run, want %d", len(got), n/2)
	}
	for _, r := range got {
		if recordBank(r) != "alice" {
			t.Fatalf("bank run replayed a %s record", recordBank(r))
		}
		// The original headers, plus the original record's position as
		// the idempotency key of an event replayed more than once.
		if len(r.Headers) != 2 || r.Headers[0].Key != "trace-id" || r.Headers[1].Key != event.HeaderIdempotencyKey ||
			!strings.HasPrefix(string(r.Headers[1].Value), tEvents+"/") {
			t.Fatalf("replayed headers = %v, want the original trace-id and the idempotency key", r.Headers)
		}
		if !strings.HasPrefix(string(r.Key), "alice/doc") {
			t.Fatalf("replayed key %q lost", r.Key)
		}
	}

	// 2. Unfiltered: resumes at each partition's first bob record.
	res, err = ReplayDLQ(ctx, cl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := n - prefix; res.Replayed != want || res.Skipped != 0 {
		t.Fatalf("resumed run: replayed %d skipped %d, want %d and 0", res.Replayed, res.Skipped, want)
	}

	// 3. The group is at the end: nothing more.
	res, err = ReplayDLQ(ctx, cl, cfg)
	if err != nil || res.Replayed != 0 {
		t.Fatalf("third run: replayed %d, err %v; want 0", res.Replayed, err)
	}
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, DLQReplayGroup)
	if err != nil {
		t.Fatal(err)
	}
	var committed int64
	offs.Each(func(o kadm.OffsetResponse) { committed += o.At })
	if committed != n {
		t.Fatalf("group %s committed %d offsets in total, want %d", DLQReplayGroup, committed, n)
	}

	// 4. --from-offset 0 --limit 4: exactly four, from the start again.
	again := cfg
	again.FromOffset, again.Limit = 0, 4
	res, err = ReplayDLQ(ctx, cl, again)
	if err != nil || res.Replayed != 4 {
		t.Fatalf("limited rerun: replayed %d, err %v; want 4", res.Replayed, err)
	}
	all := readTopic(t, brokers, tEvents, n/2+n-prefix+4)
	if want := n/2 + n - prefix + 4; len(all) != want {
		t.Fatalf("events topic holds %d records, want %d", len(all), want)
	}
	for _, r := range all {
		if r.Topic != tEvents {
			t.Fatalf("record replayed to %s", r.Topic)
		}
		for _, h := range r.Headers {
			if strings.HasPrefix(h.Key, "memstream.error.") || strings.HasPrefix(h.Key, "memstream.source.") {
				t.Fatalf("header %s survived the replay", h.Key)
			}
		}
	}
}
