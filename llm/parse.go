package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memstream/memstream/chunk"
	"github.com/memstream/memstream/extract"
)

// maxHistoryRunes bounds each history message in a request, keeping its
// end (where the question an answer replies to usually is): the window is
// a few messages, and one pasted document must not multiply the prompt.
const maxHistoryRunes = 1000

func buildRequest(in []extract.Input) request {
	r := request{Chunks: make([]requestChunk, len(in))}
	for i, input := range in {
		c := requestChunk{ChunkIndex: i, Context: input.Context}
		for _, p := range input.History {
			t := strings.TrimSpace(p.Text)
			if t == "" {
				continue
			}
			if rs := []rune(t); len(rs) > maxHistoryRunes {
				t = "…" + string(rs[len(rs)-maxHistoryRunes:])
			}
			h := historyMessage{Role: p.Role, Name: p.Name, Text: t}
			if !p.Timestamp.IsZero() {
				h.Timestamp = p.Timestamp.UTC().Format(time.RFC3339)
			}
			c.History = append(c.History, h)
		}
		for _, p := range input.Parts {
			m := requestMessage{MessageIndex: p.MessageIndex, Role: p.Role, Name: p.Name, Text: p.Text}
			if !p.Timestamp.IsZero() {
				m.Timestamp = p.Timestamp.UTC().Format(time.RFC3339)
			}
			c.Messages = append(c.Messages, m)
		}
		r.Chunks[i] = c
	}
	return r
}

// repairJSON recovers the JSON object from answers that wrap it in
// Markdown fences or prose, which compatible servers without strict
// schema support often do.
func repairJSON(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '{'); i > 0 {
		s = s[i:]
	}
	if j := strings.LastIndexByte(s, '}'); j >= 0 && j < len(s)-1 {
		s = s[:j+1]
	}
	return s
}

// parseResponse decodes and validates an answer for the inputs in. Any
// error names what is wrong so that the re-ask can quote it.
func parseResponse(content string, in []extract.Input) ([][]extract.Fact, error) {
	var r response
	if err := json.Unmarshal([]byte(repairJSON(content)), &r); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	out := make([][]extract.Fact, len(in))
	seen := make([]bool, len(in))
	for _, c := range r.Chunks {
		if c.ChunkIndex < 0 || c.ChunkIndex >= len(in) {
			return nil, fmt.Errorf("chunk_index %d is not one of 0..%d", c.ChunkIndex, len(in)-1)
		}
		if seen[c.ChunkIndex] {
			return nil, fmt.Errorf("chunk_index %d answered twice", c.ChunkIndex)
		}
		seen[c.ChunkIndex] = true
		facts, err := convertChunk(c.Facts, in[c.ChunkIndex])
		if err != nil {
			return nil, fmt.Errorf("chunk_index %d: %w", c.ChunkIndex, err)
		}
		out[c.ChunkIndex] = facts
	}
	if i := slices.Index(seen, false); i >= 0 {
		return nil, fmt.Errorf("chunk_index %d is missing", i)
	}
	return out, nil
}

func convertChunk(wfs []wireFact, in extract.Input) ([]extract.Fact, error) {
	facts := make([]extract.Fact, 0, len(wfs))
	replies := extract.ReplyContexts(in)
	for i, wf := range wfs {
		f, err := convertFact(wf, in, replies)
		if err != nil {
			return nil, fmt.Errorf("fact %d: %w", i, err)
		}
		facts = append(facts, f)
	}
	if err := extract.ValidateChunk(facts); err != nil {
		return nil, err
	}
	return facts, nil
}

// convertFact makes a wire fact an extract.Fact of chunk in; replies are
// the chunk's extract.ReplyContexts, so a fact quotes the turn its message
// answers as the offline extractor's facts do.
func convertFact(wf wireFact, in extract.Input, replies []string) (extract.Fact, error) {
	pi := slices.IndexFunc(in.Parts, func(p chunk.Part) bool { return p.MessageIndex == wf.MessageIndex })
	if pi < 0 {
		return extract.Fact{}, fmt.Errorf("message_index %d is not a message of the chunk", wf.MessageIndex)
	}
	part := in.Parts[pi]
	f := extract.Fact{
		Text:     strings.TrimSpace(wf.Text),
		FactType: wf.FactType,
		Causal:   wf.CausalRelations,
		// The event's context and tags win: tags scope recall, and a model
		// must not widen or narrow who can see a fact.
		Context:      in.Context,
		Tags:         slices.Clone(in.Tags),
		MessageIndex: wf.MessageIndex,
		// The message timestamp is authoritative for mentioned_at; the
		// model only echoes it.
		MentionedAt: part.Timestamp,
	}
	if f.Context == "" {
		f.Context = strings.TrimSpace(wf.Context)
	}
	if r := replies[pi]; r != "" {
		f.ReplyTo, f.Context = r, extract.JoinContext(f.Context, r)
	}
	if f.MentionedAt.IsZero() && wf.MentionedAt != nil {
		t, err := parseTime(*wf.MentionedAt)
		if err != nil {
			return f, fmt.Errorf("mentioned_at: %w", err)
		}
		f.MentionedAt = t
	}
	// Small slips are repaired here rather than re-asked: empty entity
	// names are dropped and unknown kinds become "other".
	for _, e := range wf.Entities {
		e.Name = strings.TrimSpace(e.Name)
		if e.Name == "" {
			continue
		}
		if !knownKind(e.Kind) {
			e.Kind = extract.KindOther
		}
		f.Entities = append(f.Entities, e)
	}
	var err error
	if f.OccurredStart, err = optTime(wf.OccurredStart); err != nil {
		return f, fmt.Errorf("occurred_start: %w", err)
	}
	if f.OccurredEnd, err = optTime(wf.OccurredEnd); err != nil {
		return f, fmt.Errorf("occurred_end: %w", err)
	}
	return f, nil
}

func knownKind(k string) bool {
	switch k {
	case extract.KindPerson, extract.KindPlace, extract.KindOrg, extract.KindHandle, extract.KindTitle, extract.KindOther:
		return true
	}
	return false
}

func optTime(s *string) (*time.Time, error) {
	if s == nil || strings.TrimSpace(*s) == "" {
		return nil, nil
	}
	t, err := parseTime(*s)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// parseTime accepts RFC 3339 and the shorter forms models commonly emit.
func parseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errors.New("not an RFC 3339 time: " + s)
}
