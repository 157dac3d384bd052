package recallapi

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/llmtrace"
	"github.com/memstream/memstream/store"
)

// bankIDPattern is the rule bank ids (and aliases) follow.
var bankIDPattern = event.BankIDPattern

// APIVersion is the Hindsight API version memstream's routes follow.
const APIVersion = "1.1.0"

// aliasCache maps bank aliases to banks for a couple of seconds, so that
// resolving an alias costs no query on most requests. Writes through this
// replica invalidate it at once; other replicas see them within its TTL.
type aliasCache struct {
	mu     sync.Mutex
	m      map[string]string
	loaded time.Time
}

func (c *aliasCache) invalidate() {
	c.mu.Lock()
	c.loaded = time.Time{}
	c.mu.Unlock()
}

// resolveBank returns the bank an alias names, or id itself.
func (s *Server) resolveBank(ctx context.Context, id string) string {
	c := &s.aliases
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.loaded) > 2*time.Second {
		m, err := s.d.Store.AllBankAliases(ctx)
		if err != nil {
			return id // a bank id still works; only aliases wait for the database
		}
		c.m, c.loaded = m, time.Now()
	}
	if b, ok := c.m[id]; ok {
		return b
	}
	return id
}

func (s *Server) liveness(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{"status": "alive", "version": s.cfg.Version, "uptime_seconds": time.Since(s.started).Seconds()})
	return nil
}

// version is Hindsight's VersionResponse: the API version memstream
// follows and which feature families it serves. audit_log is the server
// default, which a bank's audit_log_enabled overrides (as in Hindsight).
func (s *Server) version(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{
		"api_version": APIVersion, "memstream_version": s.cfg.Version,
		"features": map[string]bool{"observations": true, "mcp": true, "worker": s.cfg.Worker, "bank_config_api": true, "bank_llm_health": true,
			"file_upload_api": true, "document_export_api": true, "document_import_api": true, "audit_log": !s.cfg.AuditLogOff, "llm_trace": s.cfg.LLMTrace,
			"store_document_text": true},
	})
	return nil
}

func (s *Server) regenerateRetired(w http.ResponseWriter, r *http.Request) error {
	if _, _, err := s.bankAndUUID(r, "entity_id"); err != nil {
		return err
	}
	return &apiError{Status: http.StatusGone, Code: "gone", Message: "Entity observations are no longer regenerated on request: they are consolidated " +
		"from memories automatically. Read them from GET /v1/default/banks/{bank_id}/entities/{entity_id}."}
}

func (s *Server) documentTransferRetired(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.bankID(r); err != nil {
		return err
	}
	return &apiError{Status: http.StatusGone, Code: "gone", Message: "The synchronous document export was removed in Hindsight 1.1.0: " +
		"submit POST /v1/default/banks/{bank_id}/document-transfer/export (or …/transfer/export), poll the operation, then download its download_url."}
}

// LLMChecker reports whether the configured LLM answers (nil: no LLM is
// configured and the offline providers are in use).
type LLMChecker func(ctx context.Context) error

func (s *Server) testBankLLM(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	// The probes are one run of the bank's LLM trace.
	tctx := llmtrace.Start(r.Context(), bank, "health_check")
	var ops []map[string]any
	for _, op := range []string{"retain", "consolidation", "reflect"} {
		entry := map[string]any{"operation": op, "ok": true, "status": "not_configured", "latency_ms": nil}
		if s.d.CheckLLM != nil {
			start := time.Now()
			ctx, cancel := context.WithTimeout(tctx, 10*time.Second)
			err := s.d.CheckLLM(ctx)
			cancel()
			entry["latency_ms"] = float64(time.Since(start).Microseconds()) / 1000
			switch {
			case err == nil:
				entry["status"] = "connected"
			case ctx.Err() != nil:
				entry["ok"], entry["status"] = false, "timeout"
			default:
				entry["ok"], entry["status"], entry["error"] = false, "unreachable", err.Error()
			}
		}
		ops = append(ops, entry)
	}
	writeJSON(w, http.StatusOK, map[string]any{"bank_id": bank, "operations": ops})
	return nil
}

