package reflect

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/memstream/memstream/llmtrace"
	"github.com/memstream/memstream/text"
	"github.com/memstream/memstream/tokens"

	openai "github.com/sashabaranov/go-openai"
)

// offline is the provider without an LLM: the steered tools, then an
// extractive answer. With no model to read one tool's result before the
// next call, the three searches do not depend on each other, so they run
// concurrently; the trace and the gathered state keep the steered order.
// It is deterministic for a given bank state and query time.
func (s *session) offline(ctx context.Context) (Response, error) {
	cfg := s.r.cfg
	left := cfg.ContextTokens - s.r.tok.Count(s.systemPrompt()) - s.r.tok.Count(s.req.Query) - cfg.AnswerTokens
	ceiling := min(cfg.MaxToolResultTokens, left/len(steered))
	type result struct {
		out   string
		found []*source
		err   error
		d     time.Duration
	}
	results := make([]result, len(steered))
	var wg sync.WaitGroup
	for i, tool := range steered {
		wg.Go(func() {
			t0 := time.Now()
			out, found, err := s.runTool(ctx, tool, toolArgs{Query: s.req.Query}, ceiling)
			results[i] = result{out: out, found: found, err: err, d: time.Since(t0)}
		})
	}
	wg.Wait()
	raw, _ := json.Marshal(map[string]string{"query": s.req.Query})
	for i, tool := range steered {
		res := results[i]
		if res.err != nil {
			// No model can read a tool error here; recall already degrades
			// failed arms, so what is left is the store failing.
			return Response{}, fmt.Errorf("reflect bank %s: %s: %w", s.req.BankID, tool, res.err)
		}
		s.absorb(res.found)
		s.recordTool(tool, string(raw), len(res.out), res.d)
		s.trace.Iterations++
	}
	s.trace.StopReason = stopOffline
	return s.extractive(), nil
}

// Thresholds of the extractive composer.
const (
	// modelMatch is the share of the question's words a mental model must
	// contain to answer it: below it, the model is about something else.
	modelMatch = 0.6
	// comparable is how close to the best score a candidate must be for
	// recency and staleness, rather than relevance, to decide between them.
	comparable = 0.8
	// maxSupport bounds the facts quoted under the lead.
	maxSupport = 2
)

