package recallapi

import (
	"strings"
	"testing"

	"github.com/google/uuid"
)

// Every bad request gets the right status and names the field at fault.
func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{maxBody: 4096, reflector: &fakeReflector{}, refresher: &fakeRefresher{}})
	const b = "/v1/default/banks/b1"
	id := uuid.NewString()
	if r := e.call("PUT", "/v1/default/banks/b0", `{}`, ""); r.status != 200 {
		t.Fatalf("put bank: %d %s", r.status, r.raw)
	}
	big := `{"query":"` + strings.Repeat("x", 5000) + `"}`
	for _, c := range []struct {
		name, method, path, body, ct string
		status                       int
		field                        string
	}{
		// recall
		{"recall: missing query", "POST", b + "/memories/recall", `{}`, "", 400, "query"},
		{"recall: blank query", "POST", b + "/memories/recall", `{"query":"   "}`, "", 400, "query"},
		{"recall: negative max_tokens", "POST", b + "/memories/recall", `{"query":"x","max_tokens":-1}`, "", 400, "max_tokens"},
		{"recall: zero max_tokens", "POST", b + "/memories/recall", `{"query":"x","max_tokens":0}`, "", 400, "max_tokens"},
		{"recall: unknown type", "POST", b + "/memories/recall", `{"query":"x","types":["opinion"]}`, "", 400, "types"},
		{"recall: bad tags_match", "POST", b + "/memories/recall", `{"query":"x","tags_match":"some"}`, "", 400, "tags_match"},
		{"recall: bad budget", "POST", b + "/memories/recall", `{"query":"x","budget":"huge"}`, "", 400, "budget"},
		{"recall: bad fusion", "POST", b + "/memories/recall", `{"query":"x","fusion":"max"}`, "", 400, "fusion"},
		{"recall: bad arm", "POST", b + "/memories/recall", `{"query":"x","arms":["vibes"]}`, "", 400, "arms"},
		{"recall: bad query_timestamp", "POST", b + "/memories/recall", `{"query":"x","query_timestamp":"yesterday"}`, "", 400, "query_timestamp"},
		{"recall: NUL in query", "POST", b + "/memories/recall", `{"query":"x\u0000y"}`, "", 400, "query"},
		{"recall: NUL in tags", "POST", b + "/memories/recall", `{"query":"x","tags":["a\u0000"]}`, "", 400, "tags[0]"},
		{"recall: invalid UTF-8", "POST", b + "/memories/recall", "{\"query\":\"\xff\xfe\"}", "", 400, ""},
		{"recall: bad tag group", "POST", b + "/memories/recall", `{"query":"x","tag_groups":[{"tags":["a"],"and":[]}]}`, "", 400, "tag_groups[0]"},
		{"recall: tags and tag_groups", "POST", b + "/memories/recall", `{"query":"x","tags":["a"],"tag_groups":[{"tags":["b"]}]}`, "", 400, "tag_groups"},
		{"recall: wrong type", "POST", b + "/memories/recall", `{"query":5}`, "", 400, "query"},
		{"recall: wrong type of max_tokens", "POST", b + "/memories/recall", `{"query":"x","max_tokens":"many"}`, "", 400, "max_tokens"},
		{"recall: oversized body", "POST", b + "/memories/recall", big, "", 413, ""},
		{"recall: wrong content type", "POST", b + "/memories/recall", `{"query":"x"}`, "text/plain", 415, ""},
		{"recall: form content type", "POST", b + "/memories/recall", `query=x`, "application/x-www-form-urlencoded", 415, ""},
		{"recall: empty body", "POST", b + "/memories/recall", ``, "", 400, ""},
		{"recall: not JSON", "POST", b + "/memories/recall", `{query:x}`, "", 400, ""},
		{"recall: two values", "POST", b + "/memories/recall", `{"query":"x"} {"query":"y"}`, "", 400, ""},
		{"recall: an array", "POST", b + "/memories/recall", `[1]`, "", 400, ""},
		{"recall: bad bank id", "POST", "/v1/default/banks/-bad/memories/recall", `{"query":"x"}`, "", 400, "bank_id"},
		// retain
		{"retain: empty tag", "POST", b + "/memories", `{"items":[{"content":"x","tags":["ok",""]}]}`, "", 400, "items[0].tags[1]"},
		{"recall: empty tag", "POST", b + "/memories/recall", `{"query":"x","tags":[""]}`, "", 400, "tags[0]"},
		{"retain: no items", "POST", b + "/memories", `{"items":[]}`, "", 400, "items"},
		{"retain: empty content", "POST", b + "/memories", `{"items":[{"content":"ok"},{"content":" "}]}`, "", 400, "items[1].content"},
		{"retain: bad timestamp", "POST", b + "/memories", `{"items":[{"content":"x","timestamp":"noon"}]}`, "", 400, "items[0].timestamp"},
		{"retain: no content (unknown fields are ignored)", "POST", b + "/memories", `{"items":[{"text":"x"}]}`, "", 400, "items[0].content"},
		{"retain: NUL in content", "POST", b + "/memories", `{"items":[{"content":"a\u0000b"}]}`, "", 400, "items[0].content"},
		{"retain: NUL in metadata", "POST", b + "/memories", `{"items":[{"content":"a","metadata":{"k":"\u0000"}}]}`, "", 400, "items[0].metadata.k"},
		{"retain: invalid UTF-8", "POST", b + "/memories", "{\"items\":[{\"content\":\"\xc3\x28\"}]}", "", 400, ""},
		{"retain: long document id", "POST", b + "/memories", `{"items":[{"content":"a","document_id":"` + strings.Repeat("d", 600) + `"}]}`, "", 400, "items[0].document_id"},
		{"retain: too many tags", "POST", b + "/memories", `{"items":[{"content":"a","tags":[` + strings.Repeat(`"t",`, 100) + `"t"]}]}`, "", 400, "items[0].tags"},
		{"retain: bad update_mode", "POST", b + "/memories", `{"items":[{"content":"a","update_mode":"merge"}]}`, "", 400, "items[0].update_mode"},
		{"retain: image block", "POST", b + "/memories", `{"items":[{"content":[{"type":"image","source":{}}]}]}`, "", 400, "items[0].content"},
		{"retain: bad operation_id", "POST", b + "/memories", `{"items":[{"content":"a"}],"operation_id":"x"}`, "", 400, "operation_id"},
		{"list: NUL in q", "GET", b + "/memories/list?q=a%00b", "", "", 400, "q"},
		{"list: invalid UTF-8 in q", "GET", b + "/memories/list?q=%ff", "", "", 400, "q"},
		{"document: NUL in id", "GET", b + "/documents/a%00b", "", "", 400, "document_id"},
		{"bank: NUL in name", "PUT", b, `{"name":"a\u0000"}`, "", 400, "name"},
		{"bank: unknown defense_policy key", "PUT", b, `{"defense_policy":{"default_action":"block"}}`, "", 400, "defense_policy.default_action"},
		{"config: unknown key", "PATCH", b + "/config", `{"updates":{"no_such_key":1}}`, "", 400, "updates.no_such_key"},
		{"config: wrong type", "PATCH", b + "/config", `{"updates":{"retain_chunk_size":"big"}}`, "", 400, "updates.retain_chunk_size"},
		{"operation: bad id", "GET", b + "/operations/nope", "", "", 400, "operation_id"},
		{"directive: no content", "POST", b + "/directives", `{"name":"n"}`, "", 400, "content"},
		{"webhook: bad url", "POST", b + "/webhooks", `{"url":"ftp://x"}`, "", 400, "url"},
		{"webhook: bad event", "POST", b + "/webhooks", `{"url":"http://x","event_types":["boom"]}`, "", 400, "event_types[0]"},
		{"retain: wrong content type", "POST", b + "/memories", `{"items":[{"content":"x"}]}`, "text/csv", 415, ""},
		// lists
		{"list: unknown type", "GET", b + "/memories/list?type=opinion", "", "", 400, "type"},
		{"list: limit 0", "GET", b + "/memories/list?limit=0", "", "", 400, "limit"},
		{"list: limit too big", "GET", b + "/memories/list?limit=100000", "", "", 400, "limit"},
		{"list: negative offset", "GET", b + "/memories/list?offset=-1", "", "", 400, "offset"},
		{"list: bad state", "GET", b + "/memories/list?state=gone", "", "", 400, "state"},
		{"observations: bad limit", "GET", b + "/observations?limit=x", "", "", 400, "limit"},
		{"entities: bad offset", "GET", b + "/entities?offset=x", "", "", 400, "offset"},
		{"documents: bad limit", "GET", b + "/documents?limit=-3", "", "", 400, "limit"},
		// ids
		{"memory: bad id", "GET", b + "/memories/not-a-uuid", "", "", 400, "memory_id"},
		{"memory: bad id on delete", "DELETE", b + "/memories/123", "", "", 400, "memory_id"},
		{"memory: unknown", "GET", b + "/memories/" + id, "", "", 404, ""},
		{"memory: delete unknown", "DELETE", b + "/memories/" + id, "", "", 404, ""},
		{"observation: bad id", "GET", b + "/observations/x", "", "", 400, "observation_id"},
		{"entity: bad id", "GET", b + "/entities/x", "", "", 400, "entity_id"},
		{"entity: unknown", "GET", b + "/entities/" + id, "", "", 404, ""},
		{"merge: missing into", "POST", b + "/entities/" + id + "/merge", `{}`, "", 400, "into"},
		{"merge: bad into", "POST", b + "/entities/" + id + "/merge", `{"into":"bob"}`, "", 400, "into"},
		{"merge: into itself", "POST", b + "/entities/" + id + "/merge", `{"into":"` + id + `"}`, "", 409, "into"},
		{"alias: empty", "POST", b + "/entities/" + id + "/aliases", `{"alias":""}`, "", 400, "alias"},
		{"alias: punctuation only", "POST", b + "/entities/" + id + "/aliases", `{"alias":"!!"}`, "", 400, "alias"},
		{"alias: unknown entity", "POST", b + "/entities/" + id + "/aliases", `{"alias":"Al"}`, "", 404, ""},
		// mental models
		{"model: missing name", "POST", b + "/mental-models", `{"source_query":"q"}`, "", 400, "name"},
		{"model: missing source_query", "POST", b + "/mental-models", `{"name":"n"}`, "", 400, "source_query"},
		{"model: max_tokens 0", "POST", b + "/mental-models", `{"name":"n","source_query":"q","max_tokens":0}`, "", 400, "max_tokens"},
		{"model: empty tag", "POST", b + "/mental-models", `{"name":"n","source_query":"q","tags":["a",""]}`, "", 400, "tags[1]"},
		{"model: bad id", "GET", b + "/mental-models/x", "", "", 400, "mental_model_id"},
		{"model: unknown", "GET", b + "/mental-models/" + id, "", "", 404, ""},
		{"model: empty patch", "PATCH", b + "/mental-models/" + id, `{}`, "", 400, ""},
		{"model: patch blank name", "PATCH", b + "/mental-models/" + id, `{"name":" "}`, "", 400, "name"},
		{"model: patch unknown", "PATCH", b + "/mental-models/" + id, `{"name":"n"}`, "", 404, ""},
		{"model: delete unknown", "DELETE", b + "/mental-models/" + id, "", "", 404, ""},
		{"model: refresh unknown", "POST", b + "/mental-models/" + id + "/refresh", "", "", 404, ""},
		// documents
		{"document: delete unknown", "DELETE", b + "/documents/nope", "", "", 404, ""},
		// reflect
		{"reflect: missing query", "POST", b + "/reflect", `{"budget":"low"}`, "", 400, "query"},
		{"reflect: negative max_tokens", "POST", b + "/reflect", `{"query":"q","max_tokens":-5}`, "", 400, "max_tokens"},
		{"reflect: bad budget", "POST", b + "/reflect", `{"query":"q","budget":"all"}`, "", 400, "budget"},
		{"reflect: trait too high", "POST", b + "/reflect", `{"query":"q","disposition":{"empathy":9}}`, "", 400, "disposition.empathy"},
		{"reflect: trait too low", "POST", b + "/reflect", `{"query":"q","disposition":{"skepticism":0}}`, "", 400, "disposition.skepticism"},
		{"reflect: NUL in context", "POST", b + "/reflect", `{"query":"q","context":"\u0000"}`, "", 400, "context"},
		{"reflect: bad fact type", "POST", b + "/reflect", `{"query":"q","fact_types":["opinion"]}`, "", 400, "fact_types"},
		{"reflect: schema not an object", "POST", b + "/reflect", `{"query":"q","response_schema":"json"}`, "", 400, "response_schema"},
		{"reflect: wrong content type", "POST", b + "/reflect", `{"query":"q"}`, "text/plain", 415, ""},
		// banks
		{"bank: trait out of range", "PUT", b, `{"disposition":{"skepticism":0,"literalism":3,"empathy":3}}`, "", 400, "disposition.skepticism"},
		{"bank: bad consolidation", "PATCH", "/v1/default/banks/b0", `{"consolidation":"stopped"}`, "", 400, "consolidation"},
		{"bank: patch unknown bank", "PATCH", "/v1/default/banks/nobank", `{"name":"x"}`, "", 404, ""},
		{"bank: bad policy", "PUT", b, `{"defense_policy":{"default":"explode"}}`, "", 400, "defense_policy"},
	} {
		ct := c.ct
		if ct == "" {
			ct = "application/json"
		}
		r := e.callCT(c.method, c.path, c.body, "", ct)
		if r.status != c.status {
			t.Errorf("%s: status %d (%s), want %d", c.name, r.status, r.raw, c.status)
			continue
		}
		if r.body["error"] == nil {
			t.Errorf("%s: not a JSON error: %s", c.name, r.raw)
			continue
		}
		if r.errField() != c.field {
			t.Errorf("%s: field %q (%s), want %q", c.name, r.errField(), r.errMessage(), c.field)
		}
		if c.field != "" && !strings.Contains(r.errMessage(), strings.Split(c.field, "[")[0]) {
			t.Errorf("%s: message %q does not name %s", c.name, r.errMessage(), c.field)
		}
	}
	if got := e.pub.published(); len(got) != 0 {
		t.Fatalf("bad retains produced %d events", len(got))
	}
}
