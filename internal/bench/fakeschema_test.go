package bench

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// replay posts a recorded request body (testdata/llmcalls, captured from
// Hindsight 1.1.0 and memstream talking to the fake in bench compare
// --llm fake) under prefix and returns the request and the answer's
// content.
func replay(t *testing.T, f *FakeOpenAI, prefix, name string) (chatRequest, string) {
	t.Helper()
	return post(t, f, prefix, name, recorded(t, name))
}

func recorded(t *testing.T, name string) string {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", "llmcalls", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

func equalIDs(item any, want ...string) bool {
	ids, _ := item.(map[string]any)["source_fact_ids"].([]any)
	if len(ids) != len(want) {
		return false
	}
	for i, id := range ids {
		if id != want[i] {
			return false
		}
	}
	return true
}

func post(t *testing.T, f *FakeOpenAI, prefix, name, body string) (chatRequest, string) {
	t.Helper()
	var req chatRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	f.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, prefix+"/v1/chat/completions", strings.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: %d %s", name, rec.Code, rec.Body)
	}
	var resp struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || len(resp.Choices) != 1 {
		t.Fatalf("%s: answer %s: %v", name, rec.Body, err)
	}
	return req, resp.Choices[0].Message.Content
}

// valid checks the answer against the schema the request sent.
func valid(t *testing.T, name string, req chatRequest, content string) map[string]any {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(req.ResponseFormat.JSONSchema.Schema, &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("%s: schema: %v", name, err)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(content), &v); err != nil {
		t.Fatalf("%s: answer is no JSON object: %v", name, err)
	}
	if err := rs.Validate(v); err != nil {
		t.Fatalf("%s: answer does not validate against the schema sent: %v\n%s", name, err, content)
	}
	return v
}

func userMessage(req chatRequest) string {
	for _, m := range req.Messages {
		if m.Role == "user" {
			return messageText(m.Content)
		}
	}
	return ""
}

