package recallapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/memstream/memstream/internal/pgtest"
)

func TestRetainWaitsUntilPersisted(t *testing.T) {
	t.Parallel()
	const delay = 400 * time.Millisecond
	e := newEnv(t, envOpts{persist: true, delay: delay, retainWait: 10 * time.Second})
	start := time.Now()
	r := e.call("POST", "/v1/default/banks/b1/memories",
		`{"items":[{"content":"Alice moved to Lisbon","document_id":"conv-1","tags":["t"],"timestamp":"2026-03-01T10:00:00Z","metadata":{"k":"v"}},
		{"content":"Bob likes tea"}],"async":false}`, "")
	took := time.Since(start)
	if r.status != 200 {
		t.Fatalf("retain: %d %s", r.status, r.raw)
	}
	if took < delay {
		t.Fatalf("retain answered after %s, before the events were persisted (%s)", took, delay)
	}
	if r.body["success"] != true || r.body["bank_id"] != "b1" || r.body["items_count"].(float64) != 2 || r.body["async"] != false || r.body["operation_id"] == "" {
		t.Fatalf("retain answer: %s", r.raw)
	}
	evs := e.pub.published()
	if len(evs) != 2 {
		t.Fatalf("published %d events", len(evs))
	}
	if ev := evs[0]; ev.BankID != "b1" || ev.DocumentID != "conv-1" || ev.Content != "Alice moved to Lisbon" ||
		ev.Timestamp != "2026-03-01T10:00:00Z" || ev.Metadata["k"] != "v" || len(ev.Tags) != 1 || ev.EventID == "" {
		t.Fatalf("event 0: %+v", ev)
	}
	if evs[1].Timestamp == "" || evs[0].EventID == evs[1].EventID {
		t.Fatalf("event 1: %+v", evs[1])
	}
	// The answer came after the rows were there.
	n, err := e.st.EventsPersisted(context.Background(), "b1", []string{evs[0].EventID, evs[1].EventID})
	if err != nil || n != 2 {
		t.Fatalf("persisted %d of 2 (%v)", n, err)
	}
}

func TestRetainTimesOutWhenNotPersisted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{retainWait: 300 * time.Millisecond})
	start := time.Now()
	r := e.call("POST", "/v1/default/banks/b1/memories", `{"items":[{"content":"never ingested"}]}`, "")
	// Not a success (nothing is stored yet) and not an error (Kafka has
	// it): 202 with each item's outcome, pending.
	items, _ := r.body["items"].([]any)
	if r.status != 202 || r.body["success"] != false || r.body["status"] != "pending" || len(items) != 1 ||
		items[0].(map[string]any)["status"] != "pending" || !strings.Contains(r.errMessage(), "http.retain_wait") {
		t.Fatalf("retain without ingest: %d %s", r.status, r.raw)
	}
	if took := time.Since(start); took < 300*time.Millisecond || took > 5*time.Second {
		t.Fatalf("timed out after %s, want about 300ms", took)
	}
	if len(e.pub.published()) != 1 {
		t.Fatal("the item was not published")
	}
	// async:true does not wait.
	r = e.call("POST", "/v1/default/banks/b1/memories", `{"items":[{"content":"fire and forget"}],"async":true}`, "")
	if r.status != 200 || r.body["async"] != true {
		t.Fatalf("async retain: %d %s", r.status, r.raw)
	}
}

func TestRetainBlockedByPolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{persist: true})
	if r := e.call("PUT", "/v1/default/banks/b1", `{"defense_policy":{"default":"block"}}`, ""); r.status != 200 {
		t.Fatalf("set policy: %d %s", r.status, r.raw)
	}
	secret := "sk-proj-" + strings.Repeat("Ab3dE5gH7jK9", 4)
	if len(secret) != len("sk-proj-")+48 {
		t.Fatalf("secret is %d long", len(secret))
	}
	r := e.call("POST", "/v1/default/banks/b1/memories",
		`{"items":[{"content":"harmless"},{"content":"my key is `+secret+` keep it"}]}`, "")
	if r.status != 422 {
		t.Fatalf("blocked retain: %d %s", r.status, r.raw)
	}
	if r.errField() != "items[1].content" || !strings.Contains(r.errMessage(), "openai") {
		t.Fatalf("422 should name the item and the label: %s", r.raw)
	}
	for _, part := range []string{secret, secret[8:], secret[8:20]} {
		if strings.Contains(string(r.raw), part) {
			t.Fatalf("the answer echoes the secret: %s", r.raw)
		}
	}
	if n := len(e.pub.published()); n != 0 {
		t.Fatalf("%d events produced for a blocked request", n)
	}
	// Another bank keeps the default policy (redact, in the pipeline), so
	// the same content is accepted there.
	if r := e.call("POST", "/v1/default/banks/b2/memories", `{"items":[{"content":"my key is `+secret+`"}]}`, ""); r.status != 200 {
		t.Fatalf("default-policy bank: %d %s", r.status, r.raw)
	}
}

// A stored policy that cannot be applied stops retain rather than letting
// content through under the base policy.
func TestRetainFailsClosedOnBadStoredPolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{persist: true})
	if _, err := pgtest.DB(e.st).Exec(context.Background(), `INSERT INTO banks (id, defense_policy) VALUES ('b1', '{"default":"explode"}')`); err != nil {
		t.Fatal(err)
	}
	r := e.call("POST", "/v1/default/banks/b1/memories", `{"items":[{"content":"hello"}]}`, "")
	if r.status != 500 || r.body["error"] == nil {
		t.Fatalf("retain under an invalid stored policy: %d %s", r.status, r.raw)
	}
	if n := len(e.pub.published()); n != 0 {
		t.Fatalf("%d events produced", n)
	}
}
