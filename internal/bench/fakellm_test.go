package bench

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

const chunksPrompt = `{"chunks":[{"chunk_index":0,"messages":[` +
	`{"message_index":0,"timestamp":"2026-01-02T10:00:00Z","speaker":"user","text":"I moved to Denver. The boxes are unpacked."},` +
	`{"message_index":1,"timestamp":"2026-01-02T10:01:00Z","speaker":"assistant","text":"Welcome to Colorado!"}]}]}`

type factsOut struct {
	Chunks []struct {
		ChunkIndex int `json:"chunk_index"`
		Facts      []struct {
			Text         string `json:"text"`
			MessageIndex int    `json:"message_index"`
			MentionedAt  string `json:"mentioned_at"`
		} `json:"facts"`
	} `json:"chunks"`
}

// The bench's LLM fake answers one fact per message, the OpenAI fake one
// per sentence: the two shapes the ingest and compare benches are
// measured with.
func TestFakeExtractorsAnswerTheChunksTheyAreGiven(t *testing.T) {
	var calls atomic.Int64
	srv := fakeLLM(0, &calls)
	defer srv.Close()
	req, _ := json.Marshal(map[string]any{"messages": []map[string]string{
		{"role": "system", "content": "extract"}, {"role": "user", "content": chunksPrompt}}})
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(string(req)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var chat struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&chat); err != nil || len(chat.Choices) != 1 {
		t.Fatalf("chat answer: %v %+v", err, chat)
	}
	var perMessage factsOut
	if err := json.Unmarshal([]byte(chat.Choices[0].Message.Content), &perMessage); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 || len(perMessage.Chunks) != 1 || len(perMessage.Chunks[0].Facts) != 2 ||
		perMessage.Chunks[0].Facts[1].MessageIndex != 1 || perMessage.Chunks[0].Facts[0].MentionedAt != "2026-01-02T10:00:00Z" {
		t.Fatalf("one fact per message: calls %d, %+v", calls.Load(), perMessage)
	}

	var perSentence factsOut
	if err := json.Unmarshal(extractChunks(chunksPrompt), &perSentence); err != nil {
		t.Fatal(err)
	}
	if got := len(perSentence.Chunks[0].Facts); got != 3 || perSentence.Chunks[0].Facts[1].Text != "The boxes are unpacked." {
		t.Fatalf("one fact per sentence: %+v", perSentence)
	}
	if got := string(extractChunks("not json")); got != `{"chunks":[]}` {
		t.Fatalf("no chunks: %s", got)
	}
}
