package rerank

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeServer scores a document by how many query words it contains, and
// answers in the TEI or the Cohere shape.
func fakeServer(t *testing.T, cohere bool, calls *atomic.Int32) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		if r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "no key", 401)
			return
		}
		var out []map[string]any
		for i := len(req.Texts) - 1; i >= 0; i-- { // reversed: order must not matter
			score := 0.0
			for _, w := range strings.Fields(strings.ToLower(req.Query)) {
				if strings.Contains(strings.ToLower(req.Texts[i]), w) {
					score++
				}
			}
			if cohere {
				out = append(out, map[string]any{"index": i, "relevance_score": score})
			} else {
				out = append(out, map[string]any{"index": i, "score": score})
			}
		}
		if cohere {
			_ = json.NewEncoder(w).Encode(map[string]any{"results": out})
			return
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
}

func TestRerankFormatsAndChunks(t *testing.T) {
	for _, cohere := range []bool{false, true} {
		var calls atomic.Int32
		srv := fakeServer(t, cohere, &calls)
		r, err := NewHTTP(HTTPDeps{}, Config{URL: srv.URL + "/rerank", APIKey: "k", MaxDocuments: 2})
		if err != nil {
			t.Fatal(err)
		}
		docs := []string{"the cat sat", "Alice lives in Shanghai", "Shanghai weather", "nothing"}
		got, err := r.Rerank(context.Background(), "where does alice live shanghai", docs)
		srv.Close()
		if err != nil {
			t.Fatalf("cohere=%v: %v", cohere, err)
		}
		want := []float64{0, 3, 1, 0}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("cohere=%v: scores %v, want %v", cohere, got, want)
			}
		}
		if calls.Load() != 2 {
			t.Fatalf("cohere=%v: %d calls, want 2 chunks", cohere, calls.Load())
		}
	}
}

func TestRerankErrors(t *testing.T) {
	if _, err := NewHTTP(HTTPDeps{}, Config{URL: "ftp://x"}); err == nil || !strings.Contains(err.Error(), "rerank.url") {
		t.Fatalf("bad url accepted: %v", err)
	}
	for name, body := range map[string]string{
		"short":    `[{"index":0,"score":1}]`,
		"repeated": `[{"index":0,"score":1},{"index":0,"score":2}]`,
		"garbage":  `<html>`,
		"noscore":  `[{"index":0},{"index":1}]`,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) }))
		r, _ := NewHTTP(HTTPDeps{}, Config{URL: srv.URL})
		if _, err := r.Rerank(context.Background(), "q", []string{"a", "b"}); err == nil {
			t.Errorf("%s: no error", name)
		}
		srv.Close()
	}
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	}))
	defer slow.Close()
	r, _ := NewHTTP(HTTPDeps{}, Config{URL: slow.URL, Timeout: 50 * time.Millisecond})
	if _, err := r.Rerank(context.Background(), "q", []string{"a"}); err == nil {
		t.Fatal("timeout not reported")
	}
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "overloaded", 503) }))
	defer failing.Close()
	r, _ = NewHTTP(HTTPDeps{}, Config{URL: failing.URL})
	if _, err := r.Rerank(context.Background(), "q", []string{"a"}); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("503 not reported: %v", err)
	}
}
