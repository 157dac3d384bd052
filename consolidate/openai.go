package consolidate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	openai "github.com/sashabaranov/go-openai"
)

// OpenAIConfig configures the openai adjudicator (llm.* keys).
type OpenAIConfig struct {
	BaseURL string
	APIKey  string
	Model   string
	// Timeout bounds one call.
	Timeout time.Duration
	// FactsPerCall is how many facts one call adjudicates.
	FactsPerCall int
	// Attempts is how often an invalid answer is re-asked (with the
	// validation error) before the batch fails and its job is retried.
	Attempts int
	// Concurrency is how many calls of one batch may be in flight at once
	// (consolidation.adjudicate_concurrency); the facts of one call, and
	// calls whose facts may touch the same observation, stay in order.
	Concurrency int
}

// OpenAIDeps is the HTTP client the adjudicator calls through.
type OpenAIDeps struct {
	// HTTPClient sends the calls; nil means a client of its own. memstream
	// passes the one whose transport holds the shared LLM gate
	// (priority.Transport), so consolidation waits behind live calls.
	HTTPClient *http.Client
}

// WithDefaults fills unset fields.
func (c OpenAIConfig) WithDefaults() OpenAIConfig {
	if c.Timeout == 0 {
		c.Timeout = 60 * time.Second
	}
	if c.FactsPerCall == 0 {
		c.FactsPerCall = 8
	}
	if c.Attempts == 0 {
		c.Attempts = 2
	}
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	return c
}

func (c OpenAIConfig) validate() error {
	switch {
	case c.BaseURL == "":
		return errors.New("llm.base_url: must be set for the openai consolidation provider")
	case c.Model == "":
		return errors.New("llm.model: must be set for the openai consolidation provider")
	case c.Timeout <= 0:
		return fmt.Errorf("llm.timeout: %s, must be positive", c.Timeout)
	case c.FactsPerCall < 1:
		return fmt.Errorf("consolidate openai FactsPerCall: %d, must be at least 1", c.FactsPerCall)
	case c.Attempts < 1:
		return fmt.Errorf("consolidate openai Attempts: %d, must be at least 1", c.Attempts)
	case c.Concurrency < 1:
		return fmt.Errorf("consolidation.adjudicate_concurrency: %d, must be at least 1", c.Concurrency)
	}
	return nil
}

// OpenAI adjudicates with an OpenAI-compatible chat model (llm.provider
// openai), several facts per call, with a strict JSON-schema answer that is
// validated against the batch before anything is applied.
type OpenAI struct {
	cfg    OpenAIConfig
	client *openai.Client
}

// NewOpenAI returns the openai adjudicator.
func NewOpenAI(deps OpenAIDeps, cfg OpenAIConfig) (*OpenAI, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = cfg.BaseURL
	oc.HTTPClient = &http.Client{}
	if deps.HTTPClient != nil {
		oc.HTTPClient = deps.HTTPClient
	}
	return &OpenAI{cfg: cfg, client: openai.NewClientWithConfig(oc)}, nil
}

// BatchSize is FactsPerCall.
func (o *OpenAI) BatchSize() int { return o.cfg.FactsPerCall }

// Concurrency is how many of a batch's calls the worker may run at once.
func (o *OpenAI) Concurrency() int { return o.cfg.Concurrency }

