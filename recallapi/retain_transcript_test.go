package recallapi

import "testing"

// A retained transcript is published as a conversation: one message per
// speaker line, with names, roles and times.
func TestRetainTranscriptBecomesMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	r := e.call("POST", "/v1/default/banks/b1/memories",
		`{"items":[{"content":"[2025-03-01 10:02] Ana (user): What wine goes with lamb?\n[2025-03-01 10:03] Bot (assistant): A Syrah."},
		{"content":"Ana (user): one line is just text"}],"async":true}`, "")
	if r.status != 200 {
		t.Fatalf("retain: %d %s", r.status, r.raw)
	}
	evs := e.pub.published()
	if len(evs) != 2 {
		t.Fatalf("published %d events", len(evs))
	}
	ms := evs[0].Messages
	if evs[0].Content != "" || len(ms) != 2 || ms[0].Name != "Ana" || ms[0].Role != "user" || ms[1].Role != "assistant" ||
		ms[1].Content != "A Syrah." || ms[1].Timestamp != "2025-03-01T10:03:00Z" {
		t.Errorf("transcript event: %+v", evs[0])
	}
	if evs[1].Content != "Ana (user): one line is just text" || len(evs[1].Messages) != 0 {
		t.Errorf("a single speaker line was parsed as a transcript: %+v", evs[1])
	}
}
