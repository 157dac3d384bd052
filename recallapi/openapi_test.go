package recallapi

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
)

var httpMethods = []string{"GET", "PUT", "POST", "DELETE", "PATCH"}

// TestOpenAPIDrift holds /openapi.json and the mux to each other: every
// pattern registered in the mux is documented with the same method and
// path, every documented operation is registered, and requests built from
// the document reach a handler (the mux answers neither 404 nor 405),
// while methods the document leaves out are refused by the mux.
func TestOpenAPIDrift(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	r := e.call("GET", "/openapi.json", "", "-")
	if r.status != 200 {
		t.Fatalf("openapi.json: %d", r.status)
	}
	var doc map[string]any
	if err := json.Unmarshal(r.raw, &doc); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	validateOpenAPI3(t, doc)

	documented := map[string]bool{}
	paths := doc["paths"].(map[string]any)
	for p, item := range paths {
		for m := range item.(map[string]any) {
			documented[strings.ToUpper(m)+" "+p] = true
		}
	}
	registered := map[string]bool{}
	for _, p := range e.srv.patterns {
		if registered[p] {
			t.Errorf("pattern %s registered twice", p)
		}
		registered[p] = true
	}
	for p := range registered {
		if !documented[p] {
			t.Errorf("%s is served but not in /openapi.json", p)
		}
	}
	for p := range documented {
		if !registered[p] {
			t.Errorf("%s is in /openapi.json but not served", p)
		}
	}
	if len(documented) < 30 {
		t.Fatalf("only %d operations documented", len(documented))
	}

	// Probe the mux itself with requests built from the document.
	fill := strings.NewReplacer("{bank_id}", "probe-bank", "{memory_id}", uuid.NewString(), "{observation_id}", uuid.NewString(),
		"{entity_id}", uuid.NewString(), "{mental_model_id}", uuid.NewString(), "{document_id}", "probe-doc",
		"{topic}", "probe.topic", "{partition}", "0", "{offset}", "0",
		"{alias}", "probe-alias", "{attachment_id}", "probe-att", "{log_id}", uuid.NewString(), "{directive_id}", uuid.NewString(),
		"{node_id}", uuid.NewString(), "{page_id}", uuid.NewString(), "{operation_id}", uuid.NewString(), "{webhook_id}", uuid.NewString(),
		"{chunk_id}", uuid.NewString(), "{key}", "probe-key")
	keys := make([]string, 0, len(paths))
	for p := range paths {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	for _, p := range keys {
		url := fill.Replace(p)
		if strings.Contains(url, "{") {
			t.Errorf("path %s has a parameter the probe does not know", p)
			continue
		}
		ops := paths[p].(map[string]any)
		for _, m := range httpMethods {
			_, inDoc := ops[strings.ToLower(m)]
			body := ""
			if m != "GET" && m != "DELETE" {
				body = "{}"
			}
			resp := e.call(m, url, body, "")
			fromMux := resp.status == 405 || resp.errCode() == "route_not_found"
			switch {
			case inDoc && fromMux:
				t.Errorf("%s %s is documented but the mux answers %d", m, url, resp.status)
			case !inDoc && !matchesOther(paths, m, p, url) && resp.status != 405:
				t.Errorf("%s %s is not documented but answered %d, not the mux's 405", m, url, resp.status)
			}
		}
	}
	// The probe can tell the mux's own answer from a handler's, and both
	// are JSON errors.
	if resp := e.call("GET", "/v1/default/banks/b/nowhere", "", ""); resp.status != 404 || resp.errCode() != "route_not_found" {
		t.Fatalf("unknown path: %d %s", resp.status, resp.raw)
	}
	if resp := e.call("PUT", "/v1/default/banks/b/stats", "{}", ""); resp.status != 405 || resp.errCode() != "method_not_allowed" || resp.header.Get("Allow") == "" {
		t.Fatalf("wrong method: %d %s (Allow %q)", resp.status, resp.raw, resp.header.Get("Allow"))
	}
	// Every error carries its message again as Hindsight's `detail`, the
	// mux's and a handler's alike.
	for _, resp := range []resp{
		e.call("GET", "/v1/default/banks/b/nowhere", "", ""),
		e.call("POST", "/v1/default/banks/b/memories/recall", `{"query": 5}`, ""),
	} {
		if d, _ := resp.body["detail"].(string); d == "" || d != resp.errMessage() {
			t.Fatalf("detail %q, message %q: %s", resp.body["detail"], resp.errMessage(), resp.raw)
		}
	}
}

var pathParamRe = regexp.MustCompile(`\{([^}]+)\}`)

// matchesOther reports whether another documented path with this method
// matches url: GET …/memories/recall is, rightly, GET …/memories/{memory_id}.
func matchesOther(paths map[string]any, method, self, url string) bool {
	for p, item := range paths {
		if p == self {
			continue
		}
		if _, ok := item.(map[string]any)[strings.ToLower(method)]; !ok {
			continue
		}
		re := "^" + strings.ReplaceAll(regexp.QuoteMeta(pathParamRe.ReplaceAllString(p, "\x00")), "\x00", `[^/]+`) + "$"
		if regexp.MustCompile(re).MatchString(url) {
			return true
		}
	}
	return false
}

// validateOpenAPI3 checks the structure OpenAPI 3.0 requires of what the
// server emits: version, info, paths with operations whose path
// parameters are declared, responses with descriptions, unique operation
// ids, and $refs that resolve.
func validateOpenAPI3(t *testing.T, doc map[string]any) {
	t.Helper()
	if v, _ := doc["openapi"].(string); !regexp.MustCompile(`^3\.0\.\d+$`).MatchString(v) {
		t.Errorf("openapi = %q, want 3.0.x", v)
	}
	info, _ := doc["info"].(map[string]any)
	if s, _ := info["title"].(string); s == "" {
		t.Error("info.title missing")
	}
	if s, _ := info["version"].(string); s == "" {
		t.Error("info.version missing")
	}
	paths, ok := doc["paths"].(map[string]any)
	if !ok || len(paths) == 0 {
		t.Fatal("paths missing")
	}
	ops := map[string]string{}
	for p, rawItem := range paths {
		if !strings.HasPrefix(p, "/") {
			t.Errorf("path %q does not start with /", p)
		}
		item, ok := rawItem.(map[string]any)
		if !ok {
			t.Errorf("path %s is not an object", p)
			continue
		}
		want := []string{}
		for _, m := range pathParamRe.FindAllStringSubmatch(p, -1) {
			want = append(want, m[1])
		}
		for m, rawOp := range item {
			if !slices.Contains(httpMethods, strings.ToUpper(m)) || m != strings.ToLower(m) {
				t.Errorf("%s: %q is not an operation", p, m)
				continue
			}
			op := rawOp.(map[string]any)
			where := fmt.Sprintf("%s %s", m, p)
			id, _ := op["operationId"].(string)
			if id == "" {
				t.Errorf("%s: no operationId", where)
			} else if prev, dup := ops[id]; dup {
				t.Errorf("operationId %s used by %s and %s", id, prev, where)
			}
			ops[id] = where
			responses, _ := op["responses"].(map[string]any)
			if len(responses) == 0 {
				t.Errorf("%s: no responses", where)
			}
			for code, rr := range responses {
				if code != "default" && !regexp.MustCompile(`^[1-5]\d\d$`).MatchString(code) {
					t.Errorf("%s: response key %q", where, code)
				}
				if d, _ := rr.(map[string]any)["description"].(string); d == "" {
					t.Errorf("%s: response %s has no description", where, code)
				}
			}
			var declared []string
			params, _ := op["parameters"].([]any)
			for _, rp := range params {
				prm := rp.(map[string]any)
				in, _ := prm["in"].(string)
				if !slices.Contains([]string{"path", "query", "header", "cookie"}, in) {
					t.Errorf("%s: parameter in %q", where, in)
				}
				if in == "path" {
					if prm["required"] != true {
						t.Errorf("%s: path parameter %v not required", where, prm["name"])
					}
					declared = append(declared, prm["name"].(string))
				}
			}
			slices.Sort(declared)
			w := slices.Clone(want)
			slices.Sort(w)
			if !slices.Equal(declared, w) {
				t.Errorf("%s: path parameters declared %v, in path %v", where, declared, w)
			}
			if rb, ok := op["requestBody"].(map[string]any); ok {
				if _, ok := rb["content"].(map[string]any)["application/json"]; !ok {
					t.Errorf("%s: request body is not application/json", where)
				}
			}
		}
	}
	// Every $ref resolves inside the document.
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				if !resolves(doc, ref) {
					t.Errorf("$ref %s does not resolve", ref)
				}
			}
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(doc)
}

func resolves(doc map[string]any, ref string) bool {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return false
	}
	var cur any = doc
	for _, part := range strings.Split(p, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[part]; !ok {
			return false
		}
	}
	return true
}
