package reflect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	openai "github.com/sashabaranov/go-openai"

	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/store"
)

// memRecaller is an in-memory Recaller: word-overlap ranking over fixed
// results, honouring Types and MaxTokens, so loop tests need no database.
type memRecaller struct {
	results []recall.Result
	mu      sync.Mutex
	reqs    []recall.Request
}

func (m *memRecaller) Recall(_ context.Context, req recall.Request) (recall.Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	words := strings.Fields(strings.ToLower(req.Query))
	var out []recall.Result
	used := 0
	for _, r := range m.results {
		if len(req.Types) > 0 && !slices.Contains(req.Types, r.Type) {
			continue
		}
		score := 0.0
		for _, w := range words {
			if strings.Contains(strings.ToLower(r.Text), strings.Trim(w, "?.,")) {
				score++
			}
		}
		r.Scores.Final = score
		if used+testTokens().Count(r.Text) > req.MaxTokens {
			break
		}
		used += testTokens().Count(r.Text)
		out = append(out, r)
	}
	return recall.Response{Results: out}, nil
}

// memStore is an in-memory MemoryStore.
type memStore struct {
	bank   store.Bank
	models []store.MentalModelHit
	chunks map[uuid.UUID]string
}

func (m *memStore) GetBank(_ context.Context, id string) (store.Bank, error) {
	if id != m.bank.ID {
		return store.Bank{}, fmt.Errorf("get bank %s: %w", id, store.ErrNotFound)
	}
	return m.bank, nil
}

func (m *memStore) RankMentalModels(_ context.Context, _, _ string, _ []string, limit int) ([]store.MentalModelHit, error) {
	return m.models[:min(limit, len(m.models))], nil
}

func (m *memStore) ExpandMemories(_ context.Context, _ string, ids []uuid.UUID, _ string) ([]store.MemoryContext, error) {
	var out []store.MemoryContext
	for _, id := range ids {
		if t, ok := m.chunks[id]; ok {
			out = append(out, store.MemoryContext{MemoryID: id, DocumentID: "doc", Text: t})
		}
	}
	return out, nil
}

// step is one scripted model answer: tool calls, text, or an HTTP error.
type step struct {
	calls   [][2]string // tool name, raw arguments
	content string
	status  int
	errBody string
}

// fakeLLM is a scripted OpenAI-compatible chat server. It records every
// request and answers from script in order (the last step repeats).
type fakeLLM struct {
	t      *testing.T
	script func(i int, req openai.ChatCompletionRequest) step
	mu     sync.Mutex
	reqs   []openai.ChatCompletionRequest
	raw    []map[string]any
}

func (f *fakeLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req openai.ChatCompletionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		f.t.Errorf("fake llm: bad request body: %v", err)
	}
	var raw map[string]any
	_ = json.Unmarshal(body, &raw)
	f.mu.Lock()
	i := len(f.reqs)
	f.reqs = append(f.reqs, req)
	f.raw = append(f.raw, raw)
	f.mu.Unlock()
	st := f.script(i, req)
	w.Header().Set("Content-Type", "application/json")
	if st.status != 0 {
		w.WriteHeader(st.status)
		_, _ = io.WriteString(w, st.errBody)
		return
	}
	msg := openai.ChatCompletionMessage{Role: "assistant", Content: st.content}
	for j, c := range st.calls {
		msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{ID: fmt.Sprintf("call_%d_%d", i, j), Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c[0], Arguments: c[1]}})
	}
	_ = json.NewEncoder(w).Encode(openai.ChatCompletionResponse{ID: "x", Model: req.Model,
		Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: "stop"}},
		Usage:   openai.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110}})
}

func (f *fakeLLM) requests() []openai.ChatCompletionRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// Fixture ids.
var (
	factOld = uuid.MustParse("00000000-0000-0000-0000-0000000000a1")
	factNew = uuid.MustParse("00000000-0000-0000-0000-0000000000a2")
	obsID   = uuid.MustParse("00000000-0000-0000-0000-0000000000b1")
	modelID = uuid.MustParse("00000000-0000-0000-0000-0000000000c1")
)

