package event

import (
	"reflect"
	"testing"
)

func TestParseTranscript(t *testing.T) {
	in := "[2025-03-01 10:02] Ana (user): I'm making lamb for six on Saturday.\n" +
		"What wine should I get?\n" +
		"[2025-03-01 10:03] Sommelier Bot (assistant): A Syrah would stand up to it.\n\n" +
		"User: thanks!"
	got, ok := ParseTranscript(in)
	want := []Message{
		{Role: "user", Name: "Ana", Content: "I'm making lamb for six on Saturday.\nWhat wine should I get?", Timestamp: "2025-03-01T10:02:00Z"},
		{Role: "assistant", Name: "Sommelier Bot", Content: "A Syrah would stand up to it.", Timestamp: "2025-03-01T10:03:00Z"},
		{Role: "user", Content: "thanks!"},
	}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseTranscript = %+v, %v\nwant %+v", got, ok, want)
	}
	for _, not := range []string{
		"I moved to Lisbon last spring.",
		"Note (draft): one line that only looks like a speaker line.",
		"Some preamble first\nAna (user): hi\nBot (assistant): hello",
		"Ana (manager): not a role\nBob (boss): neither",
		"User: one bare line",
	} {
		if m, ok := ParseTranscript(not); ok {
			t.Errorf("ParseTranscript(%q) = %+v, want not a transcript", not, m)
		}
	}
	// The speaker alone on its line, the text below it.
	if m, ok := ParseTranscript("User:\nWhat wine goes with lamb?\nAssistant:\nA Syrah.\nOr a Rioja."); !ok ||
		!reflect.DeepEqual(m, []Message{{Role: "user", Content: "What wine goes with lamb?"}, {Role: "assistant", Content: "A Syrah.\nOr a Rioja."}}) {
		t.Errorf("speaker lines without text: %+v %v", m, ok)
	}
	// One message retained on its own keeps its speaker and role.
	if m, ok := ParseTranscript("Sommelier Bot (assistant): Go for a Syrah.\nIt stands up to lamb."); !ok || len(m) != 1 ||
		m[0] != (Message{Role: "assistant", Name: "Sommelier Bot", Content: "Go for a Syrah.\nIt stands up to lamb."}) {
		t.Errorf("one named line: %+v %v", m, ok)
	}
	if m, ok := ParseTranscript("2025-03-01T10:00:00+02:00 Li (user): 你好\n2025-03-01T10:00:05+02:00 Bot (assistant): 你好！"); !ok || m[0].Timestamp != "2025-03-01T08:00:00Z" || m[1].Name != "Bot" {
		t.Errorf("zoned timestamps: %+v %v", m, ok)
	}
}

func FuzzParseTranscript(f *testing.F) {
	f.Add("Ana (user): hi\nBot (assistant): hello")
	f.Add("[2025-03-01 10:02] A (user): x\ny\nUser: z")
	f.Fuzz(func(t *testing.T, s string) {
		ms, ok := ParseTranscript(s)
		if !ok {
			return
		}
		e := Event{BankID: "b", Messages: ms}
		if err := e.Validate(); err != nil {
			t.Fatalf("a parsed transcript is not a valid event: %v (%+v)", err, ms)
		}
	})
}
