package bench

import (
	"context"
	"encoding/json"
	"math"
	"net/http/httptest"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// The fake answers the published OpenAI client: embeddings of the asked
// dimension, the same vector for the same text, unit length; extraction
// with one fact per sentence; free text with a sentence; a JSON answer
// asked for without a schema a clear 400, counted.
func TestFakeOpenAIServesTheClient(t *testing.T) {
	t.Parallel()
	f, err := NewFakeOpenAI(64, 0)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	cfg := openai.DefaultConfig("k")
	cfg.BaseURL = srv.URL + "/v1"
	c := openai.NewClientWithConfig(cfg)
	ctx := context.Background()

	er, err := c.CreateEmbeddings(ctx, openai.EmbeddingRequestStrings{Input: []string{"Alice keeps bees", "Bob fixes bikes", "Alice keeps bees"},
		Model: "text-embedding-3-small"})
	if err != nil {
		t.Fatal(err)
	}
	if len(er.Data) != 3 || len(er.Data[0].Embedding) != 64 {
		t.Fatalf("embeddings: %d vectors of %d", len(er.Data), len(er.Data[0].Embedding))
	}
	var norm float64
	for i, x := range er.Data[0].Embedding {
		norm += float64(x * x)
		if x != er.Data[2].Embedding[i] {
			t.Fatal("the same text gave two vectors")
		}
	}
	if math.Abs(norm-1) > 1e-3 {
		t.Errorf("norm² = %v", norm)
	}

	in, _ := json.Marshal(map[string]any{"chunks": []any{map[string]any{"chunk_index": 0, "messages": []any{
		map[string]any{"message_index": 0, "timestamp": "2026-11-29T10:00:00Z", "text": "I moved to Lisbon. My sister visits in June! 我昨天开始学游泳。"}}}}})
	cr, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: "extract"}, {Role: openai.ChatMessageRoleUser, Content: string(in)}}})
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Chunks []struct {
			Facts []struct{ Text string } `json:"facts"`
		} `json:"chunks"`
	}
	if err := json.Unmarshal([]byte(cr.Choices[0].Message.Content), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Chunks) != 1 || len(out.Chunks[0].Facts) != 3 || out.Chunks[0].Facts[1].Text != "My sister visits in June!" {
		t.Fatalf("facts = %+v", out.Chunks)
	}
	free, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleUser, Content: "Say ok. Nothing else."}}})
	if err != nil || free.Choices[0].Message.Content != "Say ok." {
		t.Errorf("free text: %+v, %v", free, err)
	}
	var log strings.Builder
	f.SetLog(&log)
	if _, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleUser, Content: "hello"}}, ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}}); err == nil {
		t.Error("a JSON answer without a schema was given")
	}
	if f.EmbedCalls.Load() != 1 || f.ChatCalls.Load() != 2 || f.Calls("").Free.Load() != 1 || f.Calls("").Unanswered.Load() != 1 {
		t.Errorf("calls: %d embeddings, %d chat, %d free, %d unanswered", f.EmbedCalls.Load(), f.ChatCalls.Load(), f.Calls("").Free.Load(), f.Calls("").Unanswered.Load())
	}
	if !strings.Contains(log.String(), "unanswered call 1 on /v1/chat/completions") {
		t.Errorf("log = %q", log.String())
	}
}

// stubEmbedder embeds every text as the vector of its length, so a test
// can tell its vectors from the hash embedder's.
type stubEmbedder struct{}

func (stubEmbedder) EmbedDocuments(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), 0, 0}
	}
	return out, nil
}

func (s stubEmbedder) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	return s.EmbedDocuments(ctx, texts)
}

func (stubEmbedder) Dim() int { return 3 }

// NewFakeOpenAIWith answers embeddings with the embedder it is given (the
// local model, for `eval run --target hindsight`), not the hash one.
func TestFakeOpenAIWithServesItsEmbedder(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(NewFakeOpenAIWith(stubEmbedder{}, 0))
	defer srv.Close()
	cfg := openai.DefaultConfig("k")
	cfg.BaseURL = srv.URL + "/v1"
	er, err := openai.NewClientWithConfig(cfg).CreateEmbeddings(context.Background(),
		openai.EmbeddingRequestStrings{Input: []string{"abcd", "ab"}, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if len(er.Data) != 2 || len(er.Data[0].Embedding) != 3 || er.Data[0].Embedding[0] != 4 || er.Data[1].Embedding[0] != 2 {
		t.Fatalf("embeddings %+v, want the stub's [4 0 0] and [2 0 0]", er.Data)
	}
}