type promptPreview struct {
	Operation string  `json:"operation"`
	Strategy  *string `json:"strategy"`
}

// previewPrompt shows the instructions an operation gives the LLM for this
// bank: for reflect, the agent's instructions with the bank's disposition,
// mission and directives; for retain and consolidation, memstream's
// extraction and consolidation rules.
func (s *Server) previewPrompt(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body promptPreview
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if body.Operation == "" {
		body.Operation = "retain"
	}
	b, err := s.d.Store.GetBank(r.Context(), bank)
	if err != nil && !isNotFound(err) {
		return err
	}
	block := func(text, source, field, heading string) map[string]any {
		return map[string]any{"text": text, "source": source, "field": field, "section": body.Operation, "heading": heading,
			"active": true, "kind": "text", "editable": source == "config", "value": nil, "choices": nil}
	}
	var blocks []map[string]any
	switch body.Operation {
	case "reflect":
		blocks = append(blocks, block("Answer questions about a person or agent from the memory bank, using the tools to look things up; "+
			"prefer newer evidence; never invent facts; cite the ids used.", "builtin", "", "Instructions"))
		if b.Mission != "" {
			blocks = append(blocks, block(b.Mission, "config", "reflect_mission", "Mission"))
		}
		dirs, err := s.d.Store.ActiveDirectives(r.Context(), bank)
		if err != nil {
			return err
		}
		for _, d := range dirs {
			blocks = append(blocks, block(d.Content, "config", "directives", d.Name))
		}
	case "retain":
		blocks = append(blocks, block("Extract typed facts (world or experience) with their entities, causal links and occurrence "+
			"and mention times from each chunk of the conversation.", "builtin", "", "Extraction"))
	case "consolidation":
		blocks = append(blocks, block("Fold new facts into evidence-backed observations: a new fact refines an observation and never "+
			"overwrites it; each observation keeps its evidence and trend.", "builtin", "", "Consolidation"))
	default:
		return badRequest("operation", "operation must be retain, consolidation or reflect")
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": []any{map[string]any{"role": "system", "blocks": blocks}},
		"strategy": nil, "strategies": []string{}, "run_settings": []any{}, "response_schema": nil, "skipped_reason": nil})
	return nil
}

func isNotFound(err error) bool {
	return err != nil && (err == store.ErrNotFound || errorsIs(err, store.ErrNotFound))
}

// triggerConsolidation asks the worker to consolidate the bank now and
// returns an operation that completes once every fact waiting at this
// moment is consolidated.
func (s *Server) triggerConsolidation(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	if r.ContentLength != 0 && r.Body != nil {
		var body struct {
			ObservationScopes [][]string `json:"observation_scopes"`
		}
		if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil && r.ContentLength > 0 {
			return err
		}
	}
	if err := s.d.Store.EnsureBank(r.Context(), bank); err != nil {
		return err
	}
	// A consolidation asked for is the bank's next run: facts a clear of
	// its observations held are consolidated too.
	if err := s.d.Store.ReleaseHeldConsolidation(r.Context(), bank); err != nil {
		return err
	}
	if err := s.d.Store.EnqueueConsolidation(r.Context(), bank); err != nil {
		return err
	}
	op, err := s.newOperation(r.Context(), store.Operation{BankID: bank, Kind: "consolidation"})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"operation_id": op.ID.String(), "deduplicated": false})
	return nil
}

// recoverConsolidation requeues the bank's consolidation. memstream's
// worker retries failed batches itself, so there is nothing marked failed
// to reset; the count is of facts still waiting.
func (s *Server) recoverConsolidation(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	left, err := s.d.Store.ConsolidationLeft(r.Context(), bank, time.Now())
	if err != nil {
		return err
	}
	if left > 0 {
		if err := s.d.Store.EnqueueConsolidation(r.Context(), bank); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"retried_count": left})
	return nil
}

