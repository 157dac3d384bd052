package recallapi

import "testing"

// A retained transcript is published as a conversation: one message per
// speaker line, with names, roles and times.
func TestRetainTranscriptBecomesMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	r := e.call("POST", "/v1/default/banks/b1/memories",
		`{"items":[{"content":"[2025-03-01 10:02] Ana (user): What wine goes with lamb?\n[2025-03-01 10:03] Bot (assistant): A Syrah."},
		{"content":"Bot (assistant): Try the night train."},
		{"content":"User: one bare line is just text"},
		{"content":"Ana (user): My notes say\nUser: call Bob\nBot (assistant):\nAna (user): Hello?"}],"async":true}`, "")
	if r.status != 200 {
		t.Fatalf("retain: %d %s", r.status, r.raw)
	}
	evs := e.pub.published()
	if len(evs) != 4 {
		t.Fatalf("published %d events", len(evs))
	}
	ms := evs[0].Messages
	if evs[0].Content != "" || len(ms) != 2 || ms[0].Name != "Ana" || ms[0].Role != "user" || ms[1].Role != "assistant" ||
		ms[1].Content != "A Syrah." || ms[1].Timestamp != "2025-03-01T10:03:00Z" {
		t.Errorf("transcript event: %+v", evs[0])
	}
	// A message retained on its own keeps its speaker and role.
	if m := evs[1].Messages; evs[1].Content != "" || len(m) != 1 || m[0].Role != "assistant" || m[0].Name != "Bot" || m[0].Content != "Try the night train." {
		t.Errorf("one named speaker line: %+v", evs[1])
	}
	if evs[2].Content != "User: one bare line is just text" || len(evs[2].Messages) != 0 {
		t.Errorf("a single bare speaker line was parsed as a transcript: %+v", evs[2])
	}
	// Turn i stays message i, so a fact's message_index is its turn: a
	// speaker line without text is an empty message, and a bare label
	// inside a named transcript's message is text.
	if m := evs[3].Messages; len(m) != 3 || m[0].Content != "My notes say\nUser: call Bob" || m[1].Name != "Bot" || m[1].Content != "" || m[2].Content != "Hello?" {
		t.Errorf("turns of a transcript: %+v", evs[3])
	}
}
