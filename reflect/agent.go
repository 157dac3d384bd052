package reflect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/memstream/memstream/llmtrace"
	"github.com/memstream/memstream/tokens"
)

// Stop reasons for Trace.StopReason.
const (
	stopDone          = "done"
	stopAnswer        = "answer"
	stopMaxIterations = "max_iterations"
	stopBudget        = "budget"
	stopTimeout       = "timeout"
	stopOverflow      = "context_overflow"
	stopLLMError      = "llm_error"
	stopOffline       = "offline"
)

const agentInstructions = `You answer questions about a person or agent from a long-term memory bank.
Use the tools to look things up before answering. Mental models are curated answers to standing questions, observations are consolidated from many memories and carry a trend, memories are raw facts with dates.
When sources conflict, prefer the newer evidence and observations that are not STALE; say what changed when it matters.
Never invent facts that no tool returned. When memory holds no answer, say so.
Finish by calling done with the answer and the ids of the memories, observations and mental models it is based on. Cite ids in the answer as [id].
`

// systemPrompt is the agent's instructions with the disposition compiled
// in.
func (s *session) systemPrompt() string {
	p := agentInstructions + "\n" + dispositionPrompt(s.disp) + "\nToday is " + s.now.UTC().Format(time.DateOnly) + ".\n"
	if len(s.req.Directives) > 0 {
		p += "\nDirectives of this memory bank. Follow every one of them in your answer; they override the rules above:\n"
		for _, d := range s.req.Directives {
			p += "- " + d + "\n"
		}
	}
	return p
}

// userPrompt is the question, with the caller's context when given.
func (s *session) userPrompt() string {
	if strings.TrimSpace(s.req.Context) == "" {
		return s.req.Query
	}
	return s.req.Query + "\n\nContext: " + s.req.Context
}

// agent runs the tool-calling loop and returns the response (without
// usage and trace, which reflect fills) and the outcome for the metrics.
func (s *session) agent(ctx context.Context) (Response, string, error) {
	cfg := s.r.cfg
	deadline := time.Now().Add(cfg.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	// The loop stops early enough to leave the final answer its share of
	// the time.
	loopCtx, cancel := context.WithDeadline(ctx, deadline.Add(-cfg.SynthesisTimeout))
	defer cancel()

	tools := toolDefs()
	toolsJSON, _ := json.Marshal(tools)
	toolTokens := s.r.tok.Count(string(toolsJSON))
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: s.systemPrompt()},
		{Role: openai.ChatMessageRoleUser, Content: s.userPrompt()},
	}
	summarised := false
	stop := stopMaxIterations

loop:
	for iter := 0; iter < cfg.MaxIterations; iter++ {
		used := toolTokens + messagesTokens(s.r.tok, msgs)
		if used+cfg.AnswerTokens+cfg.MinToolResultTokens > cfg.ContextTokens {
			stop = stopBudget
			break
		}
		creq := openai.ChatCompletionRequest{Model: cfg.Model, Messages: msgs, Tools: tools, ToolChoice: "auto",
			MaxTokens: cfg.AnswerTokens, Temperature: cfg.Temperature}
		if iter < len(steered) {
			creq.ToolChoice = openai.ToolChoice{Type: openai.ToolTypeFunction, Function: openai.ToolFunction{Name: steered[iter]}}
		}
		out, err := s.chat(loopCtx, creq)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return Response{}, "", fmt.Errorf("reflect bank %s: %w", s.req.BankID, ctx.Err())
		case loopCtx.Err() != nil:
			stop = stopTimeout
			break loop
		case isContextOverflow(err) && !summarised:
			// Replace the conversation by a digest of what it found, once;
			// a second overflow means even the digest does not fit.
			summarised = true
			s.r.log.Warn("reflect context overflow; summarising", slog.String("bank_id", s.req.BankID), slog.String("error", err.Error()))
			msgs = []openai.ChatCompletionMessage{msgs[0], msgs[1], {Role: openai.ChatMessageRoleUser,
				Content: "The conversation grew too long for your context and was summarised. Evidence found so far:\n" +
					s.digest((cfg.ContextTokens-toolTokens-cfg.AnswerTokens)/2) + "\nContinue, or call done."}}
			s.trace.Iterations++
			continue
		case isContextOverflow(err):
			stop = stopOverflow
			break loop
		default:
			s.r.log.Warn("reflect llm call failed", slog.String("bank_id", s.req.BankID), slog.String("error", err.Error()))
			stop = stopLLMError
			break loop
		}
		s.trace.Iterations++
		if len(out.Choices) == 0 {
			stop = stopLLMError
			break
		}
		msg := out.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			if strings.TrimSpace(msg.Content) != "" && iter >= len(steered) {
				s.trace.StopReason = stopAnswer
				return Response{Text: msg.Content, BasedOn: s.basedOn(msg.Content)}, outcomeDone, nil
			}
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: msg.Content},
				openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: "Call a tool to search memory, or call done with your answer."})
			continue
		}
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: msg.Content, ToolCalls: msg.ToolCalls})

		// What is left of the budget is shared by this turn's results.
		left := cfg.ContextTokens - toolTokens - messagesTokens(s.r.tok, msgs) - cfg.AnswerTokens
		ceiling := min(cfg.MaxToolResultTokens, left/len(msg.ToolCalls)-toolMessageOverhead)
		for _, tc := range msg.ToolCalls {
			name := tc.Function.Name
			args, perr := parseArgs(name, tc.Function.Arguments)
			if perr == nil && name == ToolDone {
				s.recordTool(name, tc.Function.Arguments, 0, 0)
				s.trace.StopReason = stopDone
				return Response{Text: args.Answer, BasedOn: s.basedOn(args.Answer, args.MemoryIDs, args.ObservationIDs, args.MentalModelIDs)}, outcomeDone, nil
			}
			var content string
			t0 := time.Now()
			switch {
			case perr != nil:
				content = toolError(perr)
			case ceiling < cfg.MinToolResultTokens:
				content = toolError(errors.New("context budget exhausted: no room for more results; call done now"))
				stop = stopBudget
			default:
				res, found, err := s.runTool(loopCtx, name, args, ceiling)
				s.absorb(found)
				if err != nil {
					if ctx.Err() != nil {
						return Response{}, "", fmt.Errorf("reflect bank %s: %w", s.req.BankID, ctx.Err())
					}
					res = toolError(err)
				}
				content = res
			}
			s.recordTool(name, tc.Function.Arguments, len(content), time.Since(t0))
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, Content: content, ToolCallID: tc.ID})
		}
		if stop == stopBudget {
			break
		}
		if loopCtx.Err() != nil {
			stop = stopTimeout
			break
		}
	}
	s.trace.Forced = true
	s.trace.StopReason = stop
	resp, err := s.synthesise(ctx, deadline)
	return resp, outcomeForced, err
}