// decisionSchema is the response_format of every call. Strict mode needs
// every property required and no additional properties.
var decisionSchema = json.RawMessage(`{
  "type": "object",
  "additionalProperties": false,
  "required": ["creates", "updates", "deletes"],
  "properties": {
    "creates": {"type": "array", "items": {"type": "object", "additionalProperties": false,
      "required": ["text", "source_fact_ids", "reason"],
      "properties": {
        "text": {"type": "string", "description": "the durable observation, one sentence"},
        "source_fact_ids": {"type": "array", "items": {"type": "string"}},
        "reason": {"type": "string"}}}},
    "updates": {"type": "array", "items": {"type": "object", "additionalProperties": false,
      "required": ["observation_id", "text", "source_fact_ids", "reason"],
      "properties": {
        "observation_id": {"type": "string"},
        "text": {"type": "string", "description": "the new observation text, or the unchanged text when the facts only confirm it"},
        "source_fact_ids": {"type": "array", "items": {"type": "string"}},
        "reason": {"type": "string"}}}},
    "deletes": {"type": "array", "items": {"type": "object", "additionalProperties": false,
      "required": ["observation_id", "reason"],
      "properties": {
        "observation_id": {"type": "string"},
        "reason": {"type": "string"}}}}
  }
}`)

const systemPrompt = `You consolidate an agent's memory. You get new facts and the existing observations that may concern them.
Decide, for every fact:
- If it restates or confirms an observation, add it to "updates" with that observation_id, the unchanged text, and the fact id in source_fact_ids.
- If it changes a value an observation holds (someone moved, changed jobs, changed a preference) and is newer, add an "updates" entry whose text states the new situation; the old text is kept in history by the system.
- If it takes an observation back ("no longer", "actually not"), add a "deletes" entry with that observation_id and a reason, and record the retraction in "creates".
- Otherwise, if it holds durable knowledge, add a "creates" entry; facts that say the same new thing go into one create.
Use only the ids given (facts "f1"…, observations "o1"…). An observation may only take facts listed in its "for_facts". Never mix facts with different tags in one create. Every entry needs a short reason.`

type promptFact struct {
	ID   string   `json:"id"`
	Text string   `json:"text"`
	Time string   `json:"time"`
	Tags []string `json:"tags"`
}

type promptObservation struct {
	ID           string   `json:"id"`
	Text         string   `json:"text"`
	ProofCount   int      `json:"proof_count"`
	LastEvidence string   `json:"last_evidence"`
	ForFacts     []string `json:"for_facts"`
}

type rawDecision struct {
	Creates []struct {
		Text          string   `json:"text"`
		SourceFactIDs []string `json:"source_fact_ids"`
		Reason        string   `json:"reason"`
	} `json:"creates"`
	Updates []struct {
		ObservationID string   `json:"observation_id"`
		Text          string   `json:"text"`
		SourceFactIDs []string `json:"source_fact_ids"`
		Reason        string   `json:"reason"`
	} `json:"updates"`
	Deletes []struct {
		ObservationID string `json:"observation_id"`
		Reason        string `json:"reason"`
	} `json:"deletes"`
}

// Adjudicate asks the model about the batch. The prompt names facts and
// observations by short references (f1, o1), which models copy far more
// reliably than UUIDs; the answer is mapped back and validated, and an
// invalid answer is re-asked once with the error.
func (o *OpenAI) Adjudicate(ctx context.Context, facts []FactCandidates) (Decision, error) {
	factRef := map[string]uuid.UUID{}
	obsRef := map[string]uuid.UUID{}
	obsIdx := map[uuid.UUID]int{}
	var pf []promptFact
	var po []promptObservation
	for i, fc := range facts {
		ref := "f" + strconv.Itoa(i+1)
		factRef[ref] = fc.Fact.ID
		pf = append(pf, promptFact{ID: ref, Text: fc.Fact.Text, Time: fc.Fact.When().UTC().Format(time.RFC3339), Tags: normTags(fc.Fact.Tags)})
		for _, c := range fc.Candidates {
			j, ok := obsIdx[c.ID]
			if !ok {
				j = len(po)
				obsIdx[c.ID] = j
				oref := "o" + strconv.Itoa(j+1)
				obsRef[oref] = c.ID
				po = append(po, promptObservation{ID: oref, Text: c.Text, ProofCount: c.ProofCount,
					LastEvidence: c.LastEvidence.UTC().Format(time.RFC3339)})
			}
			po[j].ForFacts = append(po[j].ForFacts, ref)
		}
	}
	input, err := json.Marshal(map[string]any{"facts": pf, "observations": po})
	if err != nil {
		return Decision{}, err
	}
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: systemPrompt},
		{Role: openai.ChatMessageRoleUser, Content: string(input)},
	}
	var lastErr error
	for range o.cfg.Attempts {
		content, err := o.call(ctx, msgs)
		if err != nil {
			return Decision{}, err
		}
		d, err := mapDecision(content, factRef, obsRef)
		if err == nil {
			err = d.validate(facts)
		}
		if err == nil {
			return d, nil
		}
		lastErr = err
		msgs = append(msgs,
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: content},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: "That answer is invalid: " + err.Error() + ". Answer again."})
	}
	return Decision{}, fmt.Errorf("openai adjudication invalid after %d attempts: %w", o.cfg.Attempts, lastErr)
}

