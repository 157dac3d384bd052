package recallapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/reflect"
)

func items(t *testing.T, r resp) []map[string]any {
	t.Helper()
	raw, ok := r.body["items"].([]any)
	if !ok {
		t.Fatalf("no items in %s", r.raw)
	}
	out := make([]map[string]any, len(raw))
	for i, x := range raw {
		out[i] = x.(map[string]any)
	}
	return out
}

func ok(t *testing.T, r resp, what string) resp {
	t.Helper()
	if r.status/100 != 2 {
		t.Fatalf("%s: %d %s", what, r.status, r.raw)
	}
	return r
}

func TestMemoryAndObservationRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	s := seed(t, e.st, "b1")
	const b = "/v1/default/banks/b1"

	all := ok(t, e.call("GET", b+"/memories/list", "", ""), "list")
	if all.body["total"].(float64) != 4 || len(items(t, all)) != 4 || all.body["limit"].(float64) != 100 {
		t.Fatalf("list: %s", all.raw)
	}
	world := ok(t, e.call("GET", b+"/memories/list?type=world&limit=1&offset=1", "", ""), "list world")
	if w := items(t, world); world.body["total"].(float64) != 2 || len(w) != 1 || w[0]["id"] != s.f1.String() || w[0]["type"] != "world" {
		t.Fatalf("world page 2: %s", world.raw)
	}
	q := ok(t, e.call("GET", b+"/memories/list?q=inc-48213", "", ""), "list q")
	if w := items(t, q); len(w) != 1 || w[0]["id"] != s.f3.String() {
		t.Fatalf("q filter: %s", q.raw)
	}
	m := ok(t, e.call("GET", b+"/memories/"+s.f2.String(), "", ""), "get memory")
	if m.body["text"] != "Alice likes green tea" || m.body["document_id"] != "doc-1" || m.body["state"] != "valid" {
		t.Fatalf("memory: %s", m.raw)
	}
	if ents := m.body["entities"].([]any); len(ents) != 1 || ents[0].(map[string]any)["name"] != "Alice" {
		t.Fatalf("memory entities: %s", m.raw)
	}
	if r := e.call("GET", b+"/memories/"+uuid.NewString(), "", ""); r.status != 404 || r.body["error"].(map[string]any)["code"] != "not_found" {
		t.Fatalf("unknown memory: %d %s", r.status, r.raw)
	}
	// A memory of another bank is not found through this one.
	other := seed(t, e.st, "b2")
	if r := e.call("GET", b+"/memories/"+other.f1.String(), "", ""); r.status != 404 {
		t.Fatalf("other bank's memory: %d", r.status)
	}
	inv := ok(t, e.call("DELETE", b+"/memories/"+s.f2.String()+"?reason=wrong%20drink", "", ""), "invalidate")
	if inv.body["state"] != "invalidated" || inv.body["invalid_reason"] != "wrong drink" {
		t.Fatalf("invalidate: %s", inv.raw)
	}
	if r := e.call("GET", b+"/memories/list", "", ""); r.body["total"].(float64) != 3 {
		t.Fatalf("after invalidation the list has %v", r.body["total"])
	}
	if r := e.call("GET", b+"/memories/list?state=invalidated", "", ""); r.body["total"].(float64) != 1 {
		t.Fatalf("invalidated list has %v", r.body["total"])
	}
	rec := ok(t, e.call("POST", b+"/memories/recall", `{"query":"what does Alice drink?","max_tokens":500}`, ""), "recall")
	for _, x := range rec.body["results"].([]any) {
		if x.(map[string]any)["id"] == s.f2.String() {
			t.Fatalf("recall returned an invalidated memory: %s", rec.raw)
		}
	}
	rec = ok(t, e.call("POST", b+"/memories/recall", `{"query":"INC-48213","types":["world"],"tags_match":"any","trace":true}`, ""), "recall keyword")
	if res := rec.body["results"].([]any); len(res) == 0 || res[0].(map[string]any)["id"] != s.f3.String() || rec.body["trace"] == nil {
		t.Fatalf("recall INC-48213: %s", rec.raw)
	}

	obs := ok(t, e.call("GET", b+"/observations", "", ""), "observations")
	if o := items(t, obs); len(o) != 1 || o[0]["id"] != s.obs.String() || o[0]["proof_count"].(float64) != 2 || o[0]["trend"] != "strengthening" {
		t.Fatalf("observations: %s", obs.raw)
	}
	one := ok(t, e.call("GET", b+"/observations/"+s.obs.String(), "", ""), "observation")
	ev := one.body["evidence"].([]any)
	if len(ev) != 2 || len(one.body["history"].([]any)) != 1 || one.body["proof_count"].(float64) != 2 {
		t.Fatalf("observation: %s", one.raw)
	}
	for _, k := range []string{"memory_id", "quote", "relevance", "timestamp"} {
		if _, found := ev[0].(map[string]any)[k]; !found {
			t.Fatalf("evidence lacks %s: %s", k, one.raw)
		}
	}
	if r := e.call("GET", b+"/observations/"+s.f1.String(), "", ""); r.status != 404 {
		t.Fatalf("a fact through the observation route: %d", r.status)
	}
}

func TestEntityRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	s := seed(t, e.st, "b1")
	const b = "/v1/default/banks/b1"
	list := ok(t, e.call("GET", b+"/entities", "", ""), "entities")
	if it := items(t, list); len(it) != 2 || it[0]["name"] != "Alice" || it[0]["mention_count"].(float64) != 2 {
		t.Fatalf("entities: %s", list.raw)
	}
	if it := items(t, ok(t, e.call("GET", b+"/entities?q=bo", "", ""), "entities q")); len(it) != 1 || it[0]["id"] != s.bob.String() {
		t.Fatalf("entities q=bo: %v", it)
	}
	one := ok(t, e.call("GET", b+"/entities/"+s.alice.String(), "", ""), "entity")
	if len(one.body["memories"].([]any)) != 2 {
		t.Fatalf("entity: %s", one.raw)
	}
	al := ok(t, e.call("POST", b+"/entities/"+s.bob.String()+"/aliases", `{"alias":"Robert Smith"}`, ""), "alias")
	if !slices.Contains(toStrings(al.body["aliases"]), "Robert Smith") {
		t.Fatalf("alias: %s", al.raw)
	}
	var keys []string
	if err := pgtest.DB(e.st).QueryRow(t.Context(), `SELECT array_agg(alias_key ORDER BY alias_key) FROM entity_aliases WHERE entity_id = $1 AND alias = 'Robert Smith'`, s.bob).Scan(&keys); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(keys, "robert smith") || len(keys) < 2 {
		t.Fatalf("alias keys = %v, want the resolver's keys", keys)
	}
	merged := ok(t, e.call("POST", b+"/entities/"+s.bob.String()+"/merge", fmt.Sprintf(`{"into":%q}`, s.alice), ""), "merge")
	into := merged.body["into"].(map[string]any)
	if into["id"] != s.alice.String() || into["mention_count"].(float64) != 3 || !slices.Contains(toStrings(into["aliases"]), "Robert Smith") {
		t.Fatalf("merge: %s", merged.raw)
	}
	if r := e.call("GET", b+"/entities/"+s.bob.String(), "", ""); r.body["merged_into"] != s.alice.String() {
		t.Fatalf("merged entity: %s", r.raw)
	}
	if r := e.call("GET", b+"/entities/"+s.alice.String(), "", ""); len(r.body["memories"].([]any)) != 3 {
		t.Fatalf("survivor's facts: %s", r.raw)
	}
	if r := e.call("POST", b+"/entities/"+s.bob.String()+"/merge", fmt.Sprintf(`{"into":%q}`, s.alice), ""); r.status != 409 || r.errField() != "into" {
		t.Fatalf("second merge: %d %s", r.status, r.raw)
	}
	if r := e.call("POST", b+"/entities/"+s.bob.String()+"/aliases", `{"alias":"Bobby"}`, ""); r.status != 409 {
		t.Fatalf("alias on a merged entity: %d %s", r.status, r.raw)
	}
	if r := e.call("POST", b+"/entities/"+uuid.NewString()+"/merge", fmt.Sprintf(`{"into":%q}`, s.alice), ""); r.status != 404 {
		t.Fatalf("merge of an unknown entity: %d %s", r.status, r.raw)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestDocumentRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	s := seed(t, e.st, "b1")
	const b = "/v1/default/banks/b1"
	docs := ok(t, e.call("GET", b+"/documents", "", ""), "documents")
	if it := items(t, docs); len(it) != 2 || docs.body["total"].(float64) != 2 {
		t.Fatalf("documents: %s", docs.raw)
	}
	del := ok(t, e.call("DELETE", b+"/documents/doc-1", "", ""), "delete document")
	d := del.body["deleted"].(map[string]any)
	if d["memory_units_deleted"].(float64) != 2 || d["chunks_deleted"].(float64) != 1 || d["events_deleted"].(float64) != 1 || d["observations_invalidated"].(float64) != 1 {
		t.Fatalf("delete: %s", del.raw)
	}
	if _, ok := d["entities_deleted"].(float64); !ok {
		t.Fatalf("delete does not report entities_deleted: %s", del.raw)
	}
	if r := e.call("GET", b+"/memories/"+s.f1.String(), "", ""); r.status != 404 {
		t.Fatalf("fact of a deleted document: %d", r.status)
	}
	if r := e.call("GET", b+"/observations/"+s.obs.String(), "", ""); r.body["state"] != "invalidated" || len(r.body["evidence"].([]any)) != 0 {
		t.Fatalf("observation resting on the deleted document: %s", r.raw)
	}
	st := ok(t, e.call("GET", b+"/stats", "", ""), "stats")
	if st.body["documents"].(float64) != 1 || st.body["facts"].(float64) != 1 || st.body["events_ingested"].(float64) != 1 {
		t.Fatalf("stats after delete: %s", st.raw)
	}
	if r := e.call("DELETE", b+"/documents/doc-1", "", ""); r.status != 404 {
		t.Fatalf("second delete: %d", r.status)
	}
}