// toolMessageOverhead is what a tool message costs beyond its content
// (role, call id, name) in the estimate.
const toolMessageOverhead = 16

func toolError(err error) string {
	b, _ := json.Marshal(map[string]string{"error": err.Error()})
	return string(b)
}

func (s *session) recordTool(name, rawArgs string, size int, d time.Duration) {
	var input any
	if json.Unmarshal([]byte(rawArgs), &input) != nil {
		input = rawArgs // the malformed text itself, for debugging
	}
	label := name
	switch name {
	case ToolMentalModels, ToolObservations, ToolRecall, ToolExpand, ToolDone:
	default:
		label = "unknown"
	}
	s.r.m.toolCalls.WithLabelValues(label).Inc()
	s.trace.ToolCalls = append(s.trace.ToolCalls, ToolCall{Tool: name, Input: input, OutputSize: size, DurationMS: d.Milliseconds()})
}

// chat makes one model call and records it in the trace and usage.
func (s *session) chat(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	t0 := time.Now()
	out, err := s.r.deps.LLM.CreateChatCompletion(ctx, req)
	if err != nil {
		return out, err
	}
	s.trace.LLMCalls = append(s.trace.LLMCalls, LLMCall{Tokens: out.Usage.TotalTokens, DurationMS: time.Since(t0).Milliseconds()})
	s.usage.InputTokens += out.Usage.PromptTokens
	s.usage.OutputTokens += out.Usage.CompletionTokens
	s.usage.TotalTokens += out.Usage.TotalTokens
	return out, nil
}

// synthesise is the forced final answer: one tool-less call over a digest
// of everything gathered. If that call fails too, the answer is composed
// extractively, so running out never becomes an error for the user.
func (s *session) synthesise(ctx context.Context, deadline time.Time) (Response, error) {
	cfg := s.r.cfg
	sys := s.systemPrompt()
	room := cfg.ContextTokens - s.r.tok.Count(sys) - s.r.tok.Count(s.req.Query) - cfg.AnswerTokens - 64
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: sys},
		{Role: openai.ChatMessageRoleUser, Content: s.userPrompt()},
		{Role: openai.ChatMessageRoleUser, Content: "No more searching is possible. Everything found in memory:\n" + s.digest(max(room, 0)) +
			"\nAnswer the question now from this evidence only, citing the ids you use as [id]."},
	}
	sctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	out, err := s.chat(llmtrace.WithScope(sctx, "reflect_final"), openai.ChatCompletionRequest{Model: cfg.Model, Messages: msgs, MaxTokens: cfg.AnswerTokens, Temperature: cfg.Temperature})
	if err == nil && len(out.Choices) > 0 && strings.TrimSpace(out.Choices[0].Message.Content) != "" {
		text := out.Choices[0].Message.Content
		return Response{Text: text, BasedOn: s.basedOn(text)}, nil
	}
	if ctx.Err() != nil {
		return Response{}, fmt.Errorf("reflect bank %s: %w", s.req.BankID, ctx.Err())
	}
	if err != nil {
		s.r.log.Warn("reflect synthesis failed; answering extractively", slog.String("bank_id", s.req.BankID), slog.String("error", err.Error()))
	}
	resp := s.extractive()
	return resp, nil
}

// isContextOverflow recognises the OpenAI-compatible "prompt too long"
// error (OpenAI's code context_length_exceeded; vLLM and others say
// "maximum context length").
func isContextOverflow(err error) bool {
	status := 0
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		status = apiErr.HTTPStatusCode
		if c, ok := apiErr.Code.(string); ok && c == "context_length_exceeded" {
			return true
		}
	case errors.As(err, &reqErr):
		status = reqErr.HTTPStatusCode
		if strings.Contains(string(reqErr.Body), "context_length_exceeded") || strings.Contains(string(reqErr.Body), "maximum context length") {
			return true
		}
	}
	msg := strings.ToLower(err.Error())
	return (status == 400 || status == 0) && (strings.Contains(msg, "context_length_exceeded") || strings.Contains(msg, "maximum context length"))
}

// messagesTokens is what msgs cost, with a few tokens a message and a tool
// call for the chat format's framing.
func messagesTokens(tok *tokens.Counter, msgs []openai.ChatCompletionMessage) int {
	n := 0
	for _, m := range msgs {
		n += tok.Count(m.Content) + 4
		for _, tc := range m.ToolCalls {
			n += tok.Count(tc.Function.Name) + tok.Count(tc.Function.Arguments) + 8
		}
	}
	return n
}
