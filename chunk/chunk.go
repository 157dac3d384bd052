package chunk

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// DefaultMaxRunes is the chunk size limit when none is configured; 3000
// characters is a few hundred words, enough context for an extraction call
// without diluting it.
const DefaultMaxRunes = 3000

// Message is one message of a conversation, as it arrived in an event.
type Message struct {
	// Index is the message's position in its event; facts cite it.
	Index int
	// Role is user, assistant, system or tool.
	Role string
	// Name is the speaker's display name, possibly empty.
	Name string
	// Content is the message text after defense.
	Content string
	// Timestamp is when the message was sent; relative times resolve
	// against it.
	Timestamp time.Time
}

// Part is the piece of one message inside a chunk. It carries the message's
// metadata because a chunk may hold several speakers.
type Part struct {
	MessageIndex int
	Role         string
	Name         string
	Timestamp    time.Time
	// Text is the piece of the message's content, verbatim.
	Text string
}

// Chunk is the unit of extraction.
type Chunk struct {
	// Index is the chunk's position in the conversation.
	Index int
	// Text is the parts' texts joined with "\n": plain content, so that
	// content hashes do not depend on how speakers are rendered.
	Text string
	// Messages lists the message indices present, in order, without repeats.
	Messages []int
	// Speaker and Role are those of the first part, for callers that need
	// one attribution per chunk.
	Speaker string
	Role    string
	// Timestamp is that of the first part.
	Timestamp time.Time
	// Parts holds each message piece with its own speaker and time.
	Parts []Part
}

// Config configures a Splitter.
type Config struct {
	// MaxRunes bounds the length of a chunk's Text in runes. Default 3000.
	MaxRunes int
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.MaxRunes == 0 {
		c.MaxRunes = DefaultMaxRunes
	}
	return c
}

func (c Config) validate() error {
	if c.MaxRunes < 1 {
		return fmt.Errorf("chunk: max_runes must be at least 1, got %d", c.MaxRunes)
	}
	return nil
}

// Splitter cuts conversations into chunks. It holds no state between calls
// and is safe for concurrent use.
type Splitter struct {
	max int
}

// New returns a Splitter for cfg after applying defaults.
func New(cfg Config) (*Splitter, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Splitter{max: cfg.MaxRunes}, nil
}

// Split packs msgs, in order, into chunks of at most MaxRunes runes.
// Messages whose content is empty or only whitespace carry nothing to
// extract and are skipped.
func (s *Splitter) Split(msgs []Message) []Chunk {
	var (
		out   []Chunk
		cur   []Part
		runes int
	)
	flush := func() {
		if len(cur) == 0 {
			return
		}
		out = append(out, build(len(out), cur))
		cur, runes = nil, 0
	}
	for _, m := range msgs {
		if strings.TrimSpace(m.Content) == "" {
			continue
		}
		for _, piece := range SplitText(m.Content, s.max) {
			n := utf8.RuneCountInString(piece)
			cost := n
			if len(cur) > 0 {
				cost++ // the "\n" joining it to the previous part
			}
			if len(cur) > 0 && runes+cost > s.max {
				flush()
				cost = n
			}
			cur = append(cur, Part{MessageIndex: m.Index, Role: m.Role, Name: m.Name, Timestamp: m.Timestamp, Text: piece})
			runes += cost
		}
	}
	flush()
	return out
}

func build(idx int, parts []Part) Chunk {
	c := Chunk{
		Index:     idx,
		Speaker:   parts[0].Name,
		Role:      parts[0].Role,
		Timestamp: parts[0].Timestamp,
		Parts:     parts,
	}
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
		if len(c.Messages) == 0 || c.Messages[len(c.Messages)-1] != p.MessageIndex {
			c.Messages = append(c.Messages, p.MessageIndex)
		}
	}
	c.Text = b.String()
	return c
}

// Separator levels, highest priority first.
const (
	levelParagraph = iota
	levelLine
	levelSentence
	levelClause
	levelSpace
	levelChar
)

// SplitText cuts text into pieces of at most max runes, preferring the
// highest-priority separator that occurs. The pieces concatenate to text.
// Text that fits is returned whole.
func SplitText(text string, max int) []string {
	if max < 1 {
		max = 1
	}
	return splitLevel(nil, text, max, levelParagraph)
}

func splitLevel(out []string, text string, max, level int) []string {
	if utf8.RuneCountInString(text) <= max {
		return append(out, text)
	}
	for ; level <= levelChar; level++ {
		pieces := cut(text, level)
		if len(pieces) < 2 {
			continue
		}
		// Greedily merge neighbours up to max; recurse into any piece
		// that is too long on its own.
		var acc strings.Builder
		accRunes := 0
		for _, p := range pieces {
			n := utf8.RuneCountInString(p)
			if n > max {
				if acc.Len() > 0 {
					out = append(out, acc.String())
					acc.Reset()
					accRunes = 0
				}
				out = splitLevel(out, p, max, level+1)
				continue
			}
			if accRunes+n > max {
				out = append(out, acc.String())
				acc.Reset()
				accRunes = 0
			}
			acc.WriteString(p)
			accRunes += n
		}
		if acc.Len() > 0 {
			out = append(out, acc.String())
		}
		return out
	}
	return append(out, text) // unreachable: levelChar always cuts
}

// cut splits text after each separator of the given level, keeping the
// separator (and the whitespace after a sentence or clause end) with the
// piece it ends.
func cut(text string, level int) []string {
	var pieces []string
	start := 0
	for i := 0; i < len(text); {
		r, sz := utf8.DecodeRuneInString(text[i:])
		end := -1
		switch level {
		case levelParagraph:
			if r == '\n' && i+1 < len(text) && text[i+1] == '\n' {
				end = skipRun(text, i, '\n')
			}
		case levelLine:
			if r == '\n' {
				end = i + 1
			}
		case levelSentence:
			switch r {
			case '。', '！', '？':
				end = skipSpace(text, i+sz)
			case '.', '!', '?':
				if i+1 == len(text) || isSpaceByte(text[i+1]) {
					end = skipSpace(text, i+1)
				}
			}
		case levelClause:
			switch r {
			case '；', '，', '、':
				end = skipSpace(text, i+sz)
			case ';', ',':
				end = skipSpace(text, i+1)
			}
		case levelSpace:
			if unicode.IsSpace(r) {
				end = i + sz
				for end < len(text) {
					r2, sz2 := utf8.DecodeRuneInString(text[end:])
					if !unicode.IsSpace(r2) {
						break
					}
					end += sz2
				}
			}
		case levelChar:
			end = i + sz
		}
		if end < 0 {
			i += sz
			continue
		}
		pieces = append(pieces, text[start:end])
		start, i = end, end
	}
	if start < len(text) {
		pieces = append(pieces, text[start:])
	}
	return pieces
}

func skipRun(s string, i int, c byte) int {
	for i < len(s) && s[i] == c {
		i++
	}
	return i
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}
