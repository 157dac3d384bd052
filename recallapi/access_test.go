package recallapi

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/internal/pgtest"
)

func TestAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	if r := e.call("PUT", "/v1/default/banks/bank-a", `{"name":"A"}`, ""); r.status != 200 {
		t.Fatalf("create bank-a: %d %s", r.status, r.raw)
	}
	if r := e.call("PUT", "/v1/default/banks/bank-b", `{"name":"B"}`, ""); r.status != 200 {
		t.Fatalf("create bank-b: %d %s", r.status, r.raw)
	}
	id := uuid.NewString()
	for _, c := range []struct {
		name, method, path, body, key string
		want                          int
	}{
		{"no key", "GET", "/v1/default/banks/bank-b/stats", "", "-", 401},
		{"unknown key", "GET", "/v1/default/banks/bank-b/stats", "", "not-a-key", 401},
		{"prefix of a key", "GET", "/v1/default/banks/bank-b/stats", "", readerBKey[:10], 401},
		{"no key on a list", "GET", "/v1/default/banks", "", "-", 401},
		{"no key on recall", "POST", "/v1/default/banks/bank-b/memories/recall", `{"query":"x"}`, "-", 401},
		{"public health", "GET", "/health", "", "-", 200},
		{"public openapi", "GET", "/openapi.json", "", "-", 200},
		{"public metrics", "GET", "/metrics", "", "-", 200},
		{"reader reads own bank", "GET", "/v1/default/banks/bank-b/stats", "", readerBKey, 200},
		{"hashed key reads own bank", "GET", "/v1/default/banks/bank-b/stats", "", hashedKey, 200},
		{"reader cannot retain", "POST", "/v1/default/banks/bank-b/memories", `{"items":[{"content":"x"}]}`, readerBKey, 403},
		{"reader cannot invalidate", "DELETE", "/v1/default/banks/bank-b/memories/" + id, "", readerBKey, 403},
		{"reader cannot create a mental model", "POST", "/v1/default/banks/bank-b/mental-models", `{"name":"n","source_query":"q"}`, readerBKey, 403},
		{"reader cannot merge", "POST", "/v1/default/banks/bank-b/entities/" + id + "/merge", `{"into":"` + id + `"}`, readerBKey, 403},
		{"reader cannot delete a document", "DELETE", "/v1/default/banks/bank-b/documents/d", "", readerBKey, 403},
		{"writer cannot change the profile", "PATCH", "/v1/default/banks/bank-b", `{"name":"x"}`, writerBKey, 403},
		{"writer cannot delete the bank", "DELETE", "/v1/default/banks/bank-b", "", writerBKey, 403},
		{"writer may read", "GET", "/v1/default/banks/bank-b/memories/list", "", writerBKey, 200},
		{"admin changes the profile", "PATCH", "/v1/default/banks/bank-b", `{"name":"B2"}`, adminKey, 200},
	} {
		r := e.call(c.method, c.path, c.body, c.key)
		if r.status != c.want {
			t.Errorf("%s: %s %s = %d %s, want %d", c.name, c.method, c.path, r.status, r.raw, c.want)
		}
		if r.status == 401 && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: 401 without a Bearer challenge", c.name)
		}
	}
}

// A key for bank B must learn nothing about bank A: the answer for an
// existing A and for a missing one is byte for byte the same, on every
// bank route.
func TestForeignBankSameAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	s := seed(t, e.st, "bank-a")
	m := e.call("POST", "/v1/default/banks/bank-a/mental-models", `{"name":"prefs","source_query":"what does Alice like?"}`, "")
	if m.status != 200 {
		t.Fatalf("create model: %d %s", m.status, m.raw)
	}
	mid := m.body["id"].(string)
	routes := []struct{ method, path, body string }{
		{"GET", "", ""},
		{"GET", "/stats", ""},
		{"GET", "/memories/list", ""},
		{"GET", "/memories/" + s.f1.String(), ""},
		{"POST", "/memories/recall", `{"query":"Alice"}`},
		{"GET", "/observations/" + s.obs.String(), ""},
		{"GET", "/entities/" + s.alice.String(), ""},
		{"GET", "/mental-models/" + mid, ""},
		{"GET", "/documents", ""},
		{"POST", "/reflect", `{"query":"Alice"}`},
	}
	for _, rt := range routes {
		for _, key := range []string{readerBKey, writerBKey} {
			exists := e.call(rt.method, "/v1/default/banks/bank-a"+rt.path, rt.body, key)
			missing := e.call(rt.method, "/v1/default/banks/bank-zz"+rt.path, rt.body, key)
			if exists.status != http.StatusForbidden || missing.status != http.StatusForbidden {
				t.Errorf("%s %s: %d / %d, want 403 / 403", rt.method, rt.path, exists.status, missing.status)
			}
			if !bytes.Equal(exists.raw, missing.raw) {
				t.Errorf("%s %s: bodies differ: %s vs %s", rt.method, rt.path, exists.raw, missing.raw)
			}
		}
	}
	// The admin sees the data the forbidden keys were refused.
	if r := e.call("GET", "/v1/default/banks/bank-a/memories/"+s.f1.String(), "", ""); r.status != 200 {
		t.Fatalf("admin read: %d %s", r.status, r.raw)
	}
	// Listing banks must not reveal bank-a to a key for bank-b.
	e.call("PUT", "/v1/default/banks/bank-b", `{}`, "")
	r := e.call("GET", "/v1/default/banks", "", readerBKey)
	if r.status != 200 || strings.Contains(string(r.raw), "bank-a") || !strings.Contains(string(r.raw), "bank-b") {
		t.Fatalf("bank list for a bank-b key: %d %s", r.status, r.raw)
	}
	if r := e.call("GET", "/v1/default/banks", "", ""); !strings.Contains(string(r.raw), "bank-a") {
		t.Fatalf("admin's bank list misses bank-a: %s", r.raw)
	}
}