func fixtureDeps() (*memRecaller, *memStore) {
	rec := &memRecaller{results: []recall.Result{
		{ID: obsID, Type: "observation", Text: "Alice lives in Shanghai", Trend: "NEW", ProofCount: 2, MentionedAt: time.Date(2025, 5, 2, 0, 0, 0, 0, time.UTC)},
		{ID: factNew, Type: "world", Text: "Alice moved to Shanghai", MentionedAt: time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC)},
		{ID: factOld, Type: "world", Text: "Alice lives in Beijing", MentionedAt: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)},
	}}
	st := &memStore{bank: store.Bank{ID: "alice", Skepticism: 3, Literalism: 3, Empathy: 3},
		models: []store.MentalModelHit{{ID: modelID, Name: "home", SourceQuery: "Where does Alice live?", Content: "Alice lives in Shanghai.", Score: 0.7}},
		chunks: map[uuid.UUID]string{factNew: "Alice: I moved to Shanghai last month!"}}
	return rec, st
}

func newTestReflector(t *testing.T, script func(int, openai.ChatCompletionRequest) step, cfg Config) (*Reflector, *fakeLLM, *memRecaller) {
	t.Helper()
	f := &fakeLLM{t: t, script: script}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	oc := openai.DefaultConfig("test-key")
	oc.BaseURL = srv.URL + "/v1"
	rec, st := fixtureDeps()
	if cfg.Model == "" {
		cfg.Model = "fake-model"
	}
	r, err := New(Deps{Recaller: rec, Store: st, LLM: openai.NewClientWithConfig(oc)}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, f, rec
}

func args(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// toolChoiceName returns the forced function name of a request, or "" for
// auto/none.
func toolChoiceName(raw map[string]any) string {
	tc, ok := raw["tool_choice"].(map[string]any)
	if !ok {
		return ""
	}
	fn, _ := tc["function"].(map[string]any)
	name, _ := fn["name"].(string)
	return name
}

func toolNames(tr Trace) []string {
	var out []string
	for _, c := range tr.ToolCalls {
		out = append(out, c.Tool)
	}
	return out
}

func TestSteeredToolOrder(t *testing.T) {
	t.Parallel()
	q := map[string]any{"query": "where does Alice live"}
	invented := "00000000-0000-0000-0000-00000000dead"
	r, f, _ := newTestReflector(t, func(i int, req openai.ChatCompletionRequest) step {
		switch i {
		case 0:
			return step{calls: [][2]string{{ToolMentalModels, args(q)}}}
		case 1:
			return step{calls: [][2]string{{ToolObservations, args(q)}}}
		case 2:
			return step{calls: [][2]string{{ToolRecall, args(q)}}}
		case 3:
			return step{calls: [][2]string{{ToolExpand, args(map[string]any{"memory_ids": []string{factNew.String()}, "depth": "chunk"})}}}
		}
		return step{calls: [][2]string{{ToolDone, args(map[string]any{
			"answer":          "Alice lives in Shanghai now [" + obsID.String() + "].",
			"memory_ids":      []string{factNew.String(), invented},
			"observation_ids": []string{obsID.String()},
		})}}}
	}, Config{})
	resp, err := r.Reflect(context.Background(), Request{BankID: "alice", Query: "Where does Alice live now?"})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	var choices []string
	for _, raw := range f.raw {
		choices = append(choices, toolChoiceName(raw))
	}
	f.mu.Unlock()
	if want := []string{ToolMentalModels, ToolObservations, ToolRecall, "", ""}; !slices.Equal(choices, want) {
		t.Errorf("tool_choice per request = %q, want %q", choices, want)
	}
	if want := []string{ToolMentalModels, ToolObservations, ToolRecall, ToolExpand, ToolDone}; !slices.Equal(toolNames(resp.Trace), want) {
		t.Errorf("trace tools = %q, want %q", toolNames(resp.Trace), want)
	}
	if resp.Trace.Forced || resp.Trace.StopReason != stopDone || resp.Trace.Iterations != 5 {
		t.Errorf("trace = forced %v stop %q iterations %d", resp.Trace.Forced, resp.Trace.StopReason, resp.Trace.Iterations)
	}
	// The invented id is dropped; the mental model was seen but not cited.
	if !slices.Equal(resp.BasedOn.Memories, []string{factNew.String()}) || !slices.Equal(resp.BasedOn.Observations, []string{obsID.String()}) ||
		len(resp.BasedOn.MentalModels) != 0 {
		t.Errorf("based_on = %+v", resp.BasedOn)
	}
	if len(resp.Trace.LLMCalls) != 5 || resp.Usage.TotalTokens != 5*110 {
		t.Errorf("llm calls %d, usage %+v", len(resp.Trace.LLMCalls), resp.Usage)
	}
	// The expand result carried the chunk text back to the model.
	reqs := f.requests()
	last := reqs[len(reqs)-1].Messages
	if got := last[len(last)-1]; got.Role != openai.ChatMessageRoleTool || !strings.Contains(got.Content, "last month") {
		t.Errorf("expand result = %+v", got)
	}
	if resp.Extractive {
		t.Error("an LLM answer is marked extractive")
	}
}

func TestNeverDoneForcesSynthesis(t *testing.T) {
	t.Parallel()
	r, f, _ := newTestReflector(t, func(i int, req openai.ChatCompletionRequest) step {
		if len(req.Tools) == 0 {
			return step{content: "Shanghai, per [" + obsID.String() + "]."}
		}
		// Obeys the steering, then keeps searching forever.
		tool := ToolRecall
		if tc, ok := req.ToolChoice.(map[string]any); ok {
			tool = tc["function"].(map[string]any)["name"].(string)
		}
		return step{calls: [][2]string{{tool, args(map[string]any{"query": fmt.Sprintf("alice %d", i)})}}}
	}, Config{MaxIterations: 4})
	resp, err := r.Reflect(context.Background(), Request{BankID: "alice", Query: "Where does Alice live now?"})
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model calls, want 4 iterations + 1 synthesis", len(reqs))
	}
	final := reqs[4]
	if len(final.Tools) != 0 || final.ToolChoice != nil {
		t.Errorf("synthesis call offered tools: %d, choice %v", len(final.Tools), final.ToolChoice)
	}
	if !strings.Contains(final.Messages[len(final.Messages)-1].Content, obsID.String()) {
		t.Error("synthesis prompt lacks the gathered observation")
	}
	if !resp.Trace.Forced || resp.Trace.Iterations != 4 || resp.Trace.StopReason != stopMaxIterations {
		t.Errorf("trace forced %v iterations %d stop %q", resp.Trace.Forced, resp.Trace.Iterations, resp.Trace.StopReason)
	}
	if !strings.Contains(resp.Text, "Shanghai") || !slices.Equal(resp.BasedOn.Observations, []string{obsID.String()}) {
		t.Errorf("answer %q based on %+v", resp.Text, resp.BasedOn)
	}
}

func TestContextBudgetTruncatesToolResults(t *testing.T) {
	t.Parallel()
	f := &fakeLLM{t: t, script: func(i int, req openai.ChatCompletionRequest) step {
		if len(req.Tools) == 0 {
			return step{content: "Alice lives in Shanghai."}
		}
		return step{calls: [][2]string{{ToolRecall, args(map[string]any{"query": "alice lives", "max_tokens": 100000})}}}
	}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	oc := openai.DefaultConfig("k")
	oc.BaseURL = srv.URL + "/v1"
	rec := &memRecaller{}
	for i := range 200 {
		rec.results = append(rec.results, recall.Result{ID: uuid.New(), Type: "world", MentionedAt: time.Now(),
			Text: fmt.Sprintf("Alice lives fact %d: %s", i, strings.Repeat("lorem ipsum dolor sit amet ", 10))})
	}
	_, st := fixtureDeps()
	cfg := Config{Model: "m", ContextTokens: 8000, AnswerTokens: 500, MaxToolResultTokens: 2500, MinToolResultTokens: 200, MaxIterations: 10}
	r, err := New(Deps{Recaller: rec, Store: st, LLM: openai.NewClientWithConfig(oc)}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.Reflect(context.Background(), Request{BankID: "alice", Query: "Where does Alice live?"})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Trace.Forced || resp.Trace.StopReason != stopBudget {
		t.Errorf("forced %v stop %q, want forced by budget", resp.Trace.Forced, resp.Trace.StopReason)
	}
	reqs := f.requests()
	var sizes []int
	for _, req := range reqs {
		if n := messagesTokens(testTokens(), req.Messages); n > cfg.ContextTokens-cfg.AnswerTokens {
			t.Errorf("a request carried %d tokens of messages; budget leaves %d", n, cfg.ContextTokens-cfg.AnswerTokens)
		}
	}
	// Every result is in the trace; the model saw all but the last in the
	// requests, and each result it saw says that it was cut.
	for _, m := range reqs[len(reqs)-2].Messages {
		if m.Role == openai.ChatMessageRoleTool && !strings.Contains(m.Content, `"truncated":true`) && !strings.Contains(m.Content, `"omitted"`) {
			t.Errorf("a cut tool result does not say so: %.80s", m.Content)
		}
	}
	for _, c := range resp.Trace.ToolCalls {
		if c.Tool == ToolRecall && c.OutputSize > 0 {
			sizes = append(sizes, (c.OutputSize+3)/4) // ASCII: the estimate is bytes/4
		}
	}
	if len(sizes) < 3 {
		t.Fatalf("only %d tool results (%v) before the budget ran out", len(sizes), sizes)
	}
	for i, n := range sizes {
		if n > cfg.MaxToolResultTokens {
			t.Errorf("tool result %d is %d tokens, over the %d ceiling", i, n, cfg.MaxToolResultTokens)
		}
		if i > 0 && n > sizes[i-1] {
			t.Errorf("tool result sizes %v do not shrink with the budget", sizes)
		}
	}
	if sizes[len(sizes)-1] >= sizes[0] {
		t.Errorf("tool result sizes %v: the last is not smaller than the first", sizes)
	}
	// The recall itself was asked for no more than the ceiling.
	for _, q := range rec.reqs {
		if q.MaxTokens > cfg.MaxToolResultTokens {
			t.Errorf("recall asked for %d tokens, over the ceiling", q.MaxTokens)
		}
	}
}

func TestMalformedToolArgumentsAreFedBack(t *testing.T) {
	t.Parallel()
	r, f, _ := newTestReflector(t, func(i int, req openai.ChatCompletionRequest) step {
		switch i {
		case 0:
			return step{calls: [][2]string{{ToolMentalModels, `{"query": "alice`}}} // cut off
		case 1:
			return step{calls: [][2]string{{ToolDone, `{"answer": ""}`}}} // invalid: empty answer
		case 2:
			return step{calls: [][2]string{{"search_everything", `{}`}}} // no such tool
		}
		return step{calls: [][2]string{{ToolDone, args(map[string]any{"answer": "I don't know."})}}}
	}, Config{})
	resp, err := r.Reflect(context.Background(), Request{BankID: "alice", Query: "Where does Alice live now?"})
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model calls, want 4", len(reqs))
	}
	for i, want := range []string{"not valid JSON", "non-empty answer", "unknown tool"} {
		msgs := reqs[i+1].Messages
		got := msgs[len(msgs)-1]
		if got.Role != openai.ChatMessageRoleTool || !strings.Contains(got.Content, want) || got.ToolCallID == "" {
			t.Errorf("after bad call %d the model saw %+v, want a tool error containing %q", i, got, want)
		}
	}
	if resp.Text != "I don't know." || resp.Trace.Forced {
		t.Errorf("answer %q forced %v", resp.Text, resp.Trace.Forced)
	}
	if resp.Trace.ToolCalls[0].Input != `{"query": "alice` {
		t.Errorf("trace keeps malformed input as %v", resp.Trace.ToolCalls[0].Input)
	}
}

func TestContextOverflowSummarisesAndRetries(t *testing.T) {
	t.Parallel()
	overflow := `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}`
	r, f, _ := newTestReflector(t, func(i int, req openai.ChatCompletionRequest) step {
		switch i {
		case 0:
			return step{calls: [][2]string{{ToolObservations, args(map[string]any{"query": "alice"})}}}
		case 1:
			return step{status: http.StatusBadRequest, errBody: overflow}
		}
		return step{calls: [][2]string{{ToolDone, args(map[string]any{"answer": "Shanghai", "observation_ids": []string{obsID.String()}})}}}
	}, Config{})
	resp, err := r.Reflect(context.Background(), Request{BankID: "alice", Query: "Where does Alice live now?"})
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3", len(reqs))
	}
	retry := reqs[2].Messages
	if len(retry) != 3 || !strings.Contains(retry[2].Content, "summarised") || !strings.Contains(retry[2].Content, obsID.String()) {
		t.Errorf("retry messages = %+v", retry)
	}
	if resp.Text != "Shanghai" || !slices.Equal(resp.BasedOn.Observations, []string{obsID.String()}) {
		t.Errorf("answer %q based on %+v", resp.Text, resp.BasedOn)
	}

	// A second overflow ends the loop with an answer, not an error.
	r2, _, _ := newTestReflector(t, func(i int, req openai.ChatCompletionRequest) step {
		if i == 0 {
			return step{calls: [][2]string{{ToolObservations, args(map[string]any{"query": "alice"})}}}
		}
		return step{status: http.StatusBadRequest, errBody: overflow}
	}, Config{})
	resp, err = r2.Reflect(context.Background(), Request{BankID: "alice", Query: "Where does Alice live now?"})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Trace.Forced || resp.Trace.StopReason != stopOverflow || !resp.Extractive || !strings.Contains(resp.Text, "Shanghai") {
		t.Errorf("after two overflows: %+v", resp)
	}
}

func TestDispositionInSystemPrompt(t *testing.T) {
	t.Parallel()
	r, f, _ := newTestReflector(t, func(int, openai.ChatCompletionRequest) step {
		return step{calls: [][2]string{{ToolDone, args(map[string]any{"answer": "ok"})}}}
	}, Config{})
	traits := []struct {
		name  string
		texts [5]string
		set   func(d *Disposition, v int)
	}{
		{"skepticism", skepticismText, func(d *Disposition, v int) { d.Skepticism = v }},
		{"literalism", literalismText, func(d *Disposition, v int) { d.Literalism = v }},
		{"empathy", empathyText, func(d *Disposition, v int) { d.Empathy = v }},
	}
	for _, tr := range traits {
		for level := 1; level <= 5; level++ {
			d := Disposition{Skepticism: 3, Literalism: 3, Empathy: 3}
			tr.set(&d, level)
			n := len(f.requests())
			if _, err := r.Reflect(context.Background(), Request{BankID: "alice", Query: "q", Disposition: &d}); err != nil {
				t.Fatal(err)
			}
			sys := f.requests()[n].Messages[0]
			if sys.Role != openai.ChatMessageRoleSystem {
				t.Fatalf("first message is %s", sys.Role)
			}
			for l, text := range tr.texts {
				if has := strings.Contains(sys.Content, text); has != (l+1 == level) {
					t.Errorf("%s=%d: prompt contains level %d text: %v", tr.name, level, l+1, has)
				}
			}
		}
	}
	// Without an override, the bank's own traits apply.
	n := len(f.requests())
	if _, err := r.Reflect(context.Background(), Request{BankID: "alice", Query: "q"}); err != nil {
		t.Fatal(err)
	}
	if sys := f.requests()[n].Messages[0].Content; !strings.Contains(sys, skepticismText[2]) || !strings.Contains(sys, empathyText[2]) {
		t.Error("bank disposition (3,3,3) not in the prompt")
	}
}

func TestDispositionLevelTexts(t *testing.T) {
	t.Parallel()
	// Each level says something different and concrete; the extremes name
	// the behaviour the issue asks for.
	for name, texts := range map[string][5]string{"skepticism": skepticismText, "literalism": literalismText, "empathy": empathyText} {
		seen := map[string]bool{}
		for i, s := range texts {
			if !strings.HasPrefix(strings.ToLower(s), fmt.Sprintf("%s %d:", name, i+1)) {
				t.Errorf("%s level %d text %q does not name its level", name, i+1, s)
			}
			if seen[s] {
				t.Errorf("%s level %d repeats another level", name, i+1)
			}
			seen[s] = true
		}
	}
	for _, c := range []struct{ text, want string }{
		{skepticismText[4], "Flag every claim that no memory supports"},
		{skepticismText[4], "weakening or stale observations"},
		{literalismText[4], "exact words"},
		{empathyText[4], "Acknowledge the feelings"},
		{skepticismText[0], "Trust the memories"},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("%q lacks %q", c.text, c.want)
		}
	}
	if err := (Disposition{Skepticism: 6, Literalism: 3, Empathy: 3}).validate(); err == nil || !strings.Contains(err.Error(), "disposition.skepticism") {
		t.Errorf("out-of-range skepticism: %v", err)
	}
}

