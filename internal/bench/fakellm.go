package bench

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"
)

// fakeLLM is an in-process OpenAI-compatible chat-completions server that
// answers after a fixed latency with one fact per message, the shape a
// real model would return for the llm extractor's schema.
func fakeLLM(latency time.Duration, calls *atomic.Int64) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		var body struct {
			Chunks []struct {
				ChunkIndex int `json:"chunk_index"`
				Messages   []struct {
					MessageIndex int    `json:"message_index"`
					Timestamp    string `json:"timestamp"`
					Text         string `json:"text"`
				} `json:"messages"`
			} `json:"chunks"`
		}
		for _, m := range req.Messages {
			if m.Role == "user" {
				_ = json.Unmarshal([]byte(m.Content), &body)
				break
			}
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
				co.Facts = append(co.Facts, fact{Text: m.Text, FactType: "world", Entities: []any{}, CausalRelations: []any{},
					MentionedAt: m.Timestamp, Tags: []string{}, MessageIndex: m.MessageIndex})
			}
			out.Chunks = append(out.Chunks, co)
		}
		content, _ := json.Marshal(out)
		select {
		case <-time.After(latency):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "bench", "object": "chat.completion", "model": "bench-fake",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": string(content)}}},
			"usage":   map[string]int{"prompt_tokens": in / 4, "completion_tokens": len(content) / 4, "total_tokens": (in + len(content)) / 4},
		})
	}))
}
