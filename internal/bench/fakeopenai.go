package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/memstream/memstream/embed"
)

// FakeOpenAI is an OpenAI-compatible server for side-by-side benchmarks:
// both systems under test get their embeddings (and memstream its
// extraction) from it, so they do the same work on the same vectors.
//
//   - POST /v1/embeddings answers with the hash embedder's vectors
//     (embed.Hash: deterministic, L2-normalised, multilingual n-grams), of
//     Dim dimensions whatever model is named.
//   - POST /v1/chat/completions answers memstream's extraction prompt with
//     real facts: every sentence of every message becomes one fact. Other
//     prompts get a 400 naming what it serves, so a misconfigured system
//     fails loudly instead of storing nothing.
//   - GET /v1/models lists one model.
//
// Latency, when set, delays every answer, as a remote model would.
type FakeOpenAI struct {
	emb     *embed.Hash
	dim     int
	latency time.Duration
	// Calls counts answered requests by route.
	EmbedCalls, ChatCalls atomic.Int64
}

// NewFakeOpenAI returns the fake with dim-dimensional embeddings.
func NewFakeOpenAI(dim int, latency time.Duration) (*FakeOpenAI, error) {
	e, err := embed.NewHash(dim)
	if err != nil {
		return nil, err
	}
	return &FakeOpenAI{emb: e, dim: dim, latency: latency}, nil
}

// ServeHTTP routes the three endpoints.
func (f *FakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": "bench-fake", "object": "model", "owned_by": "memstream-bench"}}})
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/embeddings"):
		f.embeddings(w, r)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/chat/completions"):
		f.chat(w, r)
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

func (f *FakeOpenAI) wait(ctx context.Context) bool {
	if f.latency <= 0 {
		return true
	}
	t := time.NewTimer(f.latency)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (f *FakeOpenAI) embeddings(w http.ResponseWriter, r *http.Request) {
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
	if !f.wait(r.Context()) {
		return
	}
	f.EmbedCalls.Add(1)
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

func (f *FakeOpenAI) chat(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string                           `json:"model"`
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError("body: "+err.Error()))
		return
	}
	// memstream's extraction prompt: the user message is the chunks as JSON.
	var body struct {
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
	parsed := false
	for _, m := range req.Messages {
		if m.Role == "user" && json.Unmarshal([]byte(m.Content), &body) == nil && len(body.Chunks) > 0 {
			parsed = true
			break
		}
	}
	if !parsed {
		writeJSON(w, http.StatusBadRequest, apiError("this fake answers memstream's extraction prompt only (a user message with {\"chunks\": …})"))
		return
	}
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
			for _, s := range Sentences(m.Text) {
				co.Facts = append(co.Facts, fact{Text: s, FactType: "world", Entities: []any{}, CausalRelations: []any{},
					MentionedAt: m.Timestamp, Tags: []string{}, MessageIndex: m.MessageIndex})
			}
		}
		out.Chunks = append(out.Chunks, co)
	}
	content, _ := json.Marshal(out)
	if !f.wait(r.Context()) {
		return
	}
	f.ChatCalls.Add(1)
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "bench", "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": string(content)}}},
		"usage":   map[string]int{"prompt_tokens": in / 4, "completion_tokens": len(content) / 4, "total_tokens": (in + len(content)) / 4},
	})
}

// Describe names the fake for logs and --help.
func (f *FakeOpenAI) Describe() string {
	return fmt.Sprintf("fake OpenAI-compatible server: hash embeddings of %d dimensions, sentence facts, latency %s", f.dim, f.latency)
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
