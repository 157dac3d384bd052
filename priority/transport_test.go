package priority

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
)

// Requests through the Transport hold their slot until the body is
// closed, and a live request queued behind a background one is sent first.
func TestTransportOrdersRequests(t *testing.T) {
	t.Parallel()
	arrived := make(chan string, 4)
	unblock := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- r.URL.Path
		if r.URL.Path == "/first" {
			<-unblock
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	g := mustGate(t, GateConfig{Name: "llm", Slots: 1})
	client := &http.Client{Transport: &Transport{Gate: g}}
	get := func(ctx context.Context, path string, done chan<- error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		resp, err := client.Do(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		done <- err
	}
	bg := WithClass(context.Background(), Background)
	errs := make(chan error, 3)
	go get(bg, "/first", errs)
	if p := <-arrived; p != "/first" {
		t.Fatalf("arrived %s", p)
	}
	go get(bg, "/background", errs)
	waitFor(t, g, 0, 1)
	go get(context.Background(), "/live", errs)
	waitFor(t, g, 1, 1)
	close(unblock)
	if p := <-arrived; p != "/live" {
		t.Fatalf("after the first request: %s, want /live", p)
	}
	if p := <-arrived; p != "/background" {
		t.Fatalf("then %s", p)
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if g.held != 0 {
		t.Fatalf("%d slots still held", g.held)
	}
}

func waitFor(t *testing.T, g *Gate, live, bg int) {
	t.Helper()
	for {
		l, b := g.Waiting()
		if l == live && b == bg {
			return
		}
		runtime.Gosched()
	}
}
