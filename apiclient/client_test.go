package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/memstream/memstream/reflect"
)

func TestCallSendsKeyAndNamesAPIErrors(t *testing.T) {
	t.Setenv("MEMSTREAM_API_KEY", "k1")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k1" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/bad" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"code":"bad_request","message":"query is required","field":"query"}}`))
			return
		}
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		_ = json.NewEncoder(w).Encode(map[string]any{"echo": body["q"]})
	}))
	defer srv.Close()
	c, err := New(Config{Base: srv.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Base() != srv.URL {
		t.Errorf("Base = %q, want the URL without the trailing slash", c.Base())
	}
	var out struct{ Echo string }
	if err := c.Call(context.Background(), "POST", "/ok", map[string]string{"q": "hi"}, &out); err != nil || out.Echo != "hi" {
		t.Fatalf("Call = %v, %+v", err, out)
	}
	err = c.Call(context.Background(), "GET", "/bad", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "400 bad_request: query is required") {
		t.Fatalf("API error = %v, want its code and message", err)
	}
}

func TestNewDefaultsFromEnvironment(t *testing.T) {
	t.Setenv("MEMSTREAM_API_URL", "")
	t.Setenv("MEMSTREAM_HTTP_ADDR", "127.0.0.1:9999")
	if got := mustNew(t, Config{}).Base(); got != "http://127.0.0.1:9999" {
		t.Errorf("Base = %q", got)
	}
	t.Setenv("MEMSTREAM_API_URL", "http://api.example:1/")
	if got := mustNew(t, Config{}).Base(); got != "http://api.example:1" {
		t.Errorf("Base = %q", got)
	}
	for _, bad := range []string{"127.0.0.1:8888", "ftp://x", "http://"} {
		if _, err := New(Config{Base: bad}); err == nil {
			t.Errorf("New(%q) accepted a base that is no http(s) URL", bad)
		}
	}
}

func mustNew(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestWriters(t *testing.T) {
	var b bytes.Buffer
	WriteResults(&b, nil, 3)
	if !strings.Contains(b.String(), "(no results)") {
		t.Errorf("empty results printed %q", b.String())
	}
	b.Reset()
	rs := []RecallResult{{Text: "Alice lives in Lisbon", Type: "world", MentionedAt: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}, {Text: "second"}}
	WriteResults(&b, rs, 1)
	if !strings.Contains(b.String(), "2026-01-02") || strings.Contains(b.String(), "second") {
		t.Errorf("results printed %q, want the first only, with its date", b.String())
	}
	b.Reset()
	WriteReflect(&b, reflect.Response{Text: "Lisbon.", BasedOn: reflect.BasedOn{Memories: []string{"m1"}}})
	if !strings.Contains(b.String(), "memory       m1") {
		t.Errorf("reflect printed %q", b.String())
	}
}

func TestDialAddr(t *testing.T) {
	for in, want := range map[string]string{
		":8888":          "127.0.0.1:8888",
		"0.0.0.0:8888":   "127.0.0.1:8888",
		"[::]:8888":      "127.0.0.1:8888",
		"10.0.0.5:8888":  "10.0.0.5:8888",
		"localhost:9000": "localhost:9000",
		"no-port":        "no-port",
	} {
		if got := DialAddr(in); got != want {
			t.Errorf("DialAddr(%q) = %q, want %q", in, got, want)
		}
	}
}