func TestResponseSchemaValidatedWithOneRepair(t *testing.T) {
	t.Parallel()
	schema := map[string]any{"type": "object", "required": []any{"city", "confidence"}, "properties": map[string]any{
		"city":       map[string]any{"type": "string"},
		"confidence": map[string]any{"type": "string", "enum": []any{"low", "high"}},
	}}
	for _, c := range []struct {
		name     string
		answers  []string // the structured-output calls' replies
		wantOut  bool
		wantCall int
	}{
		{"valid at once", []string{`{"city":"Shanghai","confidence":"high"}`}, true, 1},
		{"repaired", []string{`{"city":"Shanghai"}`, "```json\n{\"city\":\"Shanghai\",\"confidence\":\"high\"}\n```"}, true, 2},
		{"still invalid", []string{`{"city":"Shanghai","confidence":"sure"}`, `not json`}, false, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var structuredCalls int
			r, f, _ := newTestReflector(t, func(i int, req openai.ChatCompletionRequest) step {
				if req.ResponseFormat != nil {
					structuredCalls++
					return step{content: c.answers[min(structuredCalls-1, len(c.answers)-1)]}
				}
				return step{calls: [][2]string{{ToolDone, args(map[string]any{"answer": "Shanghai"})}}}
			}, Config{})
			resp, err := r.Reflect(context.Background(), Request{BankID: "alice", Query: "Where?", ResponseSchema: schema})
			if err != nil {
				t.Fatal(err)
			}
			if structuredCalls != c.wantCall {
				t.Errorf("%d structured-output calls, want %d", structuredCalls, c.wantCall)
			}
			if c.wantOut {
				if m, ok := resp.StructuredOutput.(map[string]any); !ok || m["city"] != "Shanghai" || resp.StructuredOutputError != "" {
					t.Errorf("structured_output %v, error %q", resp.StructuredOutput, resp.StructuredOutputError)
				}
			} else if resp.StructuredOutput != nil || !strings.Contains(resp.StructuredOutputError, "not valid JSON") {
				t.Errorf("structured_output %v, error %q", resp.StructuredOutput, resp.StructuredOutputError)
			}
			if c.name == "repaired" {
				reqs := f.requests()
				repair := reqs[len(reqs)-1].Messages
				if !strings.Contains(repair[len(repair)-1].Content, `missing required property "confidence"`) {
					t.Errorf("repair prompt = %q", repair[len(repair)-1].Content)
				}
			}
		})
	}
	// A schema the validator cannot read is a request error.
	r, _, _ := newTestReflector(t, func(int, openai.ChatCompletionRequest) step { return step{content: "x"} }, Config{})
	_, err := r.Reflect(context.Background(), Request{BankID: "alice", Query: "q", ResponseSchema: map[string]any{"type": "strin"}})
	if re, ok := err.(*RequestError); !ok || re.Field != "response_schema.type" {
		t.Errorf("bad schema: %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	rec, st := fixtureDeps()
	for _, c := range []struct {
		cfg   Config
		llm   bool
		field string
	}{
		{Config{}, true, "model"},
		{Config{MaxIterations: -1}, false, "max_iterations"},
		{Config{ContextTokens: 1000, AnswerTokens: 900}, false, "context_tokens"},
		{Config{MinToolResultTokens: 500, MaxToolResultTokens: 100}, false, "max_tool_result_tokens"},
		{Config{Timeout: time.Second, SynthesisTimeout: 2 * time.Second}, false, "synthesis_timeout"},
	} {
		d := Deps{Recaller: rec, Store: st}
		if c.llm {
			d.LLM = openai.NewClient("k")
		}
		if _, err := New(d, c.cfg); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: error %v does not name %s", c.cfg, err, c.field)
		}
	}
	// A nil client in the interface means offline, not a panic later.
	var none *openai.Client
	r, err := New(Deps{Recaller: rec, Store: st, LLM: none}, Config{})
	if err != nil || r.deps.LLM != nil {
		t.Errorf("typed-nil LLM: %v, llm %v", err, r.deps.LLM)
	}
	resp, err := r.Reflect(context.Background(), Request{BankID: "alice", Query: "Where does Alice live now?"})
	if err != nil || !resp.Extractive || !strings.Contains(resp.Text, "Shanghai") {
		t.Errorf("offline over the in-memory fixture: %+v %v", resp, err)
	}
	if _, err := r.Reflect(context.Background(), Request{BankID: "alice", Query: " "}); !isRequestError(err, "query") {
		t.Errorf("empty query: %v", err)
	}
	if _, err := r.Reflect(context.Background(), Request{BankID: "alice", Query: "q", Budget: "max"}); !isRequestError(err, "budget") {
		t.Errorf("bad budget: %v", err)
	}
	if _, err := r.Reflect(context.Background(), Request{BankID: "alice", Query: "q", Disposition: &Disposition{Empathy: 9}}); !isRequestError(err, "disposition.empathy") {
		t.Errorf("bad disposition: %v", err)
	}
}

