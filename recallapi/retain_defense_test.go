package recallapi

import (
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// The pipeline gates an item's context, tags and metadata as well as its
// content; retain must refuse a block in any of them up front (422 naming
// the field and the label) instead of answering 200 for an event the
// pipeline will dead-letter.
func TestRetainBlockedInContextTagsAndMetadata(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{persist: true})
	if r := e.call("PUT", "/v1/default/banks/b1", `{"defense_policy":{"default":"block"}}`, ""); r.status != 200 {
		t.Fatalf("set policy: %d %s", r.status, r.raw)
	}
	// A fake AWS key id, generated at run time.
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 5))
	b := []byte("AKIA")
	for range 16 {
		b = append(b, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"[rng.IntN(32)])
	}
	key := string(b)
	for _, c := range []struct{ item, field string }{
		{`{"content":"harmless","context":"ops, key id ` + key + `"}`, "items[0].context"},
		{`{"content":"harmless","tags":["ops","key:` + key + `"]}`, "items[0].tags[1]"},
		{`{"content":"harmless","metadata":{"a":"fine","pasted":"id ` + key + `"}}`, "items[0].metadata.pasted"},
	} {
		r := e.call("POST", "/v1/default/banks/b1/memories", `{"items":[`+c.item+`]}`, "")
		if r.status != 422 || r.errField() != c.field || !strings.Contains(r.errMessage(), "aws_access_key_id") {
			t.Errorf("%s: %d field %q", c.field, r.status, r.errField())
		}
		if strings.Contains(string(r.raw), key) {
			t.Errorf("%s: the answer echoes the key", c.field)
		}
	}
	if n := len(e.pub.published()); n != 0 {
		t.Fatalf("%d events produced for blocked requests", n)
	}
}

// A defense decision reaches memory_defense.triggered webhooks once per
// event: a redacted retain retried with its Idempotency-Key, or an item
// sent again under its event_id, is announced once (when the event is
// stored), and a blocked retain retried with its key is announced once.
func TestDefenseWebhookOncePerRetainedEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{persist: true})
	ctx := t.Context()
	const b = "/v1/default/banks/b1"
	wh := e.call("POST", b+"/webhooks", `{"url":"http://127.0.0.1:9/","event_types":["memory_defense.triggered"],"enabled":true}`, "")
	if wh.status != 201 {
		t.Fatalf("webhook: %d %s", wh.status, wh.raw)
	}
	hook := wh.body["id"].(string)
	card := `my card is 4111 1111 1111 1111, keep it`
	retain := func(body, key string) resp {
		t.Helper()
		req := httptest.NewRequest("POST", b+"/memories", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+adminKey)
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		return e.do(req)
	}
	for range 3 {
		if r := retain(`{"async":false,"items":[{"content":"`+card+`"}]}`, "k-redact"); r.status != 200 {
			t.Fatalf("retain: %d %s", r.status, r.raw)
		}
	}
	for range 2 {
		if r := retain(`{"async":false,"items":[{"content":"`+card+`","event_id":"ev-1"}]}`, ""); r.status != 200 {
			t.Fatalf("retain with event_id: %d %s", r.status, r.raw)
		}
	}
	if r := e.call("PUT", "/v1/default/banks/b1", `{"defense_policy":{"default":"block"}}`, ""); r.status != 200 {
		t.Fatalf("policy: %d %s", r.status, r.raw)
	}
	for range 2 {
		if r := retain(`{"items":[{"content":"`+card+`"}]}`, "k-block"); r.status != 422 {
			t.Fatalf("blocked retain: %d %s", r.status, r.raw)
		}
	}
	ds, err := e.st.ListDeliveries(ctx, "b1", uuid.MustParse(hook), nil, 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 3 {
		t.Fatalf("%d memory_defense.triggered deliveries, want 3 (one per event): %+v", len(ds), ds)
	}
	seen := map[uuid.UUID]bool{}
	for _, d := range ds {
		if seen[d.EventID] {
			t.Fatalf("event %s announced twice", d.EventID)
		}
		seen[d.EventID] = true
	}
}
