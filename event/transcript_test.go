package event

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
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

// TestParseTranscriptTurns checks that message i is the transcript's
// turn i: evidence and a fact's message_index count turns as the source
// does, so a turn without text must not shift the ones after it.
func TestParseTranscriptTurns(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []Message
	}{
		{"empty turn between two", "Ana (user): Are you there?\nBot (assistant):\nAna (user): Hello?",
			[]Message{{Role: "user", Name: "Ana", Content: "Are you there?"}, {Role: "assistant", Name: "Bot"}, {Role: "user", Name: "Ana", Content: "Hello?"}}},
		{"empty first turn", "[2025-03-01 10:02] Ana (user): \n[2025-03-01 10:03] Bot (assistant): Hi.",
			[]Message{{Role: "user", Name: "Ana", Timestamp: "2025-03-01T10:02:00Z"}, {Role: "assistant", Name: "Bot", Content: "Hi.", Timestamp: "2025-03-01T10:03:00Z"}}},
		{"empty last turn", "User: hi\nAssistant:\n\n",
			[]Message{{Role: "user", Content: "hi"}, {Role: "assistant"}}},
		{"no turn has text", "User:\nAssistant:", []Message{{Role: "user"}, {Role: "assistant"}}},
		{"one named turn without text", "Bot (assistant):", []Message{{Role: "assistant", Name: "Bot"}}},
		{"blank lines inside a message are kept", "Ana (user): one\n\n\ntwo\n\nBot (assistant): three",
			[]Message{{Role: "user", Name: "Ana", Content: "one\n\n\ntwo"}, {Role: "assistant", Name: "Bot", Content: "three"}}},
	} {
		if got, ok := ParseTranscript(c.in); !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: ParseTranscript(%q) = %+v, %v\nwant %+v", c.name, c.in, got, ok, c.want)
		}
	}
}

// TestParseTranscriptLabelInText checks that text inside a message that
// looks like a speaker label, in a form the transcript's speaker lines do
// not take, stays text, while a label in the transcript's form, or any
// label after a blank line, starts a turn.
func TestParseTranscriptLabelInText(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []Message
	}{
		{"bare label alone in a named transcript",
			"Ana (user): My notes for the call say\nUser:\nask about the deposit\nBot (assistant): Noted.",
			[]Message{{Role: "user", Name: "Ana", Content: "My notes for the call say\nUser:\nask about the deposit"}, {Role: "assistant", Name: "Bot", Content: "Noted."}}},
		{"bare label with text in a timed transcript",
			"[2025-03-01 10:02] Ana (user): The support chat ended with\nUser: so it is refunded?\nAssistant: yes\n[2025-03-01 10:03] Bot (assistant): Then it is.",
			[]Message{{Role: "user", Name: "Ana", Content: "The support chat ended with\nUser: so it is refunded?\nAssistant: yes", Timestamp: "2025-03-01T10:02:00Z"},
				{Role: "assistant", Name: "Bot", Content: "Then it is.", Timestamp: "2025-03-01T10:03:00Z"}}},
		{"timed log line in an untimed transcript",
			"Ana (user): The log says\n2025-03-01 10:02 system: disk full\nBot (assistant): Free some space.",
			[]Message{{Role: "user", Name: "Ana", Content: "The log says\n2025-03-01 10:02 system: disk full"}, {Role: "assistant", Name: "Bot", Content: "Free some space."}}},
		{"named label in a bare transcript",
			"User: I'd write it as\nAna (user): hi\nAssistant: That works.",
			[]Message{{Role: "user", Content: "I'd write it as\nAna (user): hi"}, {Role: "assistant", Content: "That works."}}},
		{"a label after a blank line starts a turn",
			"Ana (user): Thanks.\n\nUser: one more thing",
			[]Message{{Role: "user", Name: "Ana", Content: "Thanks."}, {Role: "user", Content: "one more thing"}}},
		{"timed labels mix named and bare",
			"[2025-03-01 10:02] Ana (user): hi\n[2025-03-01 10:03] assistant: hello\n[2025-03-01 10:04] Ana (user): bye",
			[]Message{{Role: "user", Name: "Ana", Content: "hi", Timestamp: "2025-03-01T10:02:00Z"}, {Role: "assistant", Content: "hello", Timestamp: "2025-03-01T10:03:00Z"},
				{Role: "user", Name: "Ana", Content: "bye", Timestamp: "2025-03-01T10:04:00Z"}}},
		{"a new speaker in the transcript's form",
			"Ana (user): hi all\nBen (user): hi Ana\nBot (assistant): hello both",
			[]Message{{Role: "user", Name: "Ana", Content: "hi all"}, {Role: "user", Name: "Ben", Content: "hi Ana"}, {Role: "assistant", Name: "Bot", Content: "hello both"}}},
	} {
		if got, ok := ParseTranscript(c.in); !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: ParseTranscript(%q) = %+v, %v\nwant %+v", c.name, c.in, got, ok, c.want)
		}
	}
	// Text in a named line's message that looks like a bare label does not
	// make one named line two speaker lines.
	if m, ok := ParseTranscript("Bot (assistant): Say it like this:\nUser: hello"); !ok || len(m) != 1 || m[0].Content != "Say it like this:\nUser: hello" {
		t.Errorf("one named line with a label in its text: %+v %v", m, ok)
	}
}

