package recallapi

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memstream/memstream/internal/pgtest"
)

// A retain retried with the same Idempotency-Key (or Hindsight's
// operation_id) produces nothing new, stores its items once and answers as
// the first attempt did; the same key with another body is refused.
func TestRetainIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{persist: true})
	const path = "/v1/default/banks/b1/memories"
	body := `{"items":[{"content":"Alice moved to Lisbon"},{"content":"Bob fixed INC-1"}]}`
	first := e.retainWithKey(path, body, "key-1")
	if first.status != 200 || first.body["status"] != "persisted" {
		t.Fatalf("first: %d %s", first.status, first.raw)
	}
	// Concurrent and later retries: one operation, no second produce.
	var wg sync.WaitGroup
	answers := make([]resp, 4)
	for i := range answers {
		wg.Add(1)
		go func() { defer wg.Done(); answers[i] = e.retainWithKey(path, body, "key-1") }()
	}
	wg.Wait()
	for _, a := range answers {
		if a.status != 200 || a.body["operation_id"] != first.body["operation_id"] || a.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry: %d %s", a.status, a.raw)
		}
	}
	if n := len(e.pub.published()); n != 2 {
		t.Fatalf("published %d events for two items retried five times, want 2", n)
	}
	var stored int
	if err := pgtest.DB(e.st).QueryRow(context.Background(), `SELECT count(*) FROM events WHERE bank_id = 'b1'`).Scan(&stored); err != nil || stored != 2 {
		t.Fatalf("stored %d events (%v), want 2", stored, err)
	}
	if r := e.retainWithKey(path, `{"items":[{"content":"something else"}]}`, "key-1"); r.status != 409 || r.errField() != "Idempotency-Key" {
		t.Fatalf("same key, other body: %d %s", r.status, r.raw)
	}
	// Hindsight's operation_id is a key too.
	opBody := `{"items":[{"content":"Carol likes tea"}],"async":true,"operation_id":"2f1a1c55-5b55-4e38-9d0e-2a6ec3e1b8c1"}`
	a := e.call("POST", path, opBody, "")
	b := e.call("POST", path, opBody, "")
	if a.body["operation_id"] != "2f1a1c55-5b55-4e38-9d0e-2a6ec3e1b8c1" || b.body["operation_id"] != a.body["operation_id"] || len(e.pub.published()) != 3 {
		t.Fatalf("operation_id retries: %s / %s, %d published", a.raw, b.raw, len(e.pub.published()))
	}
	// An item event_id is the event's key: the pipeline stores it once
	// whatever the request.
	for range 2 {
		if r := e.call("POST", path, `{"items":[{"content":"Dan skis","event_id":"chat-42/7"}]}`, ""); r.status != 200 {
			t.Fatalf("event_id retain: %d %s", r.status, r.raw)
		}
	}
	if err := pgtest.DB(e.st).QueryRow(context.Background(), `SELECT count(*) FROM events WHERE bank_id = 'b1' AND event_key = 'chat-42/7'`).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("event_id stored %d times (%v), want 1", stored, err)
	}
}

func (e *env) retainWithKey(path, body, key string) resp {
	e.t.Helper()
	req, _ := http.NewRequest("POST", path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminKey)
	req.Header.Set("Idempotency-Key", key)
	return e.do(req)
}

// With async:false, an item the pipeline dead-letters is reported as such
// (422, its class), not as a success and not as "will still be ingested".
func TestRetainReportsDeadLetteredItem(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{retainWait: 5 * time.Second})
	done := make(chan resp, 1)
	go func() {
		done <- e.call("POST", "/v1/default/banks/b1/memories", `{"items":[{"content":"refused by the pipeline"}]}`, "")
	}()
	// Play the pipeline: dead-letter the record where it landed.
	waitUntil(t, "published", func() bool { return len(e.pub.published()) == 1 })
	if _, err := pgtest.DB(e.st).Exec(context.Background(), `INSERT INTO dead_letters (topic, partition, "offset", bank_id, error_class, error_stage)
		VALUES ('fake', 0, 0, 'b1', 'extract_failed', 'extract')`); err != nil {
		t.Fatal(err)
	}
	r := <-done
	items, _ := r.body["items"].([]any)
	if r.status != 422 || r.body["success"] != false || r.body["status"] != "dead_lettered" || r.errField() != "items[0]" ||
		!strings.Contains(r.errMessage(), "extract_failed") || len(items) != 1 || items[0].(map[string]any)["error_class"] != "extract_failed" {
		t.Fatalf("dead-lettered retain: %d %s", r.status, r.raw)
	}
	op := e.call("GET", "/v1/default/banks/b1/operations/"+r.body["operation_id"].(string), "", "")
	if op.body["status"] != "failed" || !strings.Contains(op.raw2(), "extract_failed") {
		t.Fatalf("operation: %s", op.raw)
	}
}
