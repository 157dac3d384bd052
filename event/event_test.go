package event_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/event"
)

func record(v string) *kgo.Record {
	return &kgo.Record{Topic: "memstream.events", Partition: 2, Offset: 41, Timestamp: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC), Value: []byte(v)}
}

func TestDecodeClasses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, value, class, inMsg string
	}{
		{"truncated json", `{"bank_id": "alice", "content": `, event.ClassInvalidJSON, ""},
		{"trailing data", `{"bank_id":"alice","content":"x"} {}`, event.ClassInvalidJSON, "trailing"},
		{"invalid utf8", "{\"bank_id\":\"alice\",\"content\":\"\xff\xfe\"}", event.ClassInvalidUTF8, ""},
		{"oversized", `{"bank_id":"alice","content":"` + strings.Repeat("x", 200) + `"}`, event.ClassOversized, "kafka.max_event_bytes"},
		{"missing bank", `{"content":"x"}`, event.ClassSchema, "bank_id is required"},
		{"bad bank", `{"bank_id":"../etc","content":"x"}`, event.ClassInvalidBankID, "must match"},
		{"both", `{"bank_id":"a","content":"x","messages":[{"role":"user","content":"y"}]}`, event.ClassSchema, "exactly one"},
		{"neither", `{"bank_id":"a"}`, event.ClassSchema, "exactly one"},
		{"bad role", `{"bank_id":"a","messages":[{"role":"robot","content":"y"}]}`, event.ClassSchema, "messages[0].role"},
		{"bad timestamp", `{"bank_id":"a","content":"x","timestamp":"yesterday"}`, event.ClassSchema, "RFC 3339"},
		{"bad update_mode", `{"bank_id":"a","content":"x","update_mode":"merge"}`, event.ClassSchema, "update_mode"},
		{"bad message timestamp", `{"bank_id":"a","messages":[{"role":"user","content":"y"},{"role":"user","content":"z","timestamp":"noon"}]}`, event.ClassSchema, "messages[1].timestamp"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := event.Decode(record(c.value), 128)
			var e *event.Error
			if !errors.As(err, &e) {
				t.Fatalf("Decode(%q) error = %v, want an *event.Error", c.value, err)
			}
			if e.Class != c.class || e.Stage != "decode" || !strings.Contains(e.Msg, c.inMsg) {
				t.Fatalf("Decode(%q) = %+v, want class %s at decode mentioning %q", c.value, e, c.class, c.inMsg)
			}
		})
	}
}

func TestDecodeDefaults(t *testing.T) {
	t.Parallel()
	d, err := event.Decode(record(`{"bank_id":"alice","content":"I moved to Lisbon."}`), event.DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	if d.Key != "memstream.events/2/41" || d.DocumentID != d.Key {
		t.Errorf("key %q document %q, want the record's topic/partition/offset for both", d.Key, d.DocumentID)
	}
	if !d.At.Equal(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("At = %v, want the record timestamp", d.At)
	}
	if len(d.Messages) != 1 || d.Messages[0].Role != "user" || d.Messages[0].Content != "I moved to Lisbon." {
		t.Errorf("content became %+v, want one user message", d.Messages)
	}

	d, err = event.Decode(record(`{"bank_id":"alice","event_id":"e1","conversation_id":"c9","timestamp":"2026-11-29T10:00:00+01:00",
		"messages":[{"role":"user","name":"Alice","content":"hi"},{"role":"assistant","content":"hello","timestamp":"2026-11-29T10:00:05Z"}]}`), event.DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	if d.Key != "e1" || d.DocumentID != "c9" {
		t.Errorf("key %q document %q, want e1 and the conversation_id alias c9", d.Key, d.DocumentID)
	}
	if want := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC); !d.At.Equal(want) || d.At.Location() != time.UTC {
		t.Errorf("At = %v, want %v in UTC", d.At, want)
	}
	if d.Messages[0].At != d.At || !d.Messages[1].At.Equal(time.Date(2026, 11, 29, 10, 0, 5, 0, time.UTC)) || d.Messages[1].Index != 1 {
		t.Errorf("messages %+v: want the event time for the first and its own for the second", d.Messages)
	}
}

func TestValidateMatchesDecode(t *testing.T) {
	t.Parallel()
	ev := event.Event{BankID: "alice", Content: "x", Timestamp: "not a time"}
	err := ev.Validate()
	var e *event.Error
	if !errors.As(err, &e) || e.Class != event.ClassSchema {
		t.Fatalf("Validate = %v, want a schema_violation", err)
	}
	if err := (&event.Event{BankID: "alice", Content: "x"}).Validate(); err != nil {
		t.Fatalf("a valid event: %v", err)
	}
}

func TestBankIDPattern(t *testing.T) {
	t.Parallel()
	for id, ok := range map[string]bool{"alice": true, "a.b:c-d_e": true, strings.Repeat("a", 128): true, strings.Repeat("a", 129): false, "-a": false, "": false, "a/b": false, "张伟": false} {
		if got := event.BankIDPattern.MatchString(id); got != ok {
			t.Errorf("BankIDPattern(%q) = %v, want %v", id, got, ok)
		}
	}
}

// FuzzDecode checks that no input panics and that every rejection carries a
// class, since the class becomes a dead-letter header.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"bank_id":"a","content":"x"}`, `{"bank_id":"a","messages":[{"role":"user","content":"y","timestamp":"2026-01-01T00:00:00Z"}]}`, `{`, "\xff", `{"bank_id":"a","content":"x"}{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		d, err := event.Decode(&kgo.Record{Topic: "t", Value: v}, 4096)
		if err != nil {
			var e *event.Error
			if !errors.As(err, &e) || e.Class == "" {
				t.Fatalf("Decode(%q) error %v has no class", v, err)
			}
			return
		}
		if d.Key == "" || d.DocumentID == "" || len(d.Messages) == 0 || d.At.IsZero() {
			t.Fatalf("Decode(%q) = %+v: a default is missing", v, d)
		}
	})
}

