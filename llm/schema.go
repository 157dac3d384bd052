package llm

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/memstream/memstream/extract"
)

// request is the user message of one call: the chunks to extract from.
// The model answers with one entry per chunk_index.
type request struct {
	Chunks []requestChunk `json:"chunks"`
}

type requestChunk struct {
	ChunkIndex int    `json:"chunk_index"`
	Context    string `json:"context,omitempty"`
	// History are the conversation's messages just before Messages
	// (extract.Input.History), for what the chunk refers to or answers;
	// they carry no message_index, since no fact may come from them.
	History  []historyMessage `json:"history,omitempty"`
	Messages []requestMessage `json:"messages"`
}

type historyMessage struct {
	Role      string `json:"role"`
	Name      string `json:"name,omitempty"`
	Timestamp string `json:"timestamp,omitempty"`
	Text      string `json:"text"`
}

type requestMessage struct {
	MessageIndex int    `json:"message_index"`
	Role         string `json:"role"`
	Name         string `json:"name,omitempty"`
	Timestamp    string `json:"timestamp,omitempty"`
	Text         string `json:"text"`
}

// response is what the schema makes the model return.
type response struct {
	Chunks []responseChunk `json:"chunks"`
}

type responseChunk struct {
	ChunkIndex int        `json:"chunk_index"`
	Facts      []wireFact `json:"facts"`
}

// wireFact mirrors extract.Fact's JSON names; the causal links are named
// causal_relations on the wire because models follow a descriptive name
// better, and message_index says which message the fact came from.
type wireFact struct {
	Text            string           `json:"text"`
	FactType        string           `json:"fact_type"`
	Entities        []extract.Entity `json:"entities"`
	CausalRelations []extract.Causal `json:"causal_relations"`
	OccurredStart   *string          `json:"occurred_start"`
	OccurredEnd     *string          `json:"occurred_end"`
	MentionedAt     *string          `json:"mentioned_at"`
	Context         string           `json:"context"`
	Tags            []string         `json:"tags"`
	MessageIndex    int              `json:"message_index"`
}

// rawSchema is a strict-mode JSON schema: every property required and no
// extra ones, optional values expressed as nullable types.
type rawSchema map[string]any

// MarshalJSON lets rawSchema serve as go-openai's json.Marshaler schema.
func (s rawSchema) MarshalJSON() ([]byte, error) { return json.Marshal(map[string]any(s)) }

func obj(props map[string]any) map[string]any {
	req := slices.Sorted(maps.Keys(props))
	return map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false}
}

func enum(vals ...string) map[string]any { return map[string]any{"type": "string", "enum": vals} }

func nullableString(desc string) map[string]any {
	return map[string]any{"type": []string{"string", "null"}, "description": desc}
}

// factsSchema is the response_format schema of every call.
var factsSchema = rawSchema(obj(map[string]any{
	"chunks": map[string]any{"type": "array", "items": obj(map[string]any{
		"chunk_index": map[string]any{"type": "integer"},
		"facts": map[string]any{"type": "array", "items": obj(map[string]any{
			"text":      map[string]any{"type": "string", "description": "one self-contained statement; keep the speaker's words"},
			"fact_type": enum(extract.World, extract.Experience),
			"entities": map[string]any{"type": "array", "items": obj(map[string]any{
				"name": map[string]any{"type": "string"},
				"kind": enum(extract.KindPerson, extract.KindPlace, extract.KindOrg, extract.KindHandle, extract.KindTitle, extract.KindOther),
			})},
			"causal_relations": map[string]any{"type": "array", "items": obj(map[string]any{
				"target_index": map[string]any{"type": "integer", "description": "index of another fact of the same chunk"},
				"relation":     enum(extract.Causes, extract.CausedBy, extract.Enables, extract.Prevents),
			})},
			"occurred_start": nullableString("RFC 3339 start of when it happened, resolved against the message timestamp"),
			"occurred_end":   nullableString("RFC 3339 exclusive end; set together with occurred_start"),
			"mentioned_at":   nullableString("RFC 3339 timestamp of the message"),
			"context":        map[string]any{"type": "string"},
			"tags":           map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"message_index":  map[string]any{"type": "integer", "description": "message_index of the message the fact comes from"},
		})},
	})},
}))

const systemPrompt = `You extract long-term memory facts from chat conversations.
For each chunk, return the facts worth remembering about the people, their lives, plans, preferences and the world.
Rules:
- Each fact is one self-contained statement. Keep the speaker's own words; name the speaker when the text says I/me/my/we.
- A chunk may come with "history": the messages of the same conversation just before it, oldest first. Use it only to understand the chunk: when a message answers or refers to something in the history ("Go for the Syrah." after "Which wine goes with lamb?"), write the fact so it stands alone ("The assistant suggested a Syrah to go with the user's lamb."). Never extract a fact from a history message.
- fact_type is "experience" for something the speaker or the assistant did, went through or feels, otherwise "world".
- entities lists people, places, organisations, @handles and titles named by the fact, as written.
- causal_relations link a fact to another fact of the same chunk by its index in that chunk's facts array.
- Resolve relative times (yesterday, last Saturday, 三天前, 上周六) against the message timestamp into occurred_start/occurred_end (RFC 3339, end exclusive); null when the text gives no time.
- mentioned_at is the message timestamp. message_index is the message the fact comes from.
- Skip greetings, thanks and other content-free lines. Answer in the language of the text.
Return one entry per chunk_index given, even when it has no facts.`
