package reflect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	openai "github.com/sashabaranov/go-openai"

	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/tokens"
)

// Tool names, as the model sees them and as the trace reports them.
const (
	ToolMentalModels = "search_mental_models"
	ToolObservations = "search_observations"
	ToolRecall       = "recall"
	ToolExpand       = "expand"
	ToolDone         = "done"
)

// steered is the order of the first iterations: the most distilled
// knowledge first, raw facts last, as Hindsight's reflect does. The model
// is free afterwards.
var steered = []string{ToolMentalModels, ToolObservations, ToolRecall}

// Kinds of gathered sources, matching BasedOn's lists.
const (
	kindMemory      = "memory"
	kindObservation = "observation"
	kindMentalModel = "mental_model"
)

// mentalModelLimit caps search_mental_models: a bank has tens of standing
// questions and the best few are all an answer can use.
const mentalModelLimit = 5

// staleAfter marks an observation as stale when its newest evidence is
// older than this, even before consolidation recomputes its trend
// (consolidation's "old" horizon is 90 days).
const staleAfter = 90 * 24 * time.Hour

// source is one memory, observation or mental model a tool returned.
type source struct {
	Kind  string
	ID    string
	Text  string
	When  time.Time
	Trend string
	Score float64
	Proof int
	// Names are the lower-cased words of the entities the source mentions.
	Names map[string]bool
}

// stale reports whether the source should lose to newer evidence.
func (s *source) stale(now time.Time) bool {
	return s.Trend == "STALE" || (!s.When.IsZero() && now.Sub(s.When) > staleAfter && s.Kind == kindObservation)
}

// session is the state of one reflect call.
type session struct {
	r    *Reflector
	req  Request
	disp Disposition
	now  time.Time

	sources map[string]*source // by id
	order   []string           // first-seen order, for a stable digest
	// per tool, what the offline composer ranks
	models []*source
	obs    []*source
	facts  []*source

	trace Trace
	usage Usage
}

func (s *session) remember(src *source) *source {
	if old, ok := s.sources[src.ID]; ok {
		return old
	}
	s.sources[src.ID] = src
	s.order = append(s.order, src.ID)
	return src
}

// toolArgs is the union of every tool's arguments.
type toolArgs struct {
	Query          string   `json:"query"`
	MaxTokens      int      `json:"max_tokens"`
	MemoryIDs      []string `json:"memory_ids"`
	Depth          string   `json:"depth"`
	Answer         string   `json:"answer"`
	ObservationIDs []string `json:"observation_ids"`
	MentalModelIDs []string `json:"mental_model_ids"`
}

