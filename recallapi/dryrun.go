package recallapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/memstream/memstream/chunk"
	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/extract"
	"github.com/memstream/memstream/llmtrace"
)

// DryRunExtractor extracts facts from chunks (the pipeline's extractor).
type DryRunExtractor interface {
	Extract(ctx context.Context, in []extract.Input) ([][]extract.Fact, error)
}

type dryRunBody struct {
	Content   contentValue `json:"content"`
	Context   string       `json:"context"`
	Timestamp string       `json:"timestamp"`
	AgentName *string      `json:"agent_name"`
}

// dryRunExtract runs the bank's defense policy and the extractor over
// content and shows the facts, storing nothing. Hindsight's per-request
// extraction knobs (mode, mission, labels) are accepted and ignored.
func (s *Server) dryRunExtract(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body dryRunBody
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if body.Content.Blocked != "" {
		return badRequest("content", "content"+body.Content.Blocked+": only text content blocks are supported")
	}
	text := strings.TrimSpace(body.Content.Text)
	if text == "" {
		return badRequest("content", "content must not be empty")
	}
	if s.d.Extractor == nil {
		return &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "no extractor is configured on this server"}
	}
	at := time.Now().UTC()
	if t, err := isoField("timestamp", body.Timestamp); err != nil {
		return err
	} else if t != nil {
		at = *t
	}
	raw, err := s.d.Store.BankPolicy(r.Context(), bank)
	if err != nil {
		return err
	}
	policy, err := defense.MergePolicy(s.cfg.BasePolicy, raw)
	if err != nil {
		return err
	}
	res, _, err := s.d.Gate.Check("dry-run", text, policy)
	if err != nil {
		var be *defense.BlockedError
		if errors.As(err, &be) {
			return &apiError{Status: http.StatusUnprocessableEntity, Code: "blocked_by_policy", Message: err.Error(), Field: "content"}
		}
		return err
	}
	parts := chunk.SplitText(res.Text, 3000)
	in := make([]extract.Input, len(parts))
	name := ""
	if body.AgentName != nil {
		name = *body.AgentName
	}
	for i, p := range parts {
		in[i] = extract.Input{Parts: []chunk.Part{{Role: "user", Name: name, Timestamp: at, Text: p}}, Context: body.Context, BankID: bank}
	}
	// Its LLM calls are a run of their own in the bank's trace.
	facts, err := s.d.Extractor.Extract(llmtrace.Start(r.Context(), bank, "dry_run_extract"), in)
	if err != nil {
		return err
	}
	outFacts, outChunks := []any{}, []any{}
	for i, fs := range facts {
		outChunks = append(outChunks, map[string]any{"text": parts[i], "fact_count": len(fs)})
		for _, f := range fs {
			names := make([]string, len(f.Entities))
			for j, e := range f.Entities {
				names[j] = e.Name
			}
			outFacts = append(outFacts, map[string]any{"text": f.Text, "fact_type": f.FactType, "occurred_start": f.OccurredStart,
				"occurred_end": f.OccurredEnd, "entities": names, "chunk_index": i, "attachments": []any{}})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"facts": outFacts, "chunks": outChunks, "usage": tokenUsage{}})
	return nil
}
