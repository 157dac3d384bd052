package event

import "fmt"

// Error classes: the memstream.error.class header of dead letters (SPEC
// §3). They are part of the contract, so operators can route or replay dead
// letters by class.
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

// Error is a per-record failure: it sends the record to the dead-letter
// topic, with Class, Stage and Msg as its error headers, instead of failing
// the batch the record came in.
type Error struct {
	Class string
	Stage string
	Msg   string
	// Field is the JSON path of the offending field inside the event
	// ("content", "tags[2]", "messages[0].role"), when there is one. The
	// HTTP retain path reports it as the 400's field.
	Field string
}

func (e *Error) Error() string { return fmt.Sprintf("%s at %s: %s", e.Class, e.Stage, e.Msg) }

// Errorf builds an *Error whose message is formatted as fmt.Sprintf does.
func Errorf(class, stage, format string, args ...any) *Error {
	return &Error{Class: class, Stage: stage, Msg: fmt.Sprintf(format, args...)}
}

// fieldErrorf is Errorf for a rule about one field of the event.
func fieldErrorf(field, class, format string, args ...any) *Error {
	e := Errorf(class, stage, format, args...)
	e.Field = field
	return e
}
