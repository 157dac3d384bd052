package extract

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/chunk"
)

// Fact types. An experience is something the speaker (or the assistant) did
// or went through; a world fact is about anything else. Recall weighs and
// filters them separately, following Hindsight's two-way split.
const (
	World      = "world"
	Experience = "experience"
)

// Entity kinds.
const (
	KindPerson = "person"
	KindPlace  = "place"
	KindOrg    = "org"
	KindHandle = "handle"
	KindTitle  = "title"
	KindOther  = "other"
)

// Causal relations, as stored in memory_links.link_type.
const (
	Causes   = "causes"
	CausedBy = "caused_by"
	Enables  = "enables"
	Prevents = "prevents"
)

// Entity is a name mentioned by a fact. The resolver maps it to a canonical
// entity per bank; the extractor only reports the surface form.
type Entity struct {
	Name string `json:"name"`
	// Kind is person, place, org, handle, title or other.
	Kind string `json:"kind"`
}

// Causal links a fact to another fact of the same chunk.
type Causal struct {
	// TargetIndex is the index of the other fact in the chunk's []Fact.
	TargetIndex int `json:"target_index"`
	// Relation is causes, caused_by, enables or prevents, read as
	// "this fact <relation> the target".
	Relation string `json:"relation"`
}

// Fact is one extracted memory unit, before entity resolution and
// persistence.
type Fact struct {
	// Text is a self-contained statement that keeps the speaker's words.
	Text string `json:"text"`
	// FactType is world or experience.
	FactType string   `json:"fact_type"`
	Entities []Entity `json:"entities,omitempty"`
	Causal   []Causal `json:"causal,omitempty"`
	// OccurredStart and OccurredEnd bound when the fact happened, if the
	// text says so; End is exclusive. Both are set or neither.
	OccurredStart *time.Time `json:"occurred_start,omitempty"`
	OccurredEnd   *time.Time `json:"occurred_end,omitempty"`
	// MentionedAt is when it was said: the message timestamp, always.
	MentionedAt time.Time `json:"mentioned_at"`
	// Context is what is stored and shown as the fact's context: the
	// event's label, then ReplyTo. Tags are copied from the event; they
	// scope recall.
	Context string   `json:"context,omitempty"`
	Tags    []string `json:"tags,omitempty"`
	// ReplyTo quotes the turn the fact's message answers ("In reply to
	// Freya: …"), empty when it answers none (ReplyContexts). It is part
	// of the embedded text; the event's label is not.
	ReplyTo string `json:"reply_to,omitempty"`
	// MessageIndex is the index of the message of the event it came from,
	// part of the fact's idempotency key.
	MessageIndex int `json:"message_index"`
}

// EmbeddingText is what the fact is embedded as: the turn it answers
// before its text, so an answer is found by a question about what was
// asked ("what bottle did you suggest for the dinner?" → "A Syrah would
// stand up to the lamb", asked about a dinner). The event's context label
// is left out: one label on every item of a bank ("chat conversation")
// adds the same component to all their vectors, which compresses their
// cosines (consolidation folds more, a preference stated in passing drops
// out of the head). Hindsight too embeds a fact without the item's context.
func (f Fact) EmbeddingText() string { return EmbeddingTextOf(f.ReplyTo, f.Text) }

// EmbeddingTextOf is the one rule for what a stored fact is embedded as,
// from its stored reply_to and text: ingest, a memory's text edit, the
// redaction rescan and consolidation all embed through it, so a fact's
// vector keeps the quote whoever recomputes it. A fact without a quote
// (an observation, a row stored before reply_to was) is its text alone.
func EmbeddingTextOf(replyTo, text string) string {
	if replyTo == "" {
		return text
	}
	return replyTo + "\n" + text
}

// Input is one chunk to extract from.
type Input struct {
	// Parts are the chunk's message pieces, each with its speaker and time.
	Parts []chunk.Part
	// History are the messages of the same conversation just before
	// Parts, oldest first (a bounded window): when each message arrives
	// as its own event, the question an answer replies to is there and
	// not in Parts. Facts are never extracted from History.
	History []chunk.Part
	// Context and Tags are copied onto every fact.
	Context string
	Tags    []string
	// BankID and DocumentID say whose chunk it is, for the bank's LLM
	// trace; they are never part of a prompt. An LLM extractor sends one
	// bank's chunks per call.
	BankID, DocumentID string
	// ChunkID is the id the chunk is stored under (its facts' chunk_id),
	// for the LLM trace: through it a call's row finds the memories the
	// call extracted. Nil for a chunk that is not stored (dry runs).
	ChunkID uuid.UUID
}

var (
	validKinds     = map[string]bool{KindPerson: true, KindPlace: true, KindOrg: true, KindHandle: true, KindTitle: true, KindOther: true}
	validRelations = map[string]bool{Causes: true, CausedBy: true, Enables: true, Prevents: true}
)

// Validate checks the fields a single fact must satisfy before it is
// persisted: any provider, offline or LLM, goes through it, so a malformed
// LLM answer is caught here and not in the database. Causal targets are
// checked against their chunk by ValidateChunk.
func (f Fact) Validate() error {
	if strings.TrimSpace(f.Text) == "" {
		return errors.New("fact: empty text")
	}
	if f.FactType != World && f.FactType != Experience {
		return fmt.Errorf("fact: fact_type %q is not world or experience", f.FactType)
	}
	if f.MentionedAt.IsZero() {
		return errors.New("fact: mentioned_at is not set")
	}
	if (f.OccurredStart == nil) != (f.OccurredEnd == nil) {
		return errors.New("fact: occurred_start and occurred_end must both be set or both be empty")
	}
	if f.OccurredStart != nil && !f.OccurredStart.Before(*f.OccurredEnd) {
		return fmt.Errorf("fact: occurred_start %s is not before occurred_end %s", f.OccurredStart, f.OccurredEnd)
	}
	if f.MessageIndex < 0 {
		return fmt.Errorf("fact: message_index %d is negative", f.MessageIndex)
	}
	for _, e := range f.Entities {
		if strings.TrimSpace(e.Name) == "" {
			return errors.New("fact: entity with empty name")
		}
		if !validKinds[e.Kind] {
			return fmt.Errorf("fact: entity %q has unknown kind %q", e.Name, e.Kind)
		}
	}
	for _, c := range f.Causal {
		if !validRelations[c.Relation] {
			return fmt.Errorf("fact: unknown causal relation %q", c.Relation)
		}
		if c.TargetIndex < 0 {
			return fmt.Errorf("fact: causal target %d is negative", c.TargetIndex)
		}
	}
	return nil
}

// ValidateChunk validates each fact of one chunk and checks that causal
// links point at another fact of the same chunk.
func ValidateChunk(facts []Fact) error {
	for i, f := range facts {
		if err := f.Validate(); err != nil {
			return fmt.Errorf("fact %d: %w", i, err)
		}
		for _, c := range f.Causal {
			if c.TargetIndex >= len(facts) || c.TargetIndex == i {
				return fmt.Errorf("fact %d: causal target %d is not another fact of the chunk (%d facts)", i, c.TargetIndex, len(facts))
			}
		}
	}
	return nil
}