type strategiesPreview struct {
	Strategies []struct {
		Scopes []struct {
			Tags      []string `json:"tags"`
			TagsMatch *string  `json:"tags_match"`
		} `json:"scopes"`
	} `json:"strategies"`
	SampleLimit *int `json:"sample_limit"`
}

// previewStrategies shows how tag-scope rules would split the bank's facts,
// first matching rule first.
func (s *Server) previewStrategies(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body strategiesPreview
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if body.Strategies == nil {
		return badRequest("strategies", "strategies is required")
	}
	limit := 5
	if body.SampleLimit != nil {
		limit = max(0, min(*body.SampleLimit, 100))
	}
	scopes, err := s.d.Store.FactScopes(r.Context(), bank)
	if err != nil {
		return err
	}
	handled := make([]int, len(scopes))
	for i := range handled {
		handled[i] = -1
	}
	var out []any
	for si, st := range body.Strategies {
		var rules []any
		claimed := 0
		for _, rule := range st.Scopes {
			mode := "all_strict"
			if rule.TagsMatch != nil && *rule.TagsMatch != "" {
				if !validTagsMatch[*rule.TagsMatch] {
					return badRequest("strategies.scopes.tags_match", "tags_match must be any, all, any_strict, all_strict or exact")
				}
				mode = *rule.TagsMatch
			}
			match, taken, samples := 0, 0, []any{}
			for i, sc := range scopes {
				if !tagsMatch(sc.Tags, rule.Tags, mode) {
					continue
				}
				match += sc.Count
				var by any
				if handled[i] < 0 {
					handled[i] = si
					taken += sc.Count
				} else {
					by = handled[i]
				}
				if len(samples) < limit {
					samples = append(samples, map[string]any{"tags": sc.Tags, "count": sc.Count, "handled_by": by})
				}
			}
			claimed += taken
			rules = append(rules, map[string]any{"match_count": match, "taken_count": taken, "observation_count": 0, "samples": samples})
		}
		out = append(out, map[string]any{"active": true, "claimed_count": claimed, "rules": rules})
	}
	rest, samples := 0, []any{}
	for i, sc := range scopes {
		if handled[i] < 0 {
			rest += sc.Count
			if len(samples) < limit {
				samples = append(samples, map[string]any{"tags": sc.Tags, "count": sc.Count, "handled_by": nil})
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"strategies": out, "default": map[string]any{"match_count": rest, "observation_count": 0,
		"samples": samples}, "scopes_scanned": len(scopes), "complete": true})
	return nil
}

// templateSchema is the JSON Schema of a bank template (Hindsight's
// BankTemplateManifest), as memstream reads it.
func (s *Server) templateSchema(w http.ResponseWriter, _ *http.Request) error {
	props := map[string]any{}
	for k, t := range configKeys {
		if t == "any" {
			props[k] = map[string]any{}
			continue
		}
		props[k] = map[string]any{"type": []string{t, "null"}}
	}
	strs := map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	schema := map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "BankTemplateManifest", "type": "object",
		"required": []string{"version"},
		"properties": map[string]any{
			"version": map[string]any{"type": "string"},
			"bank":    map[string]any{"type": []string{"object", "null"}, "properties": props},
			"mental_models": map[string]any{"type": []string{"array", "null"}, "items": map[string]any{"type": "object",
				"required": []string{"id", "name", "source_query"}, "properties": map[string]any{"id": map[string]any{"type": "string"},
					"name": map[string]any{"type": "string"}, "source_query": map[string]any{"type": "string"}, "tags": strs,
					"max_tokens": map[string]any{"type": "integer"}, "trigger": map[string]any{"type": "object"}}}},
			"directives": map[string]any{"type": []string{"array", "null"}, "items": map[string]any{"type": "object",
				"required": []string{"name", "content"}, "properties": map[string]any{"name": map[string]any{"type": "string"},
					"content": map[string]any{"type": "string"}, "priority": map[string]any{"type": "integer"},
					"is_active": map[string]any{"type": "boolean"}, "tags": strs}}},
		},
	}
	writeJSON(w, http.StatusOK, schema)
	return nil
}

// rawJSON marshals v, for results stored with operations.
func rawJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
