package event

import (
	"regexp"
	"strings"
	"time"
)

// transcriptLine matches one speaker line of a chat transcript: an
// optional timestamp ("[2025-03-01 10:02]", "2025-03-01T10:02:00Z"), then
// "Name (role): text" or a bare role ("User: text", "Assistant: text").
var transcriptLine = regexp.MustCompile(`^\s*(?:\[?(\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)\]?\s+)?` +
	`(?:([^():\n]{1,64}?)\s*\(\s*(user|assistant|system|tool)\s*\)|(?i:(user|assistant|system|tool)))\s*:\s?(.*)$`)

// minTranscriptLines is the fewest speaker lines that make a text a
// transcript: one bare "User: …" line may just be a sentence. A single
// line naming its speaker with a role in parentheses ("Ana (assistant):
// …") is one message of a conversation, which is how a client that
// retains message by message writes it; taking it as a user's text would
// lose its role and keep the speaker label inside the text.
const minTranscriptLines = 2

// labelForm is how a speaker line is labelled. The transcript's first
// line sets the form its speaker lines take, so that text inside a
// message that only looks like a label ("User:" quoted in Ana's message,
// a log line with a time) does not start a turn.
type labelForm struct {
	stamped bool // opened by a timestamp
	named   bool // "Name (role):", not a bare "role:"
}

// fits reports whether a line labelled f is a speaker line of a
// transcript whose first line is labelled t. A timestamp is the stronger
// mark: when the transcript's lines carry times, any timed label is a
// turn, named or not; otherwise a label must be named, or bare, as the
// first one is, and carry no time.
func (t labelForm) fits(f labelForm) bool {
	if t.stamped {
		return f.stamped
	}
	return !f.stamped && f.named == t.named
}

// ParseTranscript reads content that is a chat transcript — lines of
// "Name (role): text" (or "User: …", "Assistant: …"), each optionally
// opened by a timestamp — into messages, so that a transcript retained
// over HTTP is ingested as a conversation (who said what, and answers
// beside what they answer) instead of one long user message.
//
// Message i is the transcript's turn i: a speaker line without text is
// kept as an empty message, since evidence and a fact's message_index
// count turns as the source does (the pipeline extracts nothing from an
// empty message, as on Kafka). A line that is not a speaker line
// continues the message before it, blank lines inside a message kept. A
// label in a form the transcript does not use (see labelForm) is a speaker
// line only after a blank line; glued to the text above it, it is text.
//
// It returns false when content is not a transcript: fewer than two
// speaker lines (but for one named line), or text before the first one.
// Timestamps without a zone are UTC.
func ParseTranscript(content string) ([]Message, bool) {
	ms, _, ok := parseTranscript(content)
	return ms, ok
}

// parseTranscript is ParseTranscript that also returns, for each message,
// the index of the line that opened it, which the fuzz test checks.
func parseTranscript(content string) ([]Message, []int, bool) {
	var (
		out    []Message
		starts []int
		form   labelForm
		named  bool
		text   strings.Builder // the last message's content; += would be quadratic in a long one
		blanks int             // blank lines since the last line with text
	)
	flush := func() {
		if len(out) > 0 {
			out[len(out)-1].Content = text.String()
			text.Reset()
		}
	}
	for i, line := range strings.Split(strings.ReplaceAll(content, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			blanks++
			continue
		}
		m := transcriptLine.FindStringSubmatch(line)
		if m != nil && len(out) > 0 && blanks == 0 && !form.fits(labelForm{stamped: m[1] != "", named: m[3] != ""}) {
			m = nil
		}
		if m == nil {
			if len(out) == 0 {
				return nil, nil, false
			}
			// A speaker line may hold only the speaker ("User:"), its text
			// starting on the next line.
			if text.Len() > 0 {
				text.WriteString(strings.Repeat("\n", blanks+1))
			}
			text.WriteString(strings.TrimSpace(line))
			blanks = 0
			continue
		}
		blanks = 0
		if len(out) == 0 {
			form = labelForm{stamped: m[1] != "", named: m[3] != ""}
		}
		named = named || m[3] != ""
		msg := Message{Name: strings.TrimSpace(m[2]), Role: strings.ToLower(m[3] + m[4])}
		if m[1] != "" {
			if t, ok := parseTranscriptTime(m[1]); ok {
				msg.Timestamp = t.Format(time.RFC3339Nano)
			}
		}
		flush()
		out = append(out, msg)
		starts = append(starts, i)
		text.WriteString(strings.TrimSpace(m[5]))
	}
	flush()
	if len(out) < minTranscriptLines && !(len(out) == 1 && named) {
		return nil, nil, false
	}
	return out, starts, true
}

func parseTranscriptTime(s string) (time.Time, bool) {
	s = strings.Replace(s, " ", "T", 1)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05Z0700", "2006-01-02T15:04Z07:00", "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}