// extractive composes an answer from the gathered sources: a lead from the
// best mental model, observation or fact, then the newest facts that
// support it, each cited as [id]. When sources conflict, newer evidence and
// non-stale observations win, because a memory bank accumulates
// superseded facts ("I live in Beijing") next to their replacements ("I
// moved to Shanghai").
func (s *session) extractive() Response {
	var parts []string
	var cited []*source
	cite := func(src *source, prefix, text string) {
		parts = append(parts, fmt.Sprintf("%s%s [%s]", prefix, strings.TrimSpace(text), src.ID))
		cited = append(cited, src)
	}

	queryTerms := terms(s.req.Query)
	obs := s.pick(s.obs)
	// Facts qualify only if they share an informative word with the
	// question or the observation besides the names of who they are about:
	// the graph arm also returns everything else said about the same
	// person.
	var facts []*source
	for _, f := range s.comparableNewestFirst(s.facts) {
		ft := terms(f.Text)
		if overlaps(ft, queryTerms, f.Names) || (obs != nil && overlaps(ft, terms(obs.Text), union(queryTerms, f.Names))) {
			facts = append(facts, f)
		}
	}
	var model *source
	for _, m := range s.models {
		if m.Score >= modelMatch && strings.TrimSpace(m.Text) != "" {
			model = m
			break
		}
	}
	newestFact := func() *source {
		if len(facts) == 0 {
			return nil
		}
		return facts[0]
	}

	// The lead is the most distilled source that is still current: a
	// mental model unless an observation has newer evidence, an observation
	// unless it is stale and a newer fact contradicts its age.
	var lead *source
	switch {
	case model != nil && !(obs != nil && !obs.stale(s.now) && (model.When.IsZero() || obs.When.After(model.When))):
		lead = model
		cite(model, "", firstSentences(s.r.tok, model.Text, 400))
		if obs != nil && !obs.stale(s.now) {
			cite(obs, "", obs.Text)
		}
	case obs != nil && (!obs.stale(s.now) || newestFact() == nil || !newestFact().When.After(obs.When)):
		lead = obs
		cite(obs, "", obs.Text)
	}
	if len(facts) > 0 {
		// The newest qualifying fact supports (or, with no lead, is) the
		// answer; one older one follows, dated, so the reader sees what
		// changed.
		for i, f := range facts {
			if i >= maxSupport {
				break
			}
			date := ""
			if !f.When.IsZero() {
				date = " (" + f.When.UTC().Format(time.DateOnly) + ")"
			}
			switch {
			case i == 0 && lead == nil:
				cite(f, "", f.Text+date)
			case i == 0:
				cite(f, "Most recent memory"+date+": ", f.Text)
			default:
				cite(f, "Earlier"+date+": ", f.Text)
			}
		}
	}
	if lead == nil && obs != nil { // a stale observation, superseded by newer facts
		cite(obs, "Older observation ("+strings.ToLower(cmpOrStr(obs.Trend, "stale"))+"): ", obs.Text)
	}
	if len(parts) == 0 {
		return Response{Text: "I don't know: nothing in memory answers this question.", BasedOn: s.basedOn(""), Extractive: true}
	}
	text := strings.Join(parts, "\n")
	if note := s.skepticNote(obs, lead); note != "" {
		text += "\n" + note
	}
	ids := make([]string, len(cited))
	for i, c := range cited {
		ids[i] = c.ID
	}
	return Response{Text: text, BasedOn: s.basedOn("", ids), Extractive: true}
}

// terms are the informative words of s (text.QueryTerms: no stop words,
// CJK bigrams).
func terms(s string) map[string]bool {
	out := map[string]bool{}
	for _, t := range text.QueryTerms(s) {
		out[t] = true
	}
	return out
}

func union(a, b map[string]bool) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// overlaps reports whether a and b share a term that is not in except.
func overlaps(a, b, except map[string]bool) bool {
	for t := range a {
		if b[t] && !except[t] {
			return true
		}
	}
	return false
}

// pick returns the best of srcs: among those scoring within comparable of
// the top, non-stale before stale, then newest, then highest score.
func (s *session) pick(srcs []*source) *source {
	c := s.comparableNewestFirst(srcs)
	if len(c) == 0 {
		return nil
	}
	return c[0]
}

