package recallapi

import (
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// hostile is the bad-input corpus every route must answer without a 500:
// NUL bytes (PostgreSQL text cannot hold one), invalid UTF-8, huge and
// deeply nested values, wrong types and explicit nulls.
var hostile = []string{
	`{"query":"a\u0000b","content":"a\u0000b","name":"a\u0000","text":"\u0000","items":[{"content":"x\u0000"}],"tags":["\u0000"]}`,
	"{\"query\":\"\xff\xfe\",\"name\":\"\xc3\x28\",\"items\":[{\"content\":\"\xed\xa0\x80\"}]}",
	`{"query":"` + strings.Repeat("q", 20000) + `","name":"` + strings.Repeat("n", 20000) + `","items":[{"content":"` + strings.Repeat("c", 30000) + `"}]}`,
	`{"tags":[` + strings.Repeat(`"t",`, 5000) + `"t"],"metadata":{"` + strings.Repeat("k", 5000) + `":"v"}}`,
	`{"query":1e309,"max_tokens":1e40,"limit":-9223372036854775809,"items":"nope","updates":[],"disposition":"x"}`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	`{"query":null,"items":null,"name":null,"content":null,"tags":null,"updates":null,"url":null,"include":null}`,
	`{"tag_groups":[{"not":{"not":{"and":[{"or":[{"tags":["a\u0000"]}]}]}}}],"query":"x"}`,
	`{"updates":{"disposition_skepticism":1e9,"retain_chunk_size":"\u0000","background":"\u0000"}}`,
	`{"defense_policy":{"default":"block","labels":{"\u0000":"x"}},"url":"http://\u0000"}`,
}

// hostileParams are path and query values of the same kinds.
var hostileParams = []string{"a\x00b", "\xff\xfe", strings.Repeat("x", 5000), "../../etc"}

// TestNoRouteAnswers500 sends the corpus to every route with every method
// the route serves, as bodies, path parameters and query strings: no
// answer may be a 500 (issue 15: "no input gives a 500").
func TestNoRouteAnswers500(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{maxBody: 1 << 20, reflector: &fakeReflector{}, refresher: &fakeRefresher{}})
	seed(t, e.st, "probe-bank")
	ids := strings.NewReplacer("{bank_id}", "probe-bank", "{memory_id}", uuid.NewString(), "{observation_id}", uuid.NewString(),
		"{entity_id}", uuid.NewString(), "{mental_model_id}", uuid.NewString(), "{document_id}", "doc-1",
		"{alias}", "probe-alias", "{attachment_id}", "att", "{log_id}", uuid.NewString(), "{directive_id}", uuid.NewString(),
		"{node_id}", uuid.NewString(), "{page_id}", uuid.NewString(), "{operation_id}", uuid.NewString(), "{webhook_id}", uuid.NewString(),
		"{chunk_id}", uuid.NewString(), "{key}", "k", "{topic}", "memstream.events", "{partition}", "0", "{offset}", "0")
	n := 0
	for _, rt := range e.srv.table() {
		base := ids.Replace(rt.path)
		var reqs [][2]string // path, body
		for _, b := range hostile {
			reqs = append(reqs, [2]string{base, b})
		}
		for _, p := range hostileParams {
			q := url.Values{}
			for _, name := range []string{"q", "limit", "offset", "tags", "type", "start_date", "period", "cursor", "target_bank_id", "reason"} {
				q.Set(name, p)
			}
			reqs = append(reqs, [2]string{base + "?" + q.Encode(), "{}"})
			// The value in each path parameter in turn.
			for _, m := range pathParam.FindAllString(rt.path, -1) {
				reqs = append(reqs, [2]string{ids.Replace(strings.Replace(rt.path, m, url.PathEscape(p), 1)), "{}"})
			}
		}
		for _, rq := range reqs {
			body := rq[1]
			if rt.method == "GET" || rt.method == "DELETE" {
				body = ""
			}
			r := e.call(rt.method, rq[0], body, "")
			n++
			if r.status >= 500 && r.status != 501 && r.status != 503 {
				t.Errorf("%s %s %.80q: %d %s", rt.method, rt.path, body, r.status, r.raw)
			}
		}
	}
	t.Logf("%d hostile requests, no 500", n)
}
