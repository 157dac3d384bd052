package recallapi

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/memstream/memstream/internal/pgtest"
)

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

func (e *env) cacheCount(result string) float64 {
	return counterValue(e.srv.models.lookups.WithLabelValues(result))
}

func TestMentalModelRoutesAndCache(t *testing.T) {
	t.Parallel()
	ref := &fakeRefresher{}
	e := newEnv(t, envOpts{refresher: ref})
	ref.st = e.st
	const b = "/v1/default/banks/b1/mental-models"
	c := e.call("POST", b, `{"name":"Alice's tastes","source_query":"What does Alice like?","tags":["food"],"max_tokens":300,"content":"tea"}`, "")
	if c.status != 200 || c.body["name"] != "Alice's tastes" || c.body["max_tokens"].(float64) != 300 || c.body["content"] != "tea" {
		t.Fatalf("create: %d %s", c.status, c.raw)
	}
	id := c.body["id"].(string)
	if r := e.call("POST", b, `{"name":"Alice's tastes","source_query":"again"}`, ""); r.status != 409 || strings.Contains(r.errMessage(), "_key") {
		t.Fatalf("duplicate name: %d %s", r.status, r.raw)
	}
	if r := e.call("GET", b, "", ""); r.status != 200 || len(items(t, r)) != 1 {
		t.Fatalf("list: %d %s", r.status, r.raw)
	}

	get := func() resp {
		t.Helper()
		return e.call("GET", b+"/"+id, "", "")
	}
	if r := get(); r.status != 200 || r.body["content"] != "tea" {
		t.Fatalf("get: %s", r.raw)
	}
	if e.cacheCount("miss") != 1 || e.cacheCount("hit") != 0 {
		t.Fatalf("first get: hits %v misses %v", e.cacheCount("hit"), e.cacheCount("miss"))
	}
	// A change that bypasses the API and announces nothing is not seen:
	// the second GET is answered from the cache.
	if _, err := pgtest.DB(e.st).Exec(context.Background(), `UPDATE mental_models SET content = 'coffee (unannounced)' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if r := get(); r.body["content"] != "tea" || e.cacheCount("hit") != 1 {
		t.Fatalf("second get should be a cache hit: %s (hits %v)", r.raw, e.cacheCount("hit"))
	}
	// PATCH evicts.
	p := e.call("PATCH", b+"/"+id, `{"content":"green tea","tags":["food","drink"]}`, "")
	if p.status != 200 || p.body["content"] != "green tea" || len(p.body["tags"].([]any)) != 2 {
		t.Fatalf("patch: %d %s", p.status, p.raw)
	}
	if r := get(); r.body["content"] != "green tea" {
		t.Fatalf("get after patch: %s", r.raw)
	}
	if r := get(); r.body["content"] != "green tea" || e.cacheCount("hit") != 2 {
		t.Fatalf("hits after patch: %v", e.cacheCount("hit"))
	}
	// Refresh is an operation (as in Hindsight); once it completed, the
	// cache shows what the refresher wrote.
	ctx, cancel := context.WithCancel(context.Background())
	e.srv.Start(ctx)
	defer func() { cancel(); e.srv.Close() }()
	rf := e.call("POST", b+"/"+id+"/refresh", "", "")
	op, _ := rf.body["operation_id"].(string)
	if rf.status != 200 || op == "" {
		t.Fatalf("refresh: %d %s", rf.status, rf.raw)
	}
	waitUntil(t, "refresh operation completed", func() bool {
		return e.call("GET", "/v1/default/banks/b1/operations/"+op, "", "").body["status"] == "completed"
	})
	if r := get(); r.body["content"] != "refreshed What does Alice like?" || r.body["last_refreshed_at"] == nil || ref.calls != 1 {
		t.Fatalf("get after refresh: %s", r.raw)
	}
	// DELETE evicts.
	if r := e.call("DELETE", b+"/"+id, "", ""); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	if r := get(); r.status != 404 {
		t.Fatalf("get after delete: %d %s", r.status, r.raw)
	}
	// Without a refresher, refresh is unavailable and says why.
	none := newEnv(t, envOpts{st: e.st})
	m := none.call("POST", "/v1/default/banks/b2/mental-models", `{"name":"n","source_query":"q"}`, "")
	if r := none.call("POST", "/v1/default/banks/b2/mental-models/"+m.body["id"].(string)+"/refresh", "", ""); r.status != 503 || !strings.Contains(r.errMessage(), "refresh") {
		t.Fatalf("refresh without a refresher: %d %s", r.status, r.raw)
	}
}

// Two replicas over one database: a write through one evicts the other's
// cached copy through LISTEN/NOTIFY.
func TestMentalModelCacheAcrossReplicas(t *testing.T) {
	t.Parallel()
	a := newEnv(t, envOpts{listener: true})
	b := newEnv(t, envOpts{listener: true, st: a.st})
	ctx, cancel := context.WithCancel(context.Background())
	a.srv.Start(ctx)
	b.srv.Start(ctx)
	defer func() {
		cancel()
		a.srv.Close()
		b.srv.Close()
	}()
	listening := func(e *env) bool {
		return counterValue(e.srv.models.invalidations.WithLabelValues("purge")) >= 1
	}
	waitUntil(t, "both listeners up", func() bool { return listening(a) && listening(b) })

	const base = "/v1/default/banks/b1/mental-models"
	c := a.call("POST", base, `{"name":"m","source_query":"q","content":"v1"}`, "")
	id := c.body["id"].(string)
	for range 2 {
		if r := a.call("GET", base+"/"+id, "", ""); r.body["content"] != "v1" {
			t.Fatalf("replica a: %s", r.raw)
		}
	}
	if a.cacheCount("hit") != 1 {
		t.Fatalf("replica a hits = %v", a.cacheCount("hit"))
	}
	if r := b.call("PATCH", base+"/"+id, `{"content":"v2"}`, ""); r.status != 200 {
		t.Fatalf("patch on b: %d %s", r.status, r.raw)
	}
	waitUntil(t, "replica a sees v2", func() bool {
		return a.call("GET", base+"/"+id, "", "").body["content"] == "v2"
	})
	if counterValue(a.srv.models.invalidations.WithLabelValues("notify")) < 1 {
		t.Fatal("replica a was not told by NOTIFY")
	}
	if r := b.call("DELETE", base+"/"+id, "", ""); r.status != 200 {
		t.Fatalf("delete on b: %d", r.status)
	}
	waitUntil(t, "replica a sees the delete", func() bool {
		return a.call("GET", base+"/"+id, "", "").status == 404
	})
	// Deleting a bank evicts its models everywhere.
	c = a.call("POST", "/v1/default/banks/b9/mental-models", `{"name":"m","source_query":"q","content":"v1"}`, "")
	url := "/v1/default/banks/b9/mental-models/" + c.body["id"].(string)
	a.call("GET", url, "", "")
	hits := a.cacheCount("hit")
	if r := a.call("GET", url, "", ""); r.status != 200 || a.cacheCount("hit") != hits+1 {
		t.Fatalf("b9 model not cached on a: %d", r.status)
	}
	if r := b.call("DELETE", "/v1/default/banks/b9", "", ""); r.status != 200 {
		t.Fatalf("delete bank on b: %d %s", r.status, r.raw)
	}
	waitUntil(t, "replica a sees the bank delete", func() bool {
		return a.call("GET", url, "", "").status == 404
	})
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// flakyListener fails its first connection, then listens until ctx ends.
type flakyListener struct {
	calls        atomic.Int32
	disabledSeen atomic.Bool
	c            *modelCache
}

func (f *flakyListener) Listen(ctx context.Context, _ []string, ready func(), _ func(string, string)) error {
	if f.calls.Add(1) == 1 {
		return errors.New("connection refused")
	}
	f.c.mu.Lock()
	f.disabledSeen.Store(!f.c.enabled)
	f.c.mu.Unlock()
	ready()
	<-ctx.Done()
	return nil
}

// While the listener is down the cache serves nothing (another replica's
// write would go unseen); once it is back the cache is purged and used.
func TestListenerLossDisablesCache(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	fl := &flakyListener{c: e.srv.models}
	e.srv.d.Listener = fl
	ctx, cancel := context.WithCancel(context.Background())
	e.srv.Start(ctx)
	waitUntil(t, "the listener's second attempt", func() bool { return fl.calls.Load() >= 2 })
	if !fl.disabledSeen.Load() {
		t.Fatal("the cache stayed enabled while no listener ran")
	}
	waitUntil(t, "the cache re-enabled", func() bool {
		e.srv.models.mu.Lock()
		defer e.srv.models.mu.Unlock()
		return e.srv.models.enabled
	})
	cancel()
	e.srv.Close()
	if n := fl.calls.Load(); n != 2 {
		t.Fatalf("listener calls = %d, want 2", n)
	}
}

// TestMentalModelDetailAndCallerID: Hindsight's `detail` query cuts the
// answer (metadata: no query or content; content: no based_on), and a
// caller's id on create is the model's id.
func TestMentalModelDetailAndCallerID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	const b = "/v1/default/banks/b1/mental-models"
	const id = "6b0c9a52-7c1e-4a8e-9a3f-2d4c1f0e9b11"
	c := e.call("POST", b, `{"id":"`+id+`","name":"tastes","source_query":"What does Alice like?","content":"tea"}`, "")
	if c.status != 200 || c.body["id"] != id || c.body["mental_model_id"] != id {
		t.Fatalf("create with an id: %d %s", c.status, c.raw)
	}
	if r := e.call("POST", b, `{"id":"`+id+`","name":"other","source_query":"q"}`, ""); r.status != 409 {
		t.Fatalf("an id taken: %d %s", r.status, r.raw)
	}
	// Without detail, as in Hindsight 1.1.0: a get is full, a list metadata.
	get := e.call("GET", b+"/"+id, "", "")
	if _, ok := get.body["based_on"]; get.status != 200 || !ok {
		t.Fatalf("get without detail is not full: %d %s", get.status, get.raw)
	}
	listed := items(t, e.call("GET", b, "", ""))[0]
	for _, k := range []string{"content", "source_query", "max_tokens", "based_on"} {
		if _, ok := listed[k]; ok {
			t.Errorf("list without detail has %s: %v", k, listed)
		}
	}
	if listed["id"] != id || listed["name"] != "tastes" {
		t.Errorf("list without detail lacks the metadata: %v", listed)
	}
	for _, tc := range []struct {
		detail      string
		has, hasNot []string
	}{
		{"full", []string{"content", "source_query", "based_on"}, nil},
		{"content", []string{"content", "source_query", "max_tokens"}, []string{"based_on"}},
		{"metadata", []string{"id", "name", "tags"}, []string{"content", "source_query", "max_tokens", "based_on"}},
	} {
		q := "?detail=" + tc.detail
		get := e.call("GET", b+"/"+id+q, "", "")
		list := e.call("GET", b+q, "", "")
		if get.status != 200 || list.status != 200 {
			t.Fatalf("detail %q: %d %d %s %s", tc.detail, get.status, list.status, get.raw, list.raw)
		}
		listed := items(t, list)[0]
		for _, k := range tc.has {
			if _, ok := get.body[k]; !ok {
				t.Errorf("detail %q: get lacks %s: %s", tc.detail, k, get.raw)
			}
			if _, ok := listed[k]; !ok {
				t.Errorf("detail %q: list lacks %s: %s", tc.detail, k, list.raw)
			}
		}
		for _, k := range tc.hasNot {
			if _, ok := get.body[k]; ok {
				t.Errorf("detail %q: get has %s: %s", tc.detail, k, get.raw)
			}
			if _, ok := listed[k]; ok {
				t.Errorf("detail %q: list has %s: %s", tc.detail, k, list.raw)
			}
		}
	}
	if r := e.call("GET", b+"/"+id+"?detail=everything", "", ""); r.status != 400 || r.errField() != "detail" {
		t.Fatalf("bad detail: %d %s", r.status, r.raw)
	}
}
