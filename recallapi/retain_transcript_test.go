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
		{"content":"User: one bare line is just text"}],"async":true}`, "")
	if r.status != 200 {
		t.Fatalf("retain: %d %s", r.status, r.raw)
	}
	evs := e.pub.published()
	if len(evs) != 3 {
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
}