func isRequestError(err error, field string) bool {
	re, ok := err.(*RequestError)
	return ok && re.Field == field
}

func TestWallClockTimeoutStillAnswers(t *testing.T) {
	t.Parallel()
	f := &fakeLLM{t: t, script: func(i int, req openai.ChatCompletionRequest) step {
		if len(req.Tools) == 0 {
			return step{content: "Shanghai [" + obsID.String() + "]"}
		}
		return step{calls: [][2]string{{ToolObservations, args(map[string]any{"query": "alice"})}}}
	}}
	var mu sync.Mutex
	toolTurns := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		mu.Lock()
		hang := strings.Contains(string(body), `"tools"`) && toolTurns > 0
		if strings.Contains(string(body), `"tools"`) {
			toolTurns++
		}
		mu.Unlock()
		if hang { // the model hangs on its second turn, until the client gives up
			<-r.Context().Done()
			return
		}
		f.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	oc := openai.DefaultConfig("k")
	oc.BaseURL = srv.URL + "/v1"
	rec, st := fixtureDeps()
	r, err := New(Deps{Recaller: rec, Store: st, LLM: openai.NewClientWithConfig(oc)},
		Config{Model: "m", Timeout: 600 * time.Millisecond, SynthesisTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := r.Reflect(context.Background(), Request{BankID: "alice", Query: "Where does Alice live now?"})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("reflect took %s with a 600ms timeout", d)
	}
	if !resp.Trace.Forced || resp.Trace.StopReason != stopTimeout || !slices.Equal(resp.BasedOn.Observations, []string{obsID.String()}) {
		t.Errorf("forced %v stop %q based on %+v text %q", resp.Trace.Forced, resp.Trace.StopReason, resp.BasedOn, resp.Text)
	}
}

// Directives (Hindsight's bank rules) are in the agent's instructions and
// the caller's context is with the question.
func TestDirectivesAndContextInPrompt(t *testing.T) {
	t.Parallel()
	r, f, _ := newTestReflector(t, func(int, openai.ChatCompletionRequest) step {
		return step{calls: [][2]string{{ToolDone, args(map[string]any{"answer": "ok"})}}}
	}, Config{})
	if _, err := r.Reflect(context.Background(), Request{BankID: "alice", Query: "Where does Alice live?", Context: "a travel quiz",
		Directives: []string{"Answer in French.", "Never mention salaries."}}); err != nil {
		t.Fatal(err)
	}
	msgs := f.requests()[0].Messages
	if !strings.Contains(msgs[0].Content, "- Answer in French.\n- Never mention salaries.") {
		t.Fatalf("system prompt lacks the directives:\n%s", msgs[0].Content)
	}
	if !strings.Contains(msgs[1].Content, "Where does Alice live?") || !strings.Contains(msgs[1].Content, "Context: a travel quiz") {
		t.Fatalf("user message: %q", msgs[1].Content)
	}
	// Without directives the instructions say nothing about them.
	if _, err := r.Reflect(context.Background(), Request{BankID: "alice", Query: "q"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(f.requests()[1].Messages[0].Content, "Directives") {
		t.Fatal("directives section without directives")
	}
}
