package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/broker"
	"github.com/memstream/memstream/event"
)

// A DLQ replay that crashes between producing and committing replays the
// same records again on its next run. For events without an event_id the
// copies used to get new offset-derived keys, so every copy was stored:
// facts doubled (issue 15 item 9). The replay now carries the original
// record's topic/partition/offset as the idempotency key, so the copies
// collapse into one event.
func TestDLQReplayedTwiceStoresOnce(t *testing.T) {
	h := newHarness(t)
	const n = 12
	dl, err := broker.NewDeadLetters(broker.DeadLetterDeps{Client: h.prod}, broker.DeadLetterConfig{Topic: dlq})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		v, _ := json.Marshal(map[string]any{"bank_id": "rita", "document_id": fmt.Sprintf("conv-%d", i),
			"messages": []map[string]string{{"role": "user", "name": "Alice", "content": fmt.Sprintf("I booked flight number QX%05d to Lisbon for the conference.", i)}}})
		// As the pipeline dead-letters a record during a database outage.
		src := &kgo.Record{Topic: topic, Partition: int32(i % 4), Offset: int64(1000 + i), Key: broker.RecordKey("rita", fmt.Sprintf("conv-%d", i)), Value: v}
		if err := dl.DeadLetter(context.Background(), src, event.Errorf(event.ClassPersistFailed, "persist", "connection refused"), "rita"); err != nil {
			t.Fatal(err)
		}
	}
	cfg := broker.ReplayConfig{Brokers: h.brokers, ClientID: "replay-test", DLQTopic: dlq, DefaultTopic: topic,
		Group: broker.DLQReplayGroup, FromOffset: -1, IdleTimeout: 2 * time.Second}
	if res, err := broker.ReplayDLQ(context.Background(), h.prod, cfg); err != nil || res.Replayed != n {
		t.Fatalf("first replay: %+v, %v", res, err)
	}
	// The crash: the next run starts again from the first offset, as if
	// the commit had never happened.
	again := cfg
	again.FromOffset = 0
	if res, err := broker.ReplayDLQ(context.Background(), h.prod, again); err != nil || res.Replayed != n {
		t.Fatalf("second replay: %+v, %v", res, err)
	}
	r := h.start("g-replay-twice")
	h.waitCommitted("g-replay-twice", 2*n, 2*time.Minute)
	r.stop(t)
	h.assertFlightsOnce("rita", n)
	// The key is the original record's position, whichever copy won.
	if got := h.count(`SELECT count(*) FROM events WHERE bank_id = 'rita' AND event_key LIKE $1`, topic+"/%/10%"); got != n {
		t.Fatalf("%d events keyed by their original offset, want %d", got, n)
	}
}
