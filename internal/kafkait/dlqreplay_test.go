package kafkait

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/memstream/memstream/internal/proctest"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/broker"
	"github.com/memstream/memstream/event"
)

// dlqReplay runs `memstream dlq replay` against the harness's topics.
func (h *harness) dlqReplay(args ...string) string {
	h.t.Helper()
	cmd := exec.Command(proctest.Binary(h.t), append([]string{"dlq", "replay",
		"--set", "kafka.brokers=" + strings.Join(h.brokers, ","),
		"--set", "kafka.topics=" + h.topic,
		"--set", "kafka.dlq_topic=" + h.dlq}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		h.t.Fatalf("memstream dlq replay %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestKafkaDLQReplay dead-letters 50 good events (as a database outage
// would) and one poison record, drains the DLQ with `memstream dlq replay`,
// and checks that the good events are ingested exactly once while the
// poison record returns to the DLQ, where the next replay finds only it.
func TestKafkaDLQReplay(t *testing.T) {
	h := newHarness(t, 4)
	const n = 50
	dl, err := broker.NewDeadLetters(broker.DeadLetterDeps{Client: h.prod}, broker.DeadLetterConfig{Topic: h.dlq})
	if err != nil {
		t.Fatal(err)
	}
	recs := h.records("fern", 0, n)
	recs = append(recs, &kgo.Record{Topic: h.topic, Key: []byte("fern/broken"), Value: []byte(`{"bank_id":"fern","content":`)})
	for i, r := range recs {
		r.Partition, r.Offset = int32(i%4), int64(i)
		r.Headers = []kgo.RecordHeader{{Key: "trace-id", Value: []byte("t")}}
		if err := dl.DeadLetter(context.Background(), r,
			&event.Error{Class: "store_unavailable", Stage: "persist", Msg: "connection refused"}, ""); err != nil {
			t.Fatal(err)
		}
	}

	if out := h.dlqReplay("--bank", "nobody"); !strings.Contains(out, "replayed 0 records") || !strings.Contains(out, "51 of other banks") {
		t.Fatalf("replay of an absent bank: %s", out)
	}
	if out := h.dlqReplay(); !strings.Contains(out, "replayed 51 records") {
		t.Fatalf("first replay: %s", out)
	}
	r := h.start("g-dlq")
	h.waitCommitted("g-dlq", n+1, 3*time.Minute)
	r.stop(t)
	h.checkExactlyOnce("fern", n)

	// The poison record failed again and is back in the DLQ, after the
	// offsets the first replay committed: only it is replayed now.
	if out := h.dlqReplay(); !strings.Contains(out, "replayed 1 records") {
		t.Fatalf("second replay: %s", out)
	}
	if out := h.dlqReplay(); !strings.Contains(out, "replayed 0 records") {
		t.Fatalf("third replay found work although nothing new was dead-lettered: %s", out)
	}
	// --from-offset 0 replays from the start regardless of the group.
	if out := h.dlqReplay("--from-offset", "0", "--limit", "10"); !strings.Contains(out, "replayed 10 records") {
		t.Fatalf("--from-offset 0 --limit 10: %s", out)
	}
}
