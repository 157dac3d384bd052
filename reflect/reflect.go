package reflect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/memstream/memstream/llmtrace"
	"github.com/memstream/memstream/store"
)

// Reflect answers req.Query from the bank's memory. It fails only on an
// invalid request (*RequestError), when ctx ends, or when the store cannot
// be read; running out of iterations, tokens or time still yields an
// answer (Trace.Forced).
func (r *Reflector) Reflect(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	mode := "offline"
	if r.deps.LLM != nil {
		mode = "llm"
	}
	// Every model call of this answer is one run in the bank's LLM trace.
	ctx = llmtrace.Start(ctx, req.BankID, "reflect")
	resp, outcome, err := r.reflect(ctx, req, start)
	if err != nil {
		outcome = outcomeError
	}
	r.m.seconds.WithLabelValues(mode, outcome).Observe(time.Since(start).Seconds())
	if err != nil {
		return Response{}, err
	}
	r.m.iterations.Observe(float64(resp.Trace.Iterations))
	r.log.Debug("reflect", slog.String("bank_id", req.BankID), slog.String("mode", mode), slog.String("outcome", outcome),
		slog.Int("iterations", resp.Trace.Iterations), slog.Int("tool_calls", len(resp.Trace.ToolCalls)),
		slog.Duration("duration", time.Since(start)))
	return resp, nil
}

func (r *Reflector) reflect(ctx context.Context, req Request, start time.Time) (Response, string, error) {
	if req.BankID == "" {
		return Response{}, "", &RequestError{Field: "bank_id", Message: "required"}
	}
	if strings.TrimSpace(req.Query) == "" {
		return Response{}, "", &RequestError{Field: "query", Message: "required"}
	}
	if req.MaxTokens < 0 {
		return Response{}, "", &RequestError{Field: "max_tokens", Message: "must be positive"}
	}
	switch req.Budget {
	case "", "low", "mid", "high":
	default:
		return Response{}, "", &RequestError{Field: "budget", Message: fmt.Sprintf("%q is not low, mid or high", req.Budget)}
	}
	if req.ResponseSchema != nil {
		if err := checkSchema(req.ResponseSchema); err != nil {
			return Response{}, "", err
		}
	}
	disp, err := r.disposition(ctx, req)
	if err != nil {
		return Response{}, "", err
	}
	now := start
	if req.QueryTimestamp != nil && !req.QueryTimestamp.IsZero() {
		now = *req.QueryTimestamp
	}
	s := &session{r: r, req: req, disp: disp, now: now, sources: map[string]*source{},
		trace: Trace{ToolCalls: []ToolCall{}, LLMCalls: []LLMCall{}}}

	var resp Response
	var outcome string
	if r.deps.LLM == nil {
		resp, err = s.offline(ctx)
		outcome = outcomeOffline
	} else {
		resp, outcome, err = s.agent(ctx)
	}
	if err != nil {
		return Response{}, "", err
	}
	if req.ResponseSchema != nil {
		s.structured(ctx, &resp)
	}
	resp.Usage = s.usage
	resp.Trace = s.trace
	r.m.llmTokens.Add(float64(s.usage.TotalTokens))
	return resp, outcome, nil
}

// disposition is the request's override, else the bank's traits, else the
// neutral default (a bank that has no profile yet).
func (r *Reflector) disposition(ctx context.Context, req Request) (Disposition, error) {
	if req.Disposition != nil {
		d := *req.Disposition
		// A partial override keeps the bank's value for the traits left out.
		if d.Skepticism == 0 || d.Literalism == 0 || d.Empathy == 0 {
			bank, err := r.bankDisposition(ctx, req.BankID)
			if err != nil {
				return d, err
			}
			d.Skepticism = cmpOr(d.Skepticism, bank.Skepticism)
			d.Literalism = cmpOr(d.Literalism, bank.Literalism)
			d.Empathy = cmpOr(d.Empathy, bank.Empathy)
		}
		return d, d.validate()
	}
	return r.bankDisposition(ctx, req.BankID)
}

func (r *Reflector) bankDisposition(ctx context.Context, bankID string) (Disposition, error) {
	b, err := r.deps.Store.GetBank(ctx, bankID)
	if errors.Is(err, store.ErrNotFound) {
		return DefaultDisposition, nil
	}
	if err != nil {
		return Disposition{}, fmt.Errorf("reflect bank %s: %w", bankID, err)
	}
	d := Disposition{Skepticism: b.Skepticism, Literalism: b.Literalism, Empathy: b.Empathy}
	if d.validate() != nil { // the table's CHECK makes this unreachable; stay safe anyway
		return DefaultDisposition, nil
	}
	return d, nil
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// idPattern finds ids cited in an answer's text.
var idPattern = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)

// basedOn lists the ids the answer rests on: those named in lists (the done
// tool's arguments) or cited in the text, kept only if a tool actually
// returned them (a model can invent ids) and filed under their true kind
// (a model can file an observation under memory_ids).
func (s *session) basedOn(text string, lists ...[]string) BasedOn {
	out := BasedOn{Memories: []string{}, Observations: []string{}, MentalModels: []string{}}
	add := func(id string) {
		src, ok := s.sources[strings.ToLower(strings.Trim(id, "[] "))]
		if !ok {
			return
		}
		var dst *[]string
		switch src.Kind {
		case kindMemory:
			dst = &out.Memories
		case kindObservation:
			dst = &out.Observations
		default:
			dst = &out.MentalModels
		}
		if !slices.Contains(*dst, src.ID) {
			*dst = append(*dst, src.ID)
		}
	}
	for _, l := range lists {
		for _, id := range l {
			add(id)
		}
	}
	for _, id := range idPattern.FindAllString(text, -1) {
		add(id)
	}
	return out
}

// digest lists everything gathered, within tokens: mental models, then
// observations, then memories, each with its id, date and trend, for the
// forced synthesis and the overflow summary.
func (s *session) digest(tokens int) string {
	var b strings.Builder
	used := 0
	for _, kind := range []string{kindMentalModel, kindObservation, kindMemory} {
		for _, id := range s.order {
			src := s.sources[id]
			if src.Kind != kind {
				continue
			}
			line := fmt.Sprintf("[%s] (%s", src.ID, strings.ReplaceAll(src.Kind, "_", " "))
			if !src.When.IsZero() {
				line += ", " + src.When.UTC().Format(time.DateOnly)
			}
			if src.Trend != "" {
				line += ", trend " + src.Trend
			}
			if src.stale(s.now) {
				line += ", stale"
			}
			line += ") " + strings.Join(strings.Fields(src.Text), " ") + "\n"
			n := s.r.tok.Count(line)
			if used+n > tokens {
				if rest := tokens - used; rest > 32 {
					b.WriteString(s.r.tok.Truncate(line, rest))
				}
				return b.String()
			}
			b.WriteString(line)
			used += n
		}
	}
	if b.Len() == 0 {
		return "(nothing was found in memory)\n"
	}
	return b.String()
}