func (s *session) comparableNewestFirst(srcs []*source) []*source {
	if len(srcs) == 0 {
		return nil
	}
	top := 0.0
	for _, x := range srcs {
		top = max(top, x.Score)
	}
	var c []*source
	for _, x := range srcs {
		if x.Score >= comparable*top {
			c = append(c, x)
		}
	}
	slices.SortStableFunc(c, func(a, b *source) int {
		if as, bs := a.stale(s.now), b.stale(s.now); as != bs {
			if as {
				return 1
			}
			return -1
		}
		if !a.When.Equal(b.When) {
			return b.When.Compare(a.When)
		}
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	return c
}

// skepticNote is the disposition's effect on an extractive answer: a
// skeptical bank flags thin or fading support.
func (s *session) skepticNote(obs, lead *source) string {
	if s.disp.Skepticism < 4 {
		return ""
	}
	var notes []string
	if obs != nil && (obs.Trend == "WEAKENING" || obs.stale(s.now)) {
		notes = append(notes, fmt.Sprintf("the observation is %s", strings.ToLower(cmpOrStr(obs.Trend, "stale"))))
	}
	if obs != nil && obs.Proof <= 1 && lead == obs {
		notes = append(notes, "it rests on a single piece of evidence")
	}
	if len(notes) == 0 {
		return ""
	}
	return "Caution: " + strings.Join(notes, "; ") + "."
}

func cmpOrStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// firstSentences returns whole leading sentences of s up to about n bytes.
func firstSentences(tok *tokens.Counter, s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexAny(s[:n], ".!?。！？")
	if cut <= 0 {
		return tok.Truncate(s, n/4)
	}
	_, size := utf8.DecodeRuneInString(s[cut:]) // 。 is three bytes
	return s[:cut+size]
}

// structured fills Response.StructuredOutput per the request's schema:
// with an LLM, a JSON-mode call over the answer, re-asked once with the
// validation error; offline, the schema's fields are filled from the
// answer when they can be. A failure sets StructuredOutputError; the text
// answer stands either way.
func (s *session) structured(ctx context.Context, resp *Response) {
	schemaJSON, _ := json.Marshal(s.req.ResponseSchema)
	if s.r.deps.LLM == nil {
		v := fillSchema(s.req.ResponseSchema, resp)
		if err := validateSchema(s.req.ResponseSchema, v); err != nil {
			resp.StructuredOutputError = "the offline provider cannot fill this schema: " + err.Error()
			return
		}
		resp.StructuredOutput = v
		return
	}
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: "Return only a JSON value that conforms to this JSON schema:\n" + string(schemaJSON)},
		{Role: openai.ChatMessageRoleUser, Content: "Question: " + s.req.Query + "\n\nAnswer to restate in the schema:\n" + resp.Text},
	}
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		out, err := s.chat(llmtrace.WithScope(ctx, "reflect_structured"), openai.ChatCompletionRequest{Model: s.r.cfg.Model, Messages: msgs, MaxTokens: s.r.cfg.AnswerTokens,
			Temperature:    s.r.cfg.Temperature,
			ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}})
		if err != nil {
			lastErr = err
			break
		}
		if len(out.Choices) == 0 {
			lastErr = fmt.Errorf("no choices in the answer")
			break
		}
		content := out.Choices[0].Message.Content
		var v any
		if err := json.Unmarshal([]byte(stripFence(content)), &v); err != nil {
			lastErr = fmt.Errorf("not valid JSON: %v", err)
		} else if err := validateSchema(s.req.ResponseSchema, v); err != nil {
			lastErr = err
		} else {
			resp.StructuredOutput = v
			return
		}
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: content},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: "That does not conform to the schema: " + lastErr.Error() + ". Return corrected JSON only."})
	}
	resp.StructuredOutputError = "structured output does not conform to response_schema: " + lastErr.Error()
}

// stripFence removes a markdown code fence some models wrap JSON in.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s, "```json")
		s = strings.TrimPrefix(s, "```")
		s = strings.TrimSuffix(s, "```")
	}
	return strings.TrimSpace(s)
}

// fillSchema maps an extractive answer onto a schema: strings get the
// answer text, string arrays the cited ids, objects recurse. Numbers,
// booleans and enums cannot be extracted honestly and are left out, so a
// schema that requires them fails validation and says so.
func fillSchema(schema map[string]any, resp *Response) any {
	t, _ := schema["type"].(string)
	switch t {
	case "string":
		if _, isEnum := schema["enum"]; isEnum {
			return nil
		}
		return resp.Text
	case "array":
		items, _ := schema["items"].(map[string]any)
		if it, _ := items["type"].(string); it == "string" {
			ids := slices.Concat(resp.BasedOn.MentalModels, resp.BasedOn.Observations, resp.BasedOn.Memories)
			out := make([]any, len(ids))
			for i, id := range ids {
				out[i] = id
			}
			return out
		}
		return []any{}
	case "object":
		props, _ := schema["properties"].(map[string]any)
		out := map[string]any{}
		for k, p := range props {
			ps, _ := p.(map[string]any)
			if v := fillSchema(ps, resp); v != nil {
				out[k] = v
			}
		}
		return out
	}
	return nil
}
