package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/internal/wait"
)

// FakeOpenAI is an OpenAI-compatible server for side-by-side benchmarks:
// both systems under test get their embeddings (and, in the LLM mode,
// their extraction and consolidation) from it, so they do the same work
// on the same vectors.
//
//   - POST /v1/embeddings answers with the hash embedder's vectors
//     (embed.Hash: deterministic, L2-normalised, multilingual n-grams), of
//     Dim dimensions whatever model is named, or with another embedder's
//     (NewFakeOpenAIWith: memstream's local model, so a system under test
//     embeds as memstream does by default).
//   - POST /v1/chat/completions answers memstream's extraction prompt with
//     real facts (every sentence of every message becomes one fact), any
//     structured-output call from its JSON schema (fakeschema.go: one fact
//     per sentence for an extraction, one observation per fact for a
//     consolidation, Hindsight's and memstream's alike), and a free-form
//     call with the first sentence asked about. Anything else is counted,
//     logged and failed with a 400, so a misconfigured system fails loudly
//     instead of storing nothing.
//   - GET /v1/models lists one model.
//
// Whatever precedes /v1 in the path names the caller: counts are kept per
// prefix (Calls), so two systems given http://fake/a/v1 and
// http://fake/b/v1 are counted apart.
//
// Latency, when set, delays every answer, as a remote model would.
type FakeOpenAI struct {
	emb                  embed.Embedder
	dim                  int
	latency, chatLatency time.Duration
	// EmbedCalls and ChatCalls count answered requests by route, all
	// callers together.
	EmbedCalls, ChatCalls atomic.Int64

	mu    sync.Mutex
	calls map[string]*FakeCalls
	logw  io.Writer
}

// FakeCalls counts one caller's requests.
type FakeCalls struct {
	// Embed and Chat are answered requests; Free the chat calls among them
	// that asked for free text; Unanswered the calls the fake failed.
	Embed, Chat, Free, Unanswered atomic.Int64
}

// NewFakeOpenAI returns the fake with dim-dimensional embeddings; latency
// delays every answer. Unanswered calls are logged on os.Stderr.
func NewFakeOpenAI(dim int, latency time.Duration) (*FakeOpenAI, error) {
	e, err := embed.NewHash(dim)
	if err != nil {
		return nil, err
	}
	return NewFakeOpenAIWith(e, latency), nil
}

// NewFakeOpenAIWith returns the fake answering embeddings with e (its
// document vectors: the OpenAI API does not say which a text is, and a
// system under test embeds its queries through the same route).
func NewFakeOpenAIWith(e embed.Embedder, latency time.Duration) *FakeOpenAI {
	return &FakeOpenAI{emb: e, dim: e.Dim(), latency: latency, chatLatency: latency, calls: map[string]*FakeCalls{}, logw: os.Stderr}
}

// SetChatLatency sets the delay of chat answers alone (a remote model's
// latency), leaving embeddings at the fake's latency.
func (f *FakeOpenAI) SetChatLatency(d time.Duration) { f.chatLatency = d }

// SetLog sends the log of unanswered calls to w.
func (f *FakeOpenAI) SetLog(w io.Writer) {
	f.mu.Lock()
	f.logw = w
	f.mu.Unlock()
}

// Calls returns the counts of the callers whose paths start with prefix
// ("" for the plain /v1).
func (f *FakeOpenAI) Calls(prefix string) *FakeCalls {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls[prefix]
	if c == nil {
		c = &FakeCalls{}
		f.calls[prefix] = c
	}
	return c
}

// ServeHTTP routes the three endpoints.
func (f *FakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	prefix, _, _ := strings.Cut(path, "/v1/")
	c := f.Calls(prefix)
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": "bench-fake", "object": "model", "owned_by": "memstream-bench"}}})
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/embeddings"):
		f.embeddings(w, r, c)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/chat/completions"):
		f.chat(w, r, c)
	default:
		writeJSON(w, http.StatusNotFound, apiError("not found: this fake serves /v1/embeddings, /v1/chat/completions and /v1/models"))
	}
}

