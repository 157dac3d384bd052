package recallapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Webhooks: a retain's completion and its defense decision reach the
// endpoint signed as Hindsight signs them; a failed delivery is retried
// from the queue, and the delivery list shows both attempts.
func TestWebhookDeliveriesSignedAndRetried(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	type hit struct {
		event, sig string
		body       []byte
	}
	var hits []hit
	fails := 1
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get("X-Hindsight-Event") == "retain.completed" && fails > 0 {
			fails--
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		hits = append(hits, hit{r.Header.Get("X-Hindsight-Event"), r.Header.Get("X-Hindsight-Signature"), b})
	}))
	defer sink.Close()
	e := newEnv(t, envOpts{persist: true})
	ctx, cancel := context.WithCancel(context.Background())
	e.srv.Start(ctx)
	defer func() { cancel(); e.srv.Close() }()
	const b = "/v1/default/banks/b1"
	wh := e.call("POST", b+"/webhooks", `{"url":"`+sink.URL+`","secret":"s3","event_types":["retain.completed","memory_defense.triggered"]}`, "")
	if wh.status != 201 || wh.body["secret"] == "s3" {
		t.Fatalf("create webhook: %d %s", wh.status, wh.raw)
	}
	if r := e.call("POST", b+"/memories", `{"items":[{"content":"my card is 4111 1111 1111 1111, keep it"}]}`, ""); r.status != 200 {
		t.Fatalf("retain: %d %s", r.status, r.raw)
	}
	deadline := time.Now().Add(20 * time.Second)
	got := map[string]hit{}
	for time.Now().Before(deadline) && len(got) < 2 {
		mu.Lock()
		for _, h := range hits {
			got[h.event] = h
		}
		mu.Unlock()
		time.Sleep(100 * time.Millisecond)
	}
	for _, ev := range []string{"retain.completed", "memory_defense.triggered"} {
		h, ok := got[ev]
		if !ok {
			t.Fatalf("no %s delivery (got %v)", ev, got)
		}
		if h.sig != SignWebhook("s3", h.body) {
			t.Errorf("%s: signature %q does not verify", ev, h.sig)
		}
		var payload map[string]any
		if err := json.Unmarshal(h.body, &payload); err != nil || payload["event"] != ev || payload["bank_id"] != "b1" {
			t.Errorf("%s payload: %s", ev, h.body)
		}
	}
	var def map[string]any
	_ = json.Unmarshal(got["memory_defense.triggered"].body, &def)
	if data, _ := def["data"].(map[string]any); data["action"] != "redact" || len(data["matched_types"].([]any)) == 0 {
		t.Errorf("defense event: %s", got["memory_defense.triggered"].body)
	}
	dl := e.call("GET", b+"/webhooks/"+wh.body["id"].(string)+"/deliveries", "", "")
	items, _ := dl.body["items"].([]any)
	for _, it := range items {
		d := it.(map[string]any)
		if d["event_type"] == "retain.completed" && (d["status"] != "delivered" || d["attempts"].(float64) != 2) {
			t.Errorf("retried delivery: %v", d)
		}
	}
	if len(items) != 2 {
		t.Fatalf("deliveries: %s", dl.raw)
	}
}
