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

// ParseTranscript reads content that is a chat transcript — lines of
// "Name (role): text" (or "User: …", "Assistant: …"), each optionally
// opened by a timestamp — into messages, so that a transcript retained
// over HTTP is ingested as a conversation (who said what, and answers
// beside what they answer) instead of one long user message. Lines that
// are not speaker lines continue the message before them. It returns
// false when content is not a transcript: fewer than two speaker lines,
// or text before the first one. Timestamps without a zone are UTC.
func ParseTranscript(content string) ([]Message, bool) {
	var (
		out   []Message
		text  strings.Builder // the last message's content; += would be quadratic in a long one
		named bool
	)
	speakers := 0
	flush := func() {
		if len(out) > 0 {
			out[len(out)-1].Content = text.String()
			text.Reset()
		}
	}
	for _, line := range strings.Split(strings.ReplaceAll(content, "\r\n", "\n"), "\n") {
		m := transcriptLine.FindStringSubmatch(line)
		if m == nil {
			if strings.TrimSpace(line) == "" {
				continue
			}
			if len(out) == 0 {
				return nil, false
			}
			// A speaker line may hold only the speaker ("User:"), its text
			// starting on the next line.
			if text.Len() > 0 {
				text.WriteByte('\n')
			}
			text.WriteString(strings.TrimSpace(line))
			continue
		}
		speakers++
		named = named || m[3] != ""
		msg := Message{Name: strings.TrimSpace(m[2]), Role: strings.ToLower(m[3] + m[4])}
		if m[1] != "" {
			if t, ok := parseTranscriptTime(m[1]); ok {
				msg.Timestamp = t.Format(time.RFC3339Nano)
			}
		}
		flush()
		out = append(out, msg)
		text.WriteString(strings.TrimSpace(m[5]))
	}
	flush()
	if speakers < minTranscriptLines && !(speakers == 1 && named) {
		return nil, false
	}
	kept := out[:0]
	for _, m := range out {
		if m.Content != "" {
			kept = append(kept, m)
		}
	}
	return kept, len(kept) > 0
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
