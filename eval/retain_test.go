package eval

import (
	"testing"
	"time"

	"github.com/memstream/memstream/event"
)

func TestRetainItemOfSession(t *testing.T) {
	t0 := time.Date(2025, 2, 10, 18, 21, 0, 0, time.UTC)
	e := Event{BankID: "b", EventID: "eval:b-s00", DocumentID: "b-s00", Tags: []string{"x"}, Messages: []Message{
		{Role: "user", Name: "Freya", Content: "Any idea how to get my toddler to nap?", Timestamp: t0},
		{Role: "assistant", Name: "Assistant", Content: "A dark room helps.\nSo does a routine.", Timestamp: t0.Add(2 * time.Minute)},
		{Role: "user", Content: "Thanks.", Timestamp: t0.Add(3 * time.Minute)},
	}}
	it := RetainItemOf(e)
	want := "[2025-02-10T18:21:00Z] Freya (user): Any idea how to get my toddler to nap?\n[2025-02-10T18:23:00Z] Assistant (assistant): A dark room helps.\nSo does a routine.\n[2025-02-10T18:24:00Z] user: Thanks."
	if it.Content != want {
		t.Fatalf("content\n%q\nwant\n%q", it.Content, want)
	}
	if it.Timestamp != "2025-02-10T18:21:00Z" || it.EventID != "eval:b-s00" || it.DocumentID != "b-s00" || it.Context != "" || len(it.Tags) != 1 {
		t.Fatalf("item %+v", it)
	}
	// What the retain route makes of it: the same times, speakers, roles
	// and texts, in order.
	ms, ok := event.ParseTranscript(it.Content)
	if !ok || len(ms) != len(e.Messages) {
		t.Fatalf("ParseTranscript: %v %+v", ok, ms)
	}
	for i, m := range ms {
		if m.Role != e.Messages[i].Role || m.Name != e.Messages[i].Name || m.Content != e.Messages[i].Content || m.Timestamp != e.Messages[i].Timestamp.Format(time.RFC3339Nano) {
			t.Errorf("message %d = %+v, want %+v", i, m, e.Messages[i])
		}
	}
}

func TestRetainItemOfMessage(t *testing.T) {
	ts := time.Date(2025, 3, 1, 10, 2, 30, 0, time.UTC)
	e := Event{BankID: "b", DocumentID: "b-s03", Context: "chat conversation", Metadata: map[string]string{TurnOffsetKey: "5"}, Messages: []Message{
		{Role: "assistant", Name: "Assistant", Content: "Try the night train.", Timestamp: ts},
	}}
	it := RetainItemOf(e)
	if it.Content != "[2025-03-01T10:02:30Z] Assistant (assistant): Try the night train." || it.Timestamp != "2025-03-01T10:02:30Z" || it.Metadata[TurnOffsetKey] != "5" || it.DocumentID != "b-s03" || it.Context != "chat conversation" {
		t.Fatalf("item %+v", it)
	}
}

// A retained session keeps its turn indices, which evidence refers to: a
// turn without text stays a turn, and a line of a message that looks like
// a bare speaker label stays in the message.
func TestRetainItemOfKeepsTurns(t *testing.T) {
	t0 := time.Date(2025, 2, 10, 18, 21, 0, 0, time.UTC)
	e := Event{BankID: "b", EventID: "eval:b-s01", DocumentID: "b-s01", Messages: []Message{
		{Role: "user", Name: "Freya", Content: "My sister texted:\nUser: are you coming Sunday?", Timestamp: t0},
		{Role: "assistant", Name: "Assistant", Content: "", Timestamp: t0.Add(time.Minute)},
		{Role: "user", Name: "Freya", Content: "Hello?\n\nAnyone?", Timestamp: t0.Add(2 * time.Minute)},
	}}
	ms, ok := event.ParseTranscript(RetainItemOf(e).Content)
	if !ok || len(ms) != len(e.Messages) {
		t.Fatalf("ParseTranscript: %v %+v", ok, ms)
	}
	for i, m := range ms {
		if m.Role != e.Messages[i].Role || m.Name != e.Messages[i].Name || m.Content != e.Messages[i].Content {
			t.Errorf("turn %d = %+v, want %+v", i, m, e.Messages[i])
		}
	}
}