// Hindsight's extraction gets one fact per sentence of its content, the
// fact's text in "what"; its consolidation one create per new fact, each
// citing its own id; memstream's consolidation the same; every answer
// validates against the schema sent, and nothing goes unanswered.
func TestFakeAnswersRecordedCalls(t *testing.T) {
	t.Parallel()
	f, err := NewFakeOpenAI(8, 0)
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	f.SetLog(&log)

	req, content := replay(t, f, "/hindsight", "hindsight-extract")
	v := valid(t, "hindsight-extract", req, content)
	user := userMessage(req)
	_, body, ok := strings.Cut(user, "\nContent:\n")
	if !ok {
		t.Fatal("recorded extraction has no Content: section")
	}
	want := Sentences(body)
	facts := v["facts"].([]any)
	if len(facts) != len(want) || len(want) < 5 {
		t.Fatalf("hindsight extraction: %d facts for %d sentences", len(facts), len(want))
	}
	for i, fa := range facts {
		m := fa.(map[string]any)
		if m["what"] != want[i] || m["fact_type"] != "world" || m["when"] != "" {
			t.Errorf("fact %d = %v, want what %q", i, m, want[i])
		}
	}

	req, content = replay(t, f, "/hindsight", "hindsight-consolidate")
	v = valid(t, "hindsight-consolidate", req, content)
	lines := regexp.MustCompile(`(?m)^\[([0-9a-f-]{36})\] (.*?)(?: \(mentioned_at=[^)]*\))?$`).FindAllStringSubmatch(userMessage(req), -1)
	creates := v["creates"].([]any)
	if len(lines) < 2 || len(creates) != len(lines) || len(v["updates"].([]any)) != 0 || len(v["deletes"].([]any)) != 0 {
		t.Fatalf("hindsight consolidation: %d creates for %d facts: %s", len(creates), len(lines), content)
	}
	for i, c := range creates {
		m := c.(map[string]any)
		ids := m["source_fact_ids"].([]any)
		if len(ids) != 1 || ids[0] != lines[i][1] || m["text"] != lines[i][2] {
			t.Errorf("create %d = %v, want %s %q", i, m, lines[i][1], lines[i][2])
		}
	}

	req, content = replay(t, f, "/hindsight", "hindsight-dedup")
	if v = valid(t, "hindsight-dedup", req, content); v["action"] != "keep" {
		t.Errorf("dedup = %v, want the schema's default keep", v)
	}
	if _, content = replay(t, f, "/hindsight", "hindsight-probe"); content == "" {
		t.Error("the connection probe got no text")
	}

	// The same call with an observation that already says one fact: that
	// fact confirms it (an update), the others stay creates.
	got := lines[6]
	raw := strings.Replace(recorded(t, "hindsight-consolidate"), `### Existing observations\n\n[]`, `### Existing observations\n\n[\n{\"id\": \"obs-1\", \"text\": \"`+got[2]+`\", \"proof_count\": 1}\n]`, 1)
	req, content = post(t, f, "/hindsight", "hindsight-consolidate+observation", raw)
	v = valid(t, "hindsight-consolidate+observation", req, content)
	updates := v["updates"].([]any)
	if len(v["creates"].([]any)) != len(lines)-1 || len(updates) != 1 {
		t.Fatalf("with an observation: %s", content)
	}
	if u := updates[0].(map[string]any); u["observation_id"] != "obs-1" || u["text"] != got[2] || u["source_fact_ids"].([]any)[0] != got[1] {
		t.Errorf("update = %v", u)
	}

	// memstream's call: f1 and f3 say the same thing (one create citing
	// both); with o1 saying f2 and listing f2 in for_facts, f2 updates o1.
	req, content = replay(t, f, "/memstream", "memstream-consolidate")
	v = valid(t, "memstream-consolidate", req, content)
	creates = v["creates"].([]any)
	if len(creates) != 7 || !equalIDs(creates[0], "f1", "f3") || creates[0].(map[string]any)["text"] != "That sounds like a good plan; I saved it to your notes." {
		t.Fatalf("memstream consolidation: %s", content)
	}
	for i, id := range []string{"f2", "f4", "f5", "f6", "f7", "f8"} {
		if !equalIDs(creates[i+1], id) {
			t.Errorf("create %d = %v, want it to cite %s", i+1, creates[i+1], id)
		}
	}
	raw = strings.Replace(recorded(t, "memstream-consolidate"), `\"observations\":null`,
		`\"observations\":[{\"id\":\"o1\",\"text\":\"I will remind you the day before.\",\"proof_count\":2,\"for_facts\":[\"f2\"]},{\"id\":\"o2\",\"text\":\"Thanks, that sounds great!\",\"for_facts\":[\"f4\"]}]`, 1)
	req, content = post(t, f, "/memstream", "memstream-consolidate+observation", raw)
	v = valid(t, "memstream-consolidate+observation", req, content)
	updates = v["updates"].([]any)
	if len(v["creates"].([]any)) != 6 || len(updates) != 1 || updates[0].(map[string]any)["observation_id"] != "o1" || !equalIDs(updates[0], "f2") {
		t.Fatalf("memstream with observations (o2 may not take f5): %s", content)
	}

	req, content = replay(t, f, "/memstream", "memstream-extract")
	valid(t, "memstream-extract", req, content)

	hs, ms := f.Calls("/hindsight"), f.Calls("/memstream")
	if hs.Chat.Load() != 5 || hs.Free.Load() != 1 || ms.Chat.Load() != 3 || hs.Unanswered.Load()+ms.Unanswered.Load() != 0 || log.Len() != 0 {
		t.Errorf("counts: hindsight %d chat (%d free), memstream %d, unanswered %d+%d, log %q",
			hs.Chat.Load(), hs.Free.Load(), ms.Chat.Load(), hs.Unanswered.Load(), ms.Unanswered.Load(), log.String())
	}
}

// A schema the fake cannot fill is counted and logged, not answered with
// something invalid.
func TestFakeLogsASchemaItCannotFill(t *testing.T) {
	t.Parallel()
	f, err := NewFakeOpenAI(8, 0)
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	f.SetLog(&log)
	body := `{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"odd","schema":{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}}}}`
	rec := httptest.NewRecorder()
	f.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/sys/v1/chat/completions", strings.NewReader(body)))
	if rec.Code != http.StatusBadRequest || f.Calls("/sys").Unanswered.Load() != 1 || !strings.Contains(log.String(), `schema "odd"`) {
		t.Errorf("code %d, unanswered %d, log %q", rec.Code, f.Calls("/sys").Unanswered.Load(), log.String())
	}
}