// The limits and text rules hold on Kafka exactly as over HTTP: Validate
// names the field, so retain can answer a 400 with it and the pipeline
// dead-letters the same event with the same class.
func TestValidateLimitsAndText(t *testing.T) {
	t.Parallel()
	many := make([]string, event.MaxTags+1)
	for i := range many {
		many[i] = "t"
	}
	for _, c := range []struct {
		name  string
		ev    event.Event
		class string
		field string
	}{
		{"long document id", event.Event{BankID: "a", Content: "x", DocumentID: strings.Repeat("d", event.MaxIDBytes+1)}, event.ClassSchema, "document_id"},
		{"long event id", event.Event{BankID: "a", Content: "x", EventID: strings.Repeat("e", event.MaxIDBytes+1)}, event.ClassSchema, "event_id"},
		{"too many tags", event.Event{BankID: "a", Content: "x", Tags: many}, event.ClassSchema, "tags"},
		{"empty tag", event.Event{BankID: "a", Content: "x", Tags: []string{"ok", ""}}, event.ClassSchema, "tags[1]"},
		{"long tag", event.Event{BankID: "a", Content: "x", Tags: []string{strings.Repeat("t", event.MaxTagBytes+1)}}, event.ClassSchema, "tags[0]"},
		{"NUL in content", event.Event{BankID: "a", Content: "x\x00y"}, event.ClassSchema, "content"},
		{"NUL in tag", event.Event{BankID: "a", Content: "x", Tags: []string{"a\x00"}}, event.ClassSchema, "tags[0]"},
		{"NUL in metadata value", event.Event{BankID: "a", Content: "x", Metadata: map[string]string{"k": "\x00"}}, event.ClassSchema, "metadata.k"},
		{"NUL in message", event.Event{BankID: "a", Messages: []event.Message{{Role: "user", Content: "\x00"}}}, event.ClassSchema, "messages[0].content"},
		{"invalid UTF-8 in context", event.Event{BankID: "a", Content: "x", Context: "\xff"}, event.ClassInvalidUTF8, "context"},
		{"bad role", event.Event{BankID: "a", Messages: []event.Message{{Role: "bot", Content: "x"}}}, event.ClassSchema, "messages[0].role"},
	} {
		err := c.ev.Validate()
		var e *event.Error
		if !errors.As(err, &e) || e.Class != c.class || e.Field != c.field {
			t.Errorf("%s: Validate = %+v, want class %s field %s", c.name, err, c.class, c.field)
		}
	}
	// A NUL on the wire is the JSON escape \u0000: Decode dead-letters it
	// at decode, before its batch is extracted.
	_, err := event.Decode(record(`{"bank_id":"a","content":"x\u0000"}`), 4096)
	var e *event.Error
	if !errors.As(err, &e) || e.Class != event.ClassSchema || e.Field != "content" {
		t.Fatalf("Decode with a NUL = %v, want a schema_violation on content", err)
	}
}