// toolDefs are the tools offered to the model.
func toolDefs() []openai.Tool {
	def := func(name, desc, params string) openai.Tool {
		return openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: name, Description: desc, Parameters: json.RawMessage(params)}}
	}
	return []openai.Tool{
		def(ToolMentalModels, "Search the bank's mental models: curated, periodically refreshed answers to standing questions. Check these first.",
			`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
		def(ToolObservations, "Search observations: facts consolidated from many memories, each with a trend (NEW, STRENGTHENING, STABLE, WEAKENING, STALE), proof count and the date of its newest evidence. Prefer non-stale observations when they conflict.",
			`{"type":"object","properties":{"query":{"type":"string"},"max_tokens":{"type":"integer","minimum":1}},"required":["query"]}`),
		def(ToolRecall, "Search raw memories (world facts and experiences), with their dates. Newer memories supersede older ones when they conflict.",
			`{"type":"object","properties":{"query":{"type":"string"},"max_tokens":{"type":"integer","minimum":1}},"required":["query"]}`),
		def(ToolExpand, "Read the source text behind memories: the chunk they were extracted from, or the whole document.",
			`{"type":"object","properties":{"memory_ids":{"type":"array","items":{"type":"string"}},"depth":{"type":"string","enum":["chunk","document"]}},"required":["memory_ids","depth"]}`),
		def(ToolDone, "Give the final answer, with the ids of the memories, observations and mental models it is based on.",
			`{"type":"object","properties":{"answer":{"type":"string"},"memory_ids":{"type":"array","items":{"type":"string"}},"observation_ids":{"type":"array","items":{"type":"string"}},"mental_model_ids":{"type":"array","items":{"type":"string"}}},"required":["answer"]}`),
	}
}

// parseArgs decodes a tool call's arguments and checks what the tool
// needs; the error goes back to the model as the tool's result.
func parseArgs(tool, raw string) (toolArgs, error) {
	var a toolArgs
	if strings.TrimSpace(raw) == "" {
		raw = "{}"
	}
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		return a, fmt.Errorf("arguments of %s are not valid JSON: %v", tool, err)
	}
	switch tool {
	case ToolMentalModels, ToolObservations, ToolRecall:
		if strings.TrimSpace(a.Query) == "" {
			return a, fmt.Errorf("%s needs a non-empty query", tool)
		}
		if a.MaxTokens < 0 {
			return a, fmt.Errorf("%s: max_tokens must be positive", tool)
		}
	case ToolExpand:
		if len(a.MemoryIDs) == 0 {
			return a, errors.New("expand needs memory_ids")
		}
		if a.Depth == "" {
			a.Depth = store.ExpandChunk
		}
		if a.Depth != store.ExpandChunk && a.Depth != store.ExpandDocument {
			return a, fmt.Errorf("expand: depth %q is not chunk or document", a.Depth)
		}
	case ToolDone:
		if strings.TrimSpace(a.Answer) == "" {
			return a, errors.New("done needs a non-empty answer")
		}
	default:
		return a, fmt.Errorf("unknown tool %q; use one of %s, %s, %s, %s, %s", tool, ToolMentalModels, ToolObservations, ToolRecall, ToolExpand, ToolDone)
	}
	return a, nil
}

// absorb records what a tool found, in the tool's order. It is separate
// from runTool so that tools may run concurrently (runTool only reads the
// session) while the gathered state stays in a deterministic order.
func (s *session) absorb(found []*source) {
	for _, f := range found {
		src := s.remember(f)
		switch src.Kind {
		case kindMentalModel:
			s.models = appendOnce(s.models, src)
		case kindObservation:
			s.obs = appendOnce(s.obs, src)
		default:
			s.facts = appendOnce(s.facts, src)
		}
	}
}

// runTool executes one search tool and renders its result within ceiling
// estimated tokens, returning the sources it found for absorb. Its error
// is for the model, not the caller: a failing tool is reported and the
// loop goes on. It does not modify the session.
func (s *session) runTool(ctx context.Context, tool string, a toolArgs, ceiling int) (string, []*source, error) {
	switch tool {
	case ToolMentalModels:
		hits, err := s.r.deps.Store.RankMentalModels(ctx, s.req.BankID, a.Query, s.req.Tags, mentalModelLimit)
		if err != nil {
			return "", nil, err
		}
		items := make([]any, 0, len(hits))
		found := make([]*source, 0, len(hits))
		for _, h := range hits {
			src := &source{Kind: kindMentalModel, ID: h.ID.String(), Text: h.Content, Score: h.Score}
			if h.LastRefreshedAt != nil {
				src.When = *h.LastRefreshedAt
			}
			found = append(found, src)
			item := map[string]any{"id": src.ID, "name": h.Name, "question": h.SourceQuery, "content": h.Content, "match": round2(h.Score)}
			if h.LastRefreshedAt != nil {
				item["refreshed_at"] = h.LastRefreshedAt.UTC().Format(time.DateOnly)
			}
			items = append(items, item)
		}
		return render(s.r.tok, "mental_models", items, ceiling), found, nil
	case ToolObservations, ToolRecall:
		rr := recall.Request{BankID: s.req.BankID, Query: a.Query, Budget: s.req.Budget, Tags: s.req.Tags, QueryTime: s.now,
			MaxTokens: ceiling}
		if a.MaxTokens > 0 {
			rr.MaxTokens = min(a.MaxTokens, ceiling)
		}
		if s.req.MaxTokens > 0 {
			rr.MaxTokens = min(rr.MaxTokens, s.req.MaxTokens)
		}
		key := "memories"
		if tool == ToolObservations {
			rr.Types, key = []string{"observation"}, "observations"
		} else {
			rr.Types = []string{"world", "experience"}
		}
		resp, err := s.r.deps.Recaller.Recall(ctx, rr)
		if err != nil {
			return "", nil, err
		}
		items := make([]any, 0, len(resp.Results))
		found := make([]*source, 0, len(resp.Results))
		for _, res := range resp.Results {
			kind := kindMemory
			if res.Type == "observation" {
				kind = kindObservation
			}
			src := &source{Kind: kind, ID: res.ID.String(), Text: res.Text, When: res.MentionedAt,
				Trend: res.Trend, Score: res.Scores.Final, Proof: res.ProofCount, Names: terms(strings.Join(res.Entities, " "))}
			found = append(found, src)
			item := map[string]any{"id": src.ID, "text": res.Text, "date": res.MentionedAt.UTC().Format(time.DateOnly)}
			if kind == kindObservation {
				item["trend"] = res.Trend
				item["proof_count"] = res.ProofCount
				item["stale"] = src.stale(s.now)
				item["days_since_evidence"] = int(s.now.Sub(res.MentionedAt).Hours() / 24)
			} else {
				item["type"] = res.Type
				if res.OccurredStart != nil {
					item["occurred"] = res.OccurredStart.UTC().Format(time.DateOnly)
				}
				if len(res.Entities) > 0 {
					item["entities"] = res.Entities
				}
				if res.Context != "" {
					item["context"] = res.Context
				}
			}
			items = append(items, item)
		}
		return render(s.r.tok, key, items, ceiling), found, nil
	case ToolExpand:
		ids := make([]uuid.UUID, 0, len(a.MemoryIDs))
		for _, raw := range a.MemoryIDs {
			id, err := uuid.Parse(strings.Trim(raw, "[] "))
			if err != nil {
				return "", nil, fmt.Errorf("expand: %q is not a memory id", raw)
			}
			ids = append(ids, id)
		}
		ctxs, err := s.r.deps.Store.ExpandMemories(ctx, s.req.BankID, ids, a.Depth)
		if err != nil {
			return "", nil, err
		}
		items := make([]any, 0, len(ctxs))
		seenText := map[string]bool{}
		for _, c := range ctxs {
			if seenText[c.Text] { // facts of one document share its text
				continue
			}
			seenText[c.Text] = true
			items = append(items, map[string]any{"memory_id": c.MemoryID.String(), "document_id": c.DocumentID, "text": c.Text})
		}
		return render(s.r.tok, "sources", items, ceiling), nil, nil
	}
	return "", nil, fmt.Errorf("unknown tool %q", tool)
}

// render encodes items as {"<key>": [...]} within ceiling estimated
// tokens: whole items while they fit, then a count of what was left out,
// so the model sees valid JSON and knows it saw only part. A first item
// too big on its own has its long strings cut. Each item is encoded and
// counted once, so rendering stays linear in the output.
func render(tok *tokens.Counter, key string, items []any, ceiling int) string {
	keyJSON, _ := json.Marshal(key)
	var b strings.Builder
	b.WriteString("{")
	b.Write(keyJSON)
	b.WriteString(":[")
	// The closing part, with room for the omission note.
	tail := func(omitted int) string {
		if omitted == 0 {
			return "]}"
		}
		return fmt.Sprintf(`],"omitted":%d,"truncated":true}`, omitted)
	}
	used := tok.Count(b.String()) + tok.Count(tail(len(items)))
	kept := 0
	for i, it := range items {
		enc, _ := json.Marshal(it)
		n := tok.Count(string(enc)) + 1 // and its comma
		if used+n > ceiling && i == 0 {
			if m, ok := it.(map[string]any); ok {
				room := ceiling - used - (n - longestString(tok, m))
				for k, v := range m {
					if str, ok := v.(string); ok && tok.Count(str) > 16 {
						m[k] = tok.Truncate(str, max(room-8, 8))
					}
				}
				enc, _ = json.Marshal(m)
				n = tok.Count(string(enc)) + 1
			}
		}
		if used+n > ceiling {
			break
		}
		if kept > 0 {
			b.WriteByte(',')
		}
		b.Write(enc)
		used += n
		kept++
	}
	b.WriteString(tail(len(items) - kept))
	return b.String()
}

func longestString(tok *tokens.Counter, m map[string]any) int {
	n := 0
	for _, v := range m {
		if s, ok := v.(string); ok {
			n = max(n, tok.Count(s))
		}
	}
	return n
}

func appendOnce(xs []*source, x *source) []*source {
	if slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

func round2(f float64) float64 { return float64(int(f*100+0.5)) / 100 }
