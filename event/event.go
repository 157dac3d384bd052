package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
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
	Messages       []Message         `json:"messages,omitempty"`
	Content        string            `json:"content,omitempty"`
	Timestamp      string            `json:"timestamp,omitempty"`
	Context        string            `json:"context,omitempty"`
	Tags           []string          `json:"tags,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	// UpdateMode "replace" makes the event replace its document: what
	// earlier events of the document stored is deleted in the transaction
	// that stores this one, so a reader sees the old document or the new,
	// never neither. "" or "append" adds to the document.
	UpdateMode string `json:"update_mode,omitempty"`
}

// Message is one chat message of an event.
type Message struct {
	Role      string `json:"role"`
	Name      string `json:"name,omitempty"`
	Content   string `json:"content"`
	Timestamp string `json:"timestamp,omitempty"`
}

// DefaultMaxBytes is the default of kafka.max_event_bytes: the largest
// record value accepted as one event.
const DefaultMaxBytes = 1 << 20

// Limits every event is held to, on Kafka and over HTTP alike: the pipeline
// dead-letters an event past them, and retain refuses it with a 400.
const (
	// MaxIDBytes bounds event_id and document_id (conversation_id).
	MaxIDBytes = 512
	// MaxTags bounds the tags of one event; MaxTagBytes one tag.
	MaxTags     = 100
	MaxTagBytes = 200
	// MaxMetadataKeys bounds the metadata of one event; MaxMetadataKeyBytes
	// one key.
	MaxMetadataKeys     = 100
	MaxMetadataKeyBytes = 200
)

// BankIDPattern is the rule bank ids must follow. It keeps ids safe in
// URLs, record keys and log lines.
var BankIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

var validRoles = map[string]bool{"user": true, "assistant": true, "system": true, "tool": true}

// stage is the memstream.error.stage of every error this package returns.
const stage = "decode"

// Decoded is a validated event with its defaults filled in.
type Decoded struct {
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

// Validate checks an event against the rules of SPEC §3 that do not depend
// on its encoding: bank id, exactly one of messages and content, roles and
// timestamps. The error, if any, is an *Error naming the class.
func (ev *Event) Validate() error {
	if ev.BankID == "" {
		return fieldErrorf("bank_id", ClassSchema, "bank_id is required")
	}
	if !BankIDPattern.MatchString(ev.BankID) {
		return fieldErrorf("bank_id", ClassInvalidBankID, "bank_id %q must match %s", truncate(ev.BankID, 64), BankIDPattern)
	}
	if (len(ev.Messages) > 0) == (ev.Content != "") {
		return fieldErrorf("content", ClassSchema, "the event must have exactly one of messages and content")
	}
	if err := validTimestamp("timestamp", ev.Timestamp); err != nil {
		return err
	}
	if ev.UpdateMode != "" && ev.UpdateMode != "append" && ev.UpdateMode != "replace" {
		return fieldErrorf("update_mode", ClassSchema, "update_mode must be replace or append, got %q", truncate(ev.UpdateMode, 32))
	}
	for _, id := range [][2]string{{"event_id", ev.EventID}, {"document_id", ev.DocumentID}, {"conversation_id", ev.ConversationID}} {
		if len(id[1]) > MaxIDBytes {
			return fieldErrorf(id[0], ClassSchema, "%s is %d bytes, at most %d", id[0], len(id[1]), MaxIDBytes)
		}
	}
	if len(ev.Tags) > MaxTags {
		return fieldErrorf("tags", ClassSchema, "tags has %d entries, at most %d", len(ev.Tags), MaxTags)
	}
	for i, t := range ev.Tags {
		if t == "" || len(t) > MaxTagBytes {
			return fieldErrorf(fmt.Sprintf("tags[%d]", i), ClassSchema, "tags[%d] must be 1 to %d bytes", i, MaxTagBytes)
		}
	}
	if len(ev.Metadata) > MaxMetadataKeys {
		return fieldErrorf("metadata", ClassSchema, "metadata has %d keys, at most %d", len(ev.Metadata), MaxMetadataKeys)
	}
	for k := range ev.Metadata {
		if k == "" || len(k) > MaxMetadataKeyBytes {
			return fieldErrorf("metadata", ClassSchema, "metadata keys must be 1 to %d bytes", MaxMetadataKeyBytes)
		}
	}
	for i, m := range ev.Messages {
		if !validRoles[m.Role] {
			return fieldErrorf(fmt.Sprintf("messages[%d].role", i), ClassSchema, "messages[%d].role %q must be user, assistant, system or tool", i, truncate(m.Role, 20))
		}
		if err := validTimestamp(fmt.Sprintf("messages[%d].timestamp", i), m.Timestamp); err != nil {
			return err
		}
	}
	return ev.checkText()
}

func validTimestamp(field, ts string) error {
	if ts == "" {
		return nil
	}
	if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
		return fieldErrorf(field, ClassSchema, "%s %q is not RFC 3339", field, truncate(ts, 40))
	}
	return nil
}

// checkText refuses NUL characters and invalid UTF-8 in any text of the
// event. PostgreSQL text cannot hold a NUL, so such an event would fail
// only at persist, after its batch had been extracted.
func (ev *Event) checkText() error {
	bad := func(field, s string) error {
		if strings.IndexByte(s, 0) >= 0 {
			return fieldErrorf(field, ClassSchema, "%s contains a NUL character", field)
		}
		if !utf8.ValidString(s) {
			return fieldErrorf(field, ClassInvalidUTF8, "%s is not valid UTF-8", field)
		}
		return nil
	}
	for _, f := range [][2]string{{"bank_id", ev.BankID}, {"event_id", ev.EventID}, {"document_id", ev.DocumentID},
		{"conversation_id", ev.ConversationID}, {"content", ev.Content}, {"context", ev.Context}} {
		if err := bad(f[0], f[1]); err != nil {
			return err
		}
	}
	for i, t := range ev.Tags {
		if err := bad(fmt.Sprintf("tags[%d]", i), t); err != nil {
			return err
		}
	}
	for k, v := range ev.Metadata {
		if err := bad("metadata", k); err != nil {
			return err
		}
		if err := bad("metadata."+k, v); err != nil {
			return err
		}
	}
	for i, m := range ev.Messages {
		for _, f := range [][2]string{{"name", m.Name}, {"content", m.Content}} {
			if err := bad(fmt.Sprintf("messages[%d].%s", i, f[0]), f[1]); err != nil {
				return err
			}
		}
	}
	return nil
}

// Decode validates a record's value against SPEC §3 and fills the defaults
// that come from the record: the timestamp, the idempotency key
// (topic/partition/offset) and the document id. The error, if any, is an
// *Error naming the class for the dead-letter headers.
func Decode(r *kgo.Record, maxBytes int) (*Decoded, error) {
	if len(r.Value) > maxBytes {
		return nil, Errorf(ClassOversized, stage, "event is %d bytes, limit is %d (kafka.max_event_bytes)", len(r.Value), maxBytes)
	}
	if !utf8.Valid(r.Value) {
		return nil, Errorf(ClassInvalidUTF8, stage, "value is not valid UTF-8")
	}
	var ev Event
	dec := json.NewDecoder(bytes.NewReader(r.Value))
	if err := dec.Decode(&ev); err != nil {
		return nil, Errorf(ClassInvalidJSON, stage, "%v", err)
	}
	if dec.More() {
		return nil, Errorf(ClassInvalidJSON, stage, "trailing data after the JSON object")
	}
	if err := ev.Validate(); err != nil {
		return nil, err
	}
	d := &Decoded{Event: ev}
	d.At = r.Timestamp.UTC()
	if ev.Timestamp != "" {
		t, _ := time.Parse(time.RFC3339Nano, ev.Timestamp) // checked by Validate
		d.At = t.UTC()
	}
	if d.At.IsZero() {
		d.At = time.Now().UTC()
	}
	d.Key = ev.EventID
	if d.Key == "" {
		d.Key = headerKey(r)
	}
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
	if ev.Content != "" {
		d.Messages = []DecodedMessage{{Index: 0, Role: "user", Content: ev.Content, At: d.At}}
		return d, nil
	}
	for i, m := range ev.Messages {
		at := d.At
		if m.Timestamp != "" {
			t, _ := time.Parse(time.RFC3339Nano, m.Timestamp) // checked by Validate
			at = t.UTC()
		}
		d.Messages = append(d.Messages, DecodedMessage{Index: i, Role: m.Role, Name: m.Name, Content: m.Content, At: at})
	}
	return d, nil
}

// truncate cuts s to at most n bytes on a rune boundary, so an error message
// quoting user input stays short and valid UTF-8.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Position is where a produced event landed on Kafka: the key of its dead
// letter (memstream.source.topic, .partition, .offset) if it is refused.
type Position struct {
	Topic     string
	Partition int32
	Offset    int64
}

// HeaderIdempotencyKey carries the idempotency key of an event without
// event_id when the record is not where the event was first produced: a
// DLQ replay sets it to the original record's topic/partition/offset, so
// that replaying one dead letter twice (a crash between the replay's
// produce and its commit) stores it once.
const HeaderIdempotencyKey = "memstream.idempotency_key"

// maxHeaderKeyBytes bounds a key taken from a header, as long as a key
// derived from a topic name (249 bytes), partition and offset can be.
const maxHeaderKeyBytes = 300

func headerKey(r *kgo.Record) string {
	for _, h := range r.Headers {
		if h.Key == HeaderIdempotencyKey && len(h.Value) > 0 && len(h.Value) <= maxHeaderKeyBytes && utf8.Valid(h.Value) {
			return string(h.Value)
		}
	}
	return ""
}