func apiError(msg string) map[string]any {
	return map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *FakeOpenAI) embeddings(w http.ResponseWriter, r *http.Request, c *FakeCalls) {
	var req struct {
		Input json.RawMessage `json:"input"`
		Model string          `json:"model"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError("body: "+err.Error()))
		return
	}
	var texts []string
	var one string
	if err := json.Unmarshal(req.Input, &one); err == nil {
		texts = []string{one}
	} else if err := json.Unmarshal(req.Input, &texts); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError("input: a string or a list of strings"))
		return
	}
	vecs, err := f.emb.EmbedDocuments(r.Context(), texts)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, apiError(err.Error()))
		return
	}
	if f.latency > 0 && !wait.Sleep(r.Context(), f.latency) {
		return
	}
	f.EmbedCalls.Add(1)
	c.Embed.Add(1)
	data := make([]any, len(vecs))
	tokens := 0
	for i, v := range vecs {
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": v}
		tokens += len(strings.Fields(texts[i]))
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens}})
}

// sentenceEnd splits text into sentences: after . ! ? and their CJK forms.
var sentenceEnd = regexp.MustCompile(`[.!?。！？]+\s*`)

// Sentences splits a message into its sentences, the facts the fake
// extracts.
func Sentences(text string) []string {
	var out []string
	last := 0
	for _, loc := range sentenceEnd.FindAllStringIndex(text, -1) {
		if s := strings.TrimSpace(text[last:loc[1]]); len([]rune(s)) > 3 {
			out = append(out, s)
		}
		last = loc[1]
	}
	if s := strings.TrimSpace(text[last:]); len([]rune(s)) > 3 {
		out = append(out, s)
	}
	return out
}

// chatRequest is the part of a chat completion request the fake reads.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

// text is a message's content: a string, or the text of its parts.
func messageText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct{ Type, Text string }
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func (f *FakeOpenAI) chat(w http.ResponseWriter, r *http.Request, c *FakeCalls) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		f.unanswered(w, r, c, "body: "+err.Error())
		return
	}
	user, system := "", ""
	for _, m := range req.Messages {
		switch {
		case m.Role == "user" && user == "":
			user = messageText(m.Content)
		case m.Role == "system" && system == "":
			system = messageText(m.Content)
		}
	}
	var content []byte
	switch rf := req.ResponseFormat; {
	case isChunks(user):
		content = extractChunks(user)
	case rf != nil && rf.Type == "json_schema" && rf.JSONSchema != nil && len(rf.JSONSchema.Schema) > 0:
		b, _, err := answerSchema(rf.JSONSchema.Schema, user)
		if err != nil {
			f.unanswered(w, r, c, fmt.Sprintf("schema %q: %v", rf.JSONSchema.Name, err))
			return
		}
		content = b
	case rf == nil || rf.Type == "text":
		// A free-form call (Hindsight's connection probe, a mission merge):
		// the first sentence of what was asked about.
		c.Free.Add(1)
		s := Sentences(user)
		if len(s) == 0 {
			s = []string{"OK"}
		}
		content = []byte(s[0])
	default:
		f.unanswered(w, r, c, fmt.Sprintf("response_format %q without a schema (system prompt %.80q)", rf.Type, system))
		return
	}
	if f.chatLatency > 0 && !wait.Sleep(r.Context(), f.chatLatency) {
		return
	}
	f.ChatCalls.Add(1)
	c.Chat.Add(1)
	in := len(system) + len(user)
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "bench", "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": string(content)}}},
		"usage":   map[string]int{"prompt_tokens": in / 4, "completion_tokens": len(content) / 4, "total_tokens": (in + len(content)) / 4},
	})
}

// unanswered counts and logs a call the fake cannot answer and fails it
// with a 400, so a system under test fails loudly instead of storing
// nothing, and the bench can report the count.
func (f *FakeOpenAI) unanswered(w http.ResponseWriter, r *http.Request, c *FakeCalls, why string) {
	n := c.Unanswered.Add(1)
	f.mu.Lock()
	fmt.Fprintf(f.logw, "fake openai: unanswered call %d on %s: %s\n", n, r.URL.Path, why)
	f.mu.Unlock()
	writeJSON(w, http.StatusBadRequest, apiError("the bench's fake cannot answer this call: "+why))
}

// memstreamChunks is memstream's extraction input: the chunks as JSON.
type memstreamChunks struct {
	Chunks []struct {
		ChunkIndex int `json:"chunk_index"`
		Messages   []struct {
			MessageIndex int    `json:"message_index"`
			Timestamp    string `json:"timestamp"`
			Speaker      string `json:"speaker"`
			Text         string `json:"text"`
		} `json:"messages"`
	} `json:"chunks"`
}

func isChunks(user string) bool {
	var body memstreamChunks
	return json.Unmarshal([]byte(user), &body) == nil && len(body.Chunks) > 0
}

// extractChunks answers memstream's extraction prompt: every sentence of
// every message becomes one fact.
func extractChunks(user string) []byte {
	b, _ := chunkFacts(user, Sentences)
	return b
}

// chunkFacts answers memstream's extraction prompt with one fact per piece
// that split cuts each message into, and counts the characters read.
func chunkFacts(user string, split func(string) []string) ([]byte, int) {
	var body memstreamChunks
	_ = json.Unmarshal([]byte(user), &body)
	type fact struct {
		Text            string   `json:"text"`
		FactType        string   `json:"fact_type"`
		Entities        []any    `json:"entities"`
		CausalRelations []any    `json:"causal_relations"`
		OccurredStart   *string  `json:"occurred_start"`
		OccurredEnd     *string  `json:"occurred_end"`
		MentionedAt     string   `json:"mentioned_at"`
		Context         string   `json:"context"`
		Tags            []string `json:"tags"`
		MessageIndex    int      `json:"message_index"`
	}
	type chunkOut struct {
		ChunkIndex int    `json:"chunk_index"`
		Facts      []fact `json:"facts"`
	}
	out := struct {
		Chunks []chunkOut `json:"chunks"`
	}{Chunks: []chunkOut{}}
	in := 0
	for _, c := range body.Chunks {
		co := chunkOut{ChunkIndex: c.ChunkIndex, Facts: []fact{}}
		for _, m := range c.Messages {
			in += len(m.Text)
			for _, s := range split(m.Text) {
				co.Facts = append(co.Facts, fact{Text: s, FactType: "world", Entities: []any{}, CausalRelations: []any{},
					MentionedAt: m.Timestamp, Tags: []string{}, MessageIndex: m.MessageIndex})
			}
		}
		out.Chunks = append(out.Chunks, co)
	}
	b, _ := json.Marshal(out)
	return b, in
}

// Describe names the fake for logs and --help.
func (f *FakeOpenAI) Describe() string {
	name := "hash"
	if n, ok := f.emb.(interface{ Name() string }); ok {
		name = n.Name()
	}
	return fmt.Sprintf("fake OpenAI-compatible server: %s embeddings of %d dimensions, sentence facts, latency %s (chat %s)", name, f.dim, f.latency, f.chatLatency)
}

// ServeFake serves h on addr until ctx ends, after printing its base URL
// (http://host:port/v1) on out.
func ServeFake(ctx context.Context, addr string, h http.Handler, out io.Writer) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("fake openai: listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(out, "http://%s/v1\n", l.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	case err := <-errc:
		return err
	}
}
