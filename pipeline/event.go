package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Event is a conversation event as published on Kafka (SPEC §3).
type Event struct {
	BankID         string            `json:"bank_id"`
	EventID        string            `json:"event_id,omitempty"`
	DocumentID     string            `json:"document_id,omitempty"`
	ConversationID string            `json:"conversation_id,omitempty"`
	Messages       []EventMessage    `json:"messages,omitempty"`
	Content        string            `json:"content,omitempty"`
	Timestamp      string            `json:"timestamp,omitempty"`
	Context        string            `json:"context,omitempty"`
	Tags           []string          `json:"tags,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
}

// EventMessage is one chat message of an event.
type EventMessage struct {
	Role      string `json:"role"`
	Name      string `json:"name,omitempty"`
	Content   string `json:"content"`
	Timestamp string `json:"timestamp,omitempty"`
}

// Error classes: the memstream.error.class header of dead letters.
const (
	ClassInvalidJSON     = "invalid_json"
	ClassInvalidUTF8     = "invalid_utf8"
	ClassOversized       = "oversized"
	ClassSchema          = "schema_violation"
	ClassInvalidBankID   = "invalid_bank_id"
	ClassBlockedByPolicy = "blocked_by_policy"
	ClassExtractFailed   = "extract_failed"
	ClassPersistFailed   = "persist_failed"
)

// RecordError is a per-record failure that sends the record to the
// dead-letter topic instead of failing its batch.
type RecordError struct {
	Class string
	Stage string
	Msg   string
}

func (e *RecordError) Error() string { return fmt.Sprintf("%s at %s: %s", e.Class, e.Stage, e.Msg) }

func recErr(class, stage, format string, args ...any) *RecordError {
	return &RecordError{Class: class, Stage: stage, Msg: fmt.Sprintf(format, args...)}
}

// BankIDPattern is the rule bank ids must follow.
var BankIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

var validRoles = map[string]bool{"user": true, "assistant": true, "system": true, "tool": true}

// DecodedEvent is a validated event with its defaults filled in.
type DecodedEvent struct {
	Event
	Key        string    // idempotency key
	DocumentID string    // never empty
	At         time.Time // event timestamp
	Messages   []DecodedMessage
}

// DecodedMessage is a message with its resolved timestamp.
type DecodedMessage struct {
	Index   int
	Role    string
	Name    string
	Content string
	At      time.Time
}

// Decode validates a record's value against SPEC §3. The returned error,
// if any, is a *RecordError naming the class for the dead-letter headers.
func Decode(r *kgo.Record, maxBytes int) (*DecodedEvent, error) {
	const stage = "decode"
	if len(r.Value) > maxBytes {
		return nil, recErr(ClassOversized, stage, "event is %d bytes, limit is %d (kafka.max_event_bytes)", len(r.Value), maxBytes)
	}
	if !utf8.Valid(r.Value) {
		return nil, recErr(ClassInvalidUTF8, stage, "value is not valid UTF-8")
	}
	var ev Event
	dec := json.NewDecoder(bytes.NewReader(r.Value))
	if err := dec.Decode(&ev); err != nil {
		return nil, recErr(ClassInvalidJSON, stage, "%v", err)
	}
	if dec.More() {
		return nil, recErr(ClassInvalidJSON, stage, "trailing data after the JSON object")
	}
	if ev.BankID == "" {
		return nil, recErr(ClassSchema, stage, "bank_id is required")
	}
	if !BankIDPattern.MatchString(ev.BankID) {
		return nil, recErr(ClassInvalidBankID, stage, "bank_id %q must match %s", truncate(ev.BankID, 64), BankIDPattern)
	}
	hasMsgs, hasContent := len(ev.Messages) > 0, ev.Content != ""
	if hasMsgs == hasContent {
		return nil, recErr(ClassSchema, stage, "the event must have exactly one of messages and content")
	}
	d := &DecodedEvent{Event: ev}
	d.At = r.Timestamp.UTC()
	if ev.Timestamp != "" {
		t, err := time.Parse(time.RFC3339Nano, ev.Timestamp)
		if err != nil {
			return nil, recErr(ClassSchema, stage, "timestamp %q is not RFC 3339", truncate(ev.Timestamp, 40))
		}
		d.At = t.UTC()
	}
	if d.At.IsZero() {
		d.At = time.Now().UTC()
	}
	d.Key = ev.EventID
	if d.Key == "" {
		d.Key = r.Topic + "/" + strconv.Itoa(int(r.Partition)) + "/" + strconv.FormatInt(r.Offset, 10)
	}
	d.DocumentID = ev.DocumentID
	if d.DocumentID == "" {
		d.DocumentID = ev.ConversationID
	}
	if d.DocumentID == "" {
		d.DocumentID = d.Key
	}
	if hasContent {
		d.Messages = []DecodedMessage{{Index: 0, Role: "user", Content: ev.Content, At: d.At}}
		return d, nil
	}
	for i, m := range ev.Messages {
		if !validRoles[m.Role] {
			return nil, recErr(ClassSchema, stage, "messages[%d].role %q must be user, assistant, system or tool", i, truncate(m.Role, 20))
		}
		at := d.At
		if m.Timestamp != "" {
			t, err := time.Parse(time.RFC3339Nano, m.Timestamp)
			if err != nil {
				return nil, recErr(ClassSchema, stage, "messages[%d].timestamp %q is not RFC 3339", i, truncate(m.Timestamp, 40))
			}
			at = t.UTC()
		}
		d.Messages = append(d.Messages, DecodedMessage{Index: i, Role: m.Role, Name: m.Name, Content: m.Content, At: at})
	}
	return d, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