func TestReflectRoute(t *testing.T) {
	t.Parallel()
	fr := &fakeReflector{}
	e := newEnv(t, envOpts{reflector: fr})
	const b = "/v1/default/banks/b1"
	ok(t, e.call("PUT", b, `{"disposition":{"skepticism":5,"literalism":2,"empathy":4}}`, ""), "put bank")
	r := ok(t, e.call("POST", b+"/reflect", `{"query":" Where does Alice live? ","budget":"high","max_tokens":900,"tags":["t"],
		"response_schema":{"type":"object"},"disposition":{"empathy":1},"include":{"facts":{},"tool_calls":{"output":false}}}`, ""), "reflect")
	// With include, Hindsight's based_on objects (ids that are not
	// memories of the bank are dropped) and its trace.
	bo, _ := r.body["based_on"].(map[string]any)
	if r.body["text"] != "Alice lives in Lisbon." || bo == nil || bo["memories"] == nil || bo["directives"] == nil || r.body["trace"] == nil {
		t.Fatalf("reflect answer: %s", r.raw)
	}
	// Without include, neither (Hindsight's default).
	if r := ok(t, e.call("POST", b+"/reflect", `{"query":"q","include":null}`, ""), "plain"); r.body["based_on"] != nil || r.body["trace"] != nil {
		t.Fatalf("reflect without include: %s", r.raw)
	}
	if len(fr.got) != 2 {
		t.Fatalf("reflector calls = %d", len(fr.got))
	}
	got := fr.got[0]
	if got.BankID != "b1" || got.Query != "Where does Alice live?" || got.Budget != "high" || got.MaxTokens != 900 ||
		got.ResponseSchema["type"] != "object" || got.Disposition == nil ||
		*got.Disposition != (reflect.Disposition{Skepticism: 5, Literalism: 2, Empathy: 1}) {
		t.Fatalf("reflect request = %+v (disposition %+v)", got, got.Disposition)
	}
	ok(t, e.call("POST", b+"/reflect", `{"query":"q"}`, ""), "reflect defaults")
	if d := fr.got[2]; d.Budget != "low" || d.MaxTokens != 4096 || d.Disposition != nil {
		t.Fatalf("defaults: %+v", d)
	}
	none := newEnv(t, envOpts{})
	if r := none.call("POST", b+"/reflect", `{"query":"q"}`, ""); r.status != 503 || !strings.Contains(r.errMessage(), "reflect") {
		t.Fatalf("reflect without a reflector: %d %s", r.status, r.raw)
	}
}

func TestOpenAPIDocumentsEveryBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	r := e.call("GET", "/openapi.json", "", "-")
	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(r.raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, rt := range e.srv.table() {
		if rt.body != "" && doc.Components.Schemas[rt.body] == nil {
			t.Errorf("route %s names body schema %s, which is not in components", rt.name, rt.body)
		}
	}
}

func TestHandlerPanicAnswersJSON500(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.srv.handle("GET /boom", "boom", "", func(http.ResponseWriter, *http.Request) error { panic("bug") })
	r := e.call("GET", "/boom", "", "-")
	if r.status != 500 || r.body["error"].(map[string]any)["code"] != "internal" || strings.Contains(string(r.raw), "bug") {
		t.Fatalf("panic: %d %s", r.status, r.raw)
	}
}

// Work past the request timeout is cancelled and answered 503.
func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	seed(t, e.st, "b1")
	e.srv.cfg.RequestTimeout = time.Nanosecond
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/default/banks/b1/memories/list", ""},
		{"POST", "/v1/default/banks/b1/memories/recall", `{"query":"Alice"}`},
	} {
		r := e.call(c.method, c.path, c.body, "")
		if r.status != 503 || r.body["error"] == nil {
			t.Errorf("%s %s past its deadline: %d %s", c.method, c.path, r.status, r.raw)
		}
	}
}
