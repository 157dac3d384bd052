package llm_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/memstream/memstream/chunk"
	"github.com/memstream/memstream/extract"
	"github.com/memstream/memstream/llm"
)

// The model sees the conversation's earlier messages (extract.Input.History)
// as "history", without message indexes, and the prompt says to use them
// only to make the chunk's facts self-contained; a fact still must come
// from a message of the chunk.
func TestHistoryReachesTheModel(t *testing.T) {
	f := newFake(t, valid(t))
	e, _ := newExtractor(t, f, llm.Config{})
	at := time.Date(2025, 3, 1, 18, 0, 0, 0, time.UTC)
	long := strings.Repeat("x", 3000) + " which wine goes with lamb?"
	in := []extract.Input{{
		Context: "chat conversation",
		History: []chunk.Part{
			{MessageIndex: -1, Role: "user", Name: "Rui", Timestamp: at, Text: "I'm cooking lamb for six on Saturday."},
			{MessageIndex: -1, Role: "user", Name: "Rui", Timestamp: at.Add(time.Minute), Text: long},
		},
		Parts: []chunk.Part{{MessageIndex: 0, Role: "assistant", Name: "Assistant", Timestamp: at.Add(2 * time.Minute), Text: "Go for a Syrah."}},
	}, {
		Parts: []chunk.Part{{MessageIndex: 0, Role: "user", Name: "Mo", Timestamp: at, Text: "Hello there."}},
	}}
	out, err := e.Extract(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || len(out[0]) != 1 || out[0][0].Text != "LLM: Go for a Syrah." {
		t.Fatalf("facts %+v: want one fact from the chunk's own message", out)
	}
	// The fact quotes the turn it answers, as an offline fact does: in
	// its context after the event's label, and in its embedded text
	// without the label.
	syrah := out[0][0]
	if !strings.HasPrefix(syrah.ReplyTo, "In reply to Rui: ") || !strings.HasSuffix(syrah.ReplyTo, "which wine goes with lamb?") {
		t.Errorf("reply_to %q: want the quote of Rui's question", syrah.ReplyTo)
	}
	if syrah.Context != "chat conversation\n"+syrah.ReplyTo {
		t.Errorf("context %q: want the label, then the reply quote", syrah.Context)
	}
	if got := syrah.EmbeddingText(); got != syrah.ReplyTo+"\n"+syrah.Text {
		t.Errorf("embedded as %q: want the reply quote and the text, without the label", got)
	}
	if out[1][0].ReplyTo != "" || out[1][0].EmbeddingText() != out[1][0].Text {
		t.Errorf("a first message with no history: reply_to %q, embedded as %q", out[1][0].ReplyTo, out[1][0].EmbeddingText())
	}
	if len(f.requests) != 1 {
		t.Fatalf("%d calls, want 1", len(f.requests))
	}
	req := f.requests[0]
	if !strings.Contains(req.Messages[0].Content, `"history"`) {
		t.Error("the system prompt does not explain the history")
	}
	var body struct {
		Chunks []struct {
			History []map[string]any `json:"history"`
		} `json:"chunks"`
	}
	if err := json.Unmarshal([]byte(req.Messages[1].Content), &body); err != nil {
		t.Fatal(err)
	}
	h := body.Chunks[0].History
	if len(h) != 2 || h[0]["text"] != "I'm cooking lamb for six on Saturday." || h[0]["name"] != "Rui" || h[0]["timestamp"] != "2025-03-01T18:00:00Z" {
		t.Fatalf("history sent: %v", h)
	}
	for _, m := range h {
		if _, ok := m["message_index"]; ok {
			t.Errorf("history message carries a message_index: %v", m)
		}
	}
	if txt := h[1]["text"].(string); len([]rune(txt)) > 1001 || !strings.HasSuffix(txt, "which wine goes with lamb?") {
		t.Errorf("a long history message is sent as %d runes ending %q; want its last 1000", len([]rune(txt)), txt[max(0, len(txt)-30):])
	}
	if len(body.Chunks[1].History) != 0 {
		t.Errorf("a chunk without history got %v", body.Chunks[1].History)
	}
}
