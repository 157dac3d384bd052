package pipeline_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/broker"
)

// An event with update_mode "replace" straight from Kafka replaces its
// document when it is stored: the earlier events' chunks and facts go, its
// own stay; a replay of it deletes nothing more.
func TestReplaceEventReplacesItsDocument(t *testing.T) {
	h := newHarness(t)
	rec := func(id, text, mode string) *kgo.Record {
		v, _ := json.Marshal(map[string]any{"bank_id": "rep", "event_id": id, "document_id": "profile", "update_mode": mode,
			"messages": []map[string]string{{"role": "user", "name": "Alice", "content": text}}})
		return &kgo.Record{Topic: topic, Key: broker.RecordKey("rep", "profile"), Value: v}
	}
	recs := []*kgo.Record{rec("p-1", "I live in Porto and work at the harbour.", ""), rec("p-2", "I play the violin every evening.", "append"),
		rec("p-3", "I moved to Lisbon and work at a bakery now.", "replace")}
	if err := h.prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r := h.start("g-replace")
	h.waitCommitted("g-replace", len(recs), 2*time.Minute)
	r.stop(t)
	if n := h.count(`SELECT count(*) FROM chunks WHERE bank_id = 'rep' AND event_key <> 'p-3'`); n != 0 {
		t.Fatalf("%d chunks of the replaced events remain", n)
	}
	if n := h.count(`SELECT count(*) FROM memory_units WHERE bank_id = 'rep' AND source_event_id <> 'p-3'`); n != 0 {
		t.Fatalf("%d facts of the replaced events remain", n)
	}
	if n := h.count(`SELECT count(*) FROM memory_units WHERE bank_id = 'rep' AND source_event_id = 'p-3'`); n == 0 {
		t.Fatal("the replacing event stored no fact")
	}
}
