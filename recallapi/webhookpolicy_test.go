package recallapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

// fakeResolver answers from a table the test may change.
type fakeResolver struct {
	mu    sync.Mutex
	hosts map[string][]netip.Addr
}

func (f *fakeResolver) set(host string, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var as []netip.Addr
	for _, a := range addrs {
		as = append(as, netip.MustParseAddr(a))
	}
	f.hosts[host] = as
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if as, ok := f.hosts[host]; ok {
		return as, nil
	}
	return nil, errors.New("no such host")
}

// With webhooks.allow_private off (the default), a webhook URL that names
// or resolves to a loopback, private, link-local or otherwise non-public
// address is refused with a 400 naming url, on create and on change.
func TestWebhookAddressPolicyOnCreate(t *testing.T) {
	t.Parallel()
	res := &fakeResolver{hosts: map[string][]netip.Addr{}}
	res.set("hooks.example.com", "93.184.215.14")
	res.set("localhost", "127.0.0.1", "::1")
	res.set("mixed.example.com", "93.184.215.14", "10.1.2.3")
	res.set("metadata.internal", "169.254.169.254")
	e := newEnv(t, envOpts{strictWebhooks: true, resolver: res})
	const b = "/v1/default/banks/b1/webhooks"
	refused := []string{
		"http://127.0.0.1/hook", "http://127.1.2.3:8080/", "http://localhost:9000/x", "http://[::1]/",
		"http://169.254.169.254/latest/meta-data", "http://metadata.internal/", "http://10.0.0.7/", "http://172.16.5.4/",
		"http://192.168.1.1/", "http://[fe80::1]/", "http://[fd00::1]/", "http://0.0.0.0/", "http://[::]/",
		"http://[::ffff:127.0.0.1]/", "http://[64:ff9b::a00:1]/", "http://[2002:7f00:1::]/", "http://100.64.0.1/",
		"http://224.0.0.1/", "http://255.255.255.255/", "http://mixed.example.com/", "http://nowhere.invalid/",
	}
	for _, u := range refused {
		r := e.call("POST", b, `{"url":"`+u+`","event_types":["retain.completed"]}`, "")
		if r.status != 400 || r.errField() != "url" {
			t.Errorf("%s: %d %s; want 400 naming url", u, r.status, r.raw)
		}
	}
	ok := e.call("POST", b, `{"url":"https://hooks.example.com/in","event_types":["retain.completed"]}`, "")
	if ok.status != 201 {
		t.Fatalf("public host: %d %s", ok.status, ok.raw)
	}
	if r := e.call("POST", b, `{"url":"http://93.184.215.14:8443/x"}`, ""); r.status != 201 {
		t.Errorf("public address: %d %s", r.status, r.raw)
	}
	id := ok.body["id"].(string)
	if r := e.call("PATCH", b+"/"+id, `{"url":"http://localhost/"}`, ""); r.status != 400 || r.errField() != "url" {
		t.Errorf("patch to loopback: %d %s", r.status, r.raw)
	}
	if r := e.call("PATCH", b+"/"+id, `{"enabled":false}`, ""); r.status != 200 {
		t.Errorf("patch without url: %d %s", r.status, r.raw)
	}

	// allow_private lets a deployment send to its own network.
	open := newEnv(t, envOpts{resolver: res})
	if r := open.call("POST", b, `{"url":"http://127.0.0.1:9/hook"}`, ""); r.status != 201 {
		t.Errorf("loopback with allow_private: %d %s", r.status, r.raw)
	}
}

// A name that was public when the webhook was created and resolves to a
// loopback address when a delivery is made (DNS rebinding) is not dialled:
// the delivery fails with the policy's reason and the endpoint on
// loopback never sees the request.
func TestWebhookAddressPolicyAtDelivery(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	sink := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer sink.Close()
	port := strings.TrimPrefix(sink.URL[strings.LastIndex(sink.URL, ":"):], ":")
	res := &fakeResolver{hosts: map[string][]netip.Addr{}}
	res.set("hooks.example.com", "93.184.215.14")
	e := newEnv(t, envOpts{strictWebhooks: true, resolver: res})
	const b = "/v1/default/banks/b1/webhooks"
	wh := e.call("POST", b, `{"url":"http://hooks.example.com:`+port+`/in","event_types":["retain.completed"]}`, "")
	if wh.status != 201 {
		t.Fatalf("create: %d %s", wh.status, wh.raw)
	}
	res.set("hooks.example.com", "127.0.0.1")
	if err := e.st.QueueWebhookEvent(context.Background(), store.WebhookEvent{ID: uuid.New(), BankID: "b1", Type: "retain.completed", Payload: "{}"}); err != nil {
		t.Fatal(err)
	}
	e.srv.deliveryPass(context.Background(), e.srv.webhookClient())
	dl := e.call("GET", b+"/"+wh.body["id"].(string)+"/deliveries", "", "")
	items, _ := dl.body["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("deliveries: %s", dl.raw)
	}
	d := items[0].(map[string]any)
	msg, _ := d["last_error"].(string)
	if d["attempts"].(float64) != 1 || !strings.Contains(msg, "127.0.0.1") || !strings.Contains(msg, "webhooks.allow_private") {
		t.Fatalf("delivery after the name moved to loopback: %v", d)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback endpoint was reached %d times", n)
	}

	// The same client with allow_private reaches it.
	open := newEnv(t, envOpts{resolver: res})
	u, _ := url.Parse(sink.URL)
	req, _ := http.NewRequest("GET", "http://hooks.example.com:"+u.Port()+"/", nil)
	resp, err := open.srv.webhookClient().Do(req)
	if err != nil {
		t.Fatalf("allow_private client: %v", err)
	}
	resp.Body.Close()
}