// Keys are kept only as hashes: the server's memory holds no key text.
func TestKeysKeptHashed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	dump := fmt.Sprintf("%#v %#v", e.srv.keys, e.srv.cfg)
	for _, k := range []string{adminKey, readerBKey, writerBKey} {
		if strings.Contains(dump, k) {
			t.Errorf("key %q is held in clear by the server", k)
		}
	}
	if len(e.srv.keys) != 4 {
		t.Fatalf("keys = %d", len(e.srv.keys))
	}
	for _, k := range e.srv.keys {
		if k.hash == ([32]byte{}) {
			t.Errorf("key %s has no hash", k.name)
		}
	}
}

func TestBadKeyConfig(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	base := newEnv(t, envOpts{st: st})
	for name, c := range map[string]struct {
		cfg  Config
		want string
	}{
		"bad sha":              {Config{Auth: config.Auth{Keys: []config.Key{{Name: "k", SHA256: "zz", Banks: []string{"*"}, Scopes: []string{"read"}}}}}, "sha256"},
		"unknown scope":        {Config{Auth: config.Auth{Keys: []config.Key{{Name: "k", Key: "x", Banks: []string{"*"}, Scopes: []string{"reed"}}}}}, "scope"},
		"no banks":             {Config{Auth: config.Auth{Keys: []config.Key{{Name: "k", Key: "x", Scopes: []string{"read"}}}}}, "bank"},
		"public addr, no keys": {Config{Addr: "0.0.0.0:8888"}, "http.addr"},
	} {
		d := base.srv.d
		d.Registerer = nil
		if _, err := New(d, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", name, err, c.want)
		}
	}
}

// Every bank route, the Hindsight families included, holds a key to its
// banks: a key for bank-b gets the same 403 on bank-a as on a bank that
// does not exist. A read-only key may not write anywhere. The routes
// without a bank in the path (chunks, files) answer 404 for another bank's
// object.
func TestEveryBankRouteHoldsScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{reflector: &fakeReflector{}, refresher: &fakeRefresher{}})
	seed(t, e.st, "bank-a")
	fill := strings.NewReplacer("{memory_id}", uuid.NewString(), "{observation_id}", uuid.NewString(), "{entity_id}", uuid.NewString(),
		"{mental_model_id}", uuid.NewString(), "{document_id}", "doc-1", "{alias}", "al", "{attachment_id}", "att", "{log_id}", uuid.NewString(),
		"{directive_id}", uuid.NewString(), "{node_id}", uuid.NewString(), "{page_id}", uuid.NewString(), "{operation_id}", uuid.NewString(),
		"{webhook_id}", uuid.NewString(), "{topic}", "memstream.events", "{partition}", "0", "{offset}", "0")
	n := 0
	for _, rt := range e.srv.table() {
		if !strings.Contains(rt.path, "{bank_id}") {
			continue
		}
		body := ""
		if rt.method != "GET" && rt.method != "DELETE" {
			body = "{}"
		}
		for _, key := range []string{readerBKey, writerBKey} {
			p := fill.Replace(rt.path)
			exists := e.call(rt.method, strings.Replace(p, "{bank_id}", "bank-a", 1), body, key)
			missing := e.call(rt.method, strings.Replace(p, "{bank_id}", "bank-zz", 1), body, key)
			n++
			if exists.status != http.StatusForbidden || !bytes.Equal(exists.raw, missing.raw) {
				t.Errorf("%s %s with a bank-b key: %d %s / %d %s", rt.method, rt.path, exists.status, exists.raw, missing.status, missing.raw)
			}
		}
		if rt.scope != "read" {
			own := strings.Replace(fill.Replace(rt.path), "{bank_id}", "bank-b", 1)
			if r := e.call(rt.method, own, body, readerBKey); r.status != http.StatusForbidden {
				t.Errorf("%s %s with a read-only key: %d %s", rt.method, rt.path, r.status, r.raw)
			}
		}
	}
	if n < 150 {
		t.Fatalf("only %d bank route checks", n)
	}
	var chunk string
	if err := pgtest.DB(e.st).QueryRow(context.Background(), `SELECT id::text FROM chunks WHERE bank_id = 'bank-a' LIMIT 1`).Scan(&chunk); err != nil {
		t.Fatal(err)
	}
	if r := e.call("GET", "/v1/default/chunks/"+chunk, "", readerBKey); r.status != http.StatusNotFound {
		t.Fatalf("another bank's chunk: %d %s", r.status, r.raw)
	}
	if r := e.call("GET", "/v1/default/chunks/"+chunk, "", ""); r.status != 200 || r.body["bank_id"] != "bank-a" {
		t.Fatalf("admin reads the chunk: %d %s", r.status, r.raw)
	}
}