func (o *OpenAI) call(ctx context.Context, msgs []openai.ChatCompletionMessage) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, o.cfg.Timeout)
	defer cancel()
	resp, err := o.client.CreateChatCompletion(cctx, openai.ChatCompletionRequest{
		Model:       o.cfg.Model,
		Messages:    msgs,
		Temperature: 0,
		ResponseFormat: &openai.ChatCompletionResponseFormat{
			Type:       openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: "consolidation", Schema: decisionSchema, Strict: true},
		},
	})
	if err != nil {
		return "", fmt.Errorf("openai adjudication call: %w", err)
	}
	if len(resp.Choices) == 0 {
		return "", nil
	}
	if r := resp.Choices[0].Message.Refusal; r != "" {
		return "", fmt.Errorf("openai adjudication refused: %s", r)
	}
	return resp.Choices[0].Message.Content, nil
}

// mapDecision parses the model's JSON and maps references back to ids; an
// id the batch does not hold is an error. Full UUIDs are accepted too.
func mapDecision(content string, factRef, obsRef map[string]uuid.UUID) (Decision, error) {
	var raw rawDecision
	dec := json.NewDecoder(strings.NewReader(content))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return Decision{}, fmt.Errorf("answer is not the decision JSON: %w", err)
	}
	resolve := func(refs map[string]uuid.UUID, what, s string) (uuid.UUID, error) {
		s = strings.TrimSpace(s)
		if id, ok := refs[strings.ToLower(s)]; ok {
			return id, nil
		}
		if id, err := uuid.Parse(s); err == nil {
			for _, v := range refs {
				if v == id {
					return id, nil
				}
			}
		}
		return uuid.Nil, fmt.Errorf("unknown %s id %q", what, s)
	}
	facts := func(ss []string) ([]uuid.UUID, error) {
		var out []uuid.UUID
		for _, s := range ss {
			id, err := resolve(factRef, "fact", s)
			if err != nil {
				return nil, err
			}
			out = append(out, id)
		}
		return out, nil
	}
	var d Decision
	for _, c := range raw.Creates {
		src, err := facts(c.SourceFactIDs)
		if err != nil {
			return d, err
		}
		d.Creates = append(d.Creates, Create{Text: strings.TrimSpace(c.Text), SourceFactIDs: src, Reason: c.Reason})
	}
	for _, u := range raw.Updates {
		id, err := resolve(obsRef, "observation", u.ObservationID)
		if err != nil {
			return d, err
		}
		src, err := facts(u.SourceFactIDs)
		if err != nil {
			return d, err
		}
		d.Updates = append(d.Updates, Update{ObservationID: id, Text: strings.TrimSpace(u.Text), SourceFactIDs: src, Reason: u.Reason})
	}
	for _, del := range raw.Deletes {
		id, err := resolve(obsRef, "observation", del.ObservationID)
		if err != nil {
			return d, err
		}
		d.Deletes = append(d.Deletes, Delete{ObservationID: id, Reason: del.Reason})
	}
	return d, nil
}