// FuzzParseTranscript checks, beside that no input panics and that a
// parsed transcript is a valid event, that each message is one turn
// opened by a speaker line, in order, and that no text is lost or made
// up: a message holds exactly the text of its speaker line after the
// label and of the lines up to the next turn, whitespace aside.
func FuzzParseTranscript(f *testing.F) {
	f.Add("Ana (user): hi\nBot (assistant): hello")
	f.Add("[2025-03-01 10:02] A (user): x\ny\nUser: z")
	f.Add("Ana (user): hi\nBot (assistant):\nAna (user): there?")
	f.Add("Ana (user): notes\nUser:\nitem\n\nBot (assistant): ok")
	f.Add("User:\nAssistant:\r\n2025-03-01 10:02 tool: x")
	f.Fuzz(func(t *testing.T, s string) {
		ms, starts, ok := parseTranscript(s)
		if pm, pok := ParseTranscript(s); pok != ok || !reflect.DeepEqual(pm, ms) {
			t.Fatalf("ParseTranscript and parseTranscript differ")
		}
		if !ok {
			return
		}
		if len(ms) == 0 || len(ms) != len(starts) {
			t.Fatalf("%d messages, %d speaker lines", len(ms), len(starts))
		}
		lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
		squeeze := func(s string) string { return strings.Join(strings.Fields(s), "") }
		for _, l := range lines[:starts[0]] {
			if squeeze(l) != "" {
				t.Fatalf("text %q before the first speaker line", l)
			}
		}
		for i, m := range ms {
			if i > 0 && starts[i] <= starts[i-1] {
				t.Fatalf("speaker lines out of order: %v", starts)
			}
			sm := transcriptLine.FindStringSubmatch(lines[starts[i]])
			if sm == nil {
				t.Fatalf("message %d opened by %q, not a speaker line", i, lines[starts[i]])
			}
			end := len(lines)
			if i+1 < len(starts) {
				end = starts[i+1]
			}
			want := squeeze(sm[5])
			for _, l := range lines[starts[i]+1 : end] {
				want += squeeze(l)
			}
			if got := squeeze(m.Content); got != want {
				t.Fatalf("message %d holds %q, its lines %q", i, got, want)
			}
		}
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return // retain content is valid UTF-8 without NUL (Validate refuses it before)
		}
		e := Event{BankID: "b", Messages: ms}
		if err := e.Validate(); err != nil {
			t.Fatalf("a parsed transcript is not a valid event: %v (%+v)", err, ms)
		}
	})
}
