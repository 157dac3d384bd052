package consolidate_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memstream/memstream/consolidate"
)

// fakeModel is an OpenAI-compatible chat endpoint whose answers the test
// computes from the prompt it receives.
type fakeModel struct {
	t      *testing.T
	mu     sync.Mutex
	calls  int
	answer func(call int, facts []map[string]any, obs []map[string]any) string
}

func (f *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model          string `json:"model"`
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string          `json:"name"`
				Strict bool            `json:"strict"`
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "bad request", 400)
		return
	}
	if req.Model != "fake-model" || req.ResponseFormat.Type != "json_schema" || !req.ResponseFormat.JSONSchema.Strict ||
		!strings.Contains(string(req.ResponseFormat.JSONSchema.Schema), `"source_fact_ids"`) {
		f.t.Errorf("request shape: %+v", req)
	}
	var in struct {
		Facts        []map[string]any `json:"facts"`
		Observations []map[string]any `json:"observations"`
	}
	if err := json.Unmarshal([]byte(req.Messages[1].Content), &in); err != nil {
		f.t.Errorf("user message is not the batch JSON: %v", err)
	}
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.mu.Unlock()
	content := f.answer(n, in.Facts, in.Observations)
	resp := map[string]any{"id": fmt.Sprint("c", n), "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}}}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func ref(items []map[string]any, textContains string) string {
	for _, it := range items {
		if strings.Contains(it["text"].(string), textContains) {
			return it["id"].(string)
		}
	}
	return "missing"
}

func TestOpenAIAdjudicator(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fake := &fakeModel{t: t}
	fake.answer = func(call int, facts, obs []map[string]any) string {
		switch call {
		case 1:
			if len(facts) != 3 || len(obs) != 0 {
				t.Errorf("call 1 batch: %d facts, %d observations", len(facts), len(obs))
			}
			return fmt.Sprintf(`{"creates":[{"text":"Dana lives in Paris","source_fact_ids":[%q,%q],"reason":"new residence"},
				{"text":"Dana plays chess","source_fact_ids":[%q],"reason":"new hobby"}],"updates":[],"deletes":[]}`,
				ref(facts, "lives"), ref(facts, "home"), ref(facts, "chess"))
		case 2:
			// Invalid: an observation the batch does not hold. Re-asked.
			return `{"creates":[],"updates":[{"observation_id":"o9","text":"x","source_fact_ids":["f1"],"reason":"r"}],"deletes":[]}`
		default:
			return fmt.Sprintf(`{"creates":[{"text":"Dana stopped playing chess","source_fact_ids":[%q],"reason":"retraction"}],
				"updates":[{"observation_id":%q,"text":"Dana lives in Berlin","source_fact_ids":[%q],"reason":"moved from Paris to Berlin"}],
				"deletes":[{"observation_id":%q,"reason":"Dana stopped playing chess"}]}`,
				ref(facts, "stopped"), ref(obs, "Paris"), ref(facts, "Berlin"), ref(obs, "chess"))
		}
	}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	adj, err := consolidate.NewOpenAI(consolidate.OpenAIDeps{}, consolidate.OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "fake-model", APIKey: "k", FactsPerCall: 4})
	if err != nil {
		t.Fatal(err)
	}
	w := e.worker(consolidate.Deps{Adjudicator: adj}, consolidate.Config{})
	e.persist("dana", fact{text: "Dana lives in Paris", at: now.AddDate(0, -4, 0)},
		fact{text: "Dana's home is in Paris", at: now.AddDate(0, -3, 0)},
		fact{text: "Dana plays chess on Sundays", at: now.AddDate(0, -3, 0)})
	if res := e.drain(w, "dana"); res.Created != 2 || res.Evidence != 3 {
		t.Fatalf("round 1 = %+v", res)
	}
	e.persist("dana", fact{text: "Dana moved to Berlin", at: now.AddDate(0, 0, -3)},
		fact{text: "Dana stopped playing chess", at: now.AddDate(0, 0, -2)})
	res := e.drain(w, "dana")
	if res.Updated != 1 || res.Invalidated != 1 || res.Created != 1 {
		t.Fatalf("round 2 = %+v", res)
	}
	if fake.calls != 3 {
		t.Errorf("calls = %d, want 3 (one re-ask)", fake.calls)
	}
	obs := e.observations("dana")
	byText := map[string]obsRow{}
	for _, o := range obs {
		byText[o.Text] = o
	}
	berlin := byText["Dana lives in Berlin"]
	if berlin.Evidence != 3 || berlin.State != "valid" {
		t.Fatalf("updated observation = %+v (all %+v)", berlin, obs)
	}
	if n := e.count(`SELECT count(*) FROM observation_history WHERE observation_id = $1 AND action = 'update'
		AND old_text = 'Dana lives in Paris' AND new_text = 'Dana lives in Berlin'`, berlin.ID); n != 1 {
		t.Errorf("update history rows = %d", n)
	}
	// The new text got its own embedding (not the fact's).
	if n := e.count(`SELECT count(*) FROM memory_units WHERE id = $1 AND embedding IS NOT NULL AND search_tsv @@ to_tsquery('english', 'berlin')`, berlin.ID); n != 1 {
		t.Errorf("updated observation not searchable by its new text")
	}
	if chess := byText["Dana plays chess"]; chess.State != "invalidated" || chess.Reason != "Dana stopped playing chess" {
		t.Errorf("chess observation = %+v", chess)
	}
}

func TestOpenAIAdjudicatorGivesUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fake := &fakeModel{t: t, answer: func(int, []map[string]any, []map[string]any) string { return `{"creates": "nope"}` }}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	adj, err := consolidate.NewOpenAI(consolidate.OpenAIDeps{}, consolidate.OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "fake-model", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w := e.worker(consolidate.Deps{Adjudicator: adj}, consolidate.Config{})
	e.persist("erin", fact{text: "Erin likes jazz", at: now})
	if _, err := w.DrainBank(t.Context(), "erin"); err == nil || !strings.Contains(err.Error(), "invalid after 2 attempts") {
		t.Fatalf("drain with a broken model: %v", err)
	}
	// Nothing was applied: the fact is still pending for the retry.
	if n := e.count(`SELECT count(*) FROM consolidation_queue WHERE bank_id = 'erin'`); n != 1 {
		t.Fatalf("pending facts = %d", n)
	}
	if _, err := consolidate.NewOpenAI(consolidate.OpenAIDeps{}, consolidate.OpenAIConfig{BaseURL: srv.URL}); err == nil || !strings.Contains(err.Error(), "llm.model") {
		t.Fatalf("missing model accepted: %v", err)
	}
}
