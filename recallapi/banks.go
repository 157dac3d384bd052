package recallapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/store"
)

// bankBody is Hindsight's CreateBankRequest plus memstream's defense
// policy and consolidation pause. Hindsight's deprecated mission is the
// reflect mission; its retain_* and enable_* settings are bank
// configuration (…/config).
type bankBody struct {
	Name                  *string          `json:"name"`
	Mission               *string          `json:"mission"`
	ReflectMission        *string          `json:"reflect_mission"`
	Background            *string          `json:"background"`
	Disposition           *dispositionBody `json:"disposition"`
	DispositionSkepticism *int             `json:"disposition_skepticism"`
	DispositionLiteralism *int             `json:"disposition_literalism"`
	DispositionEmpathy    *int             `json:"disposition_empathy"`
	DefensePolicy         json.RawMessage  `json:"defense_policy"`
	Consolidation         *string          `json:"consolidation"` // running | paused
	// The rest of CreateBankRequest: stored as configuration overrides.
	RetainMission              *string `json:"retain_mission"`
	RetainExtractionMode       *string `json:"retain_extraction_mode"`
	RetainCustomInstructions   *string `json:"retain_custom_instructions"`
	RetainChunkSize            *int    `json:"retain_chunk_size"`
	RetainStructuredChunkSize  *int    `json:"retain_structured_chunk_size"`
	RetainMaxAttachmentsPerChk *int    `json:"retain_max_attachments_per_chunk"`
	EnableObservations         *bool   `json:"enable_observations"`
	ObservationsMission        *string `json:"observations_mission"`
	EnableTextSearch           *bool   `json:"enable_text_search"`
	EnableTemporalRetrieval    *bool   `json:"enable_temporal_retrieval"`
	EnableGraphRetrieval       *bool   `json:"enable_graph_retrieval"`
	EnableReranking            *bool   `json:"enable_reranking"`
}

type disposition struct {
	Skepticism int `json:"skepticism"`
	Literalism int `json:"literalism"`
	Empathy    int `json:"empathy"`
}

// bankView is Hindsight's BankProfileResponse with memstream's fields.
type bankView struct {
	BankID        string          `json:"bank_id"`
	Name          string          `json:"name"`
	Mission       string          `json:"mission"`
	Background    *string         `json:"background"`
	Disposition   disposition     `json:"disposition"`
	DefensePolicy json.RawMessage `json:"defense_policy"`
	Consolidation string          `json:"consolidation"`
	CreatedAt     time.Time       `json:"created_at"`
	UpdatedAt     time.Time       `json:"updated_at"`
}

func viewBank(b store.Bank, cfg map[string]any) bankView {
	v := bankView{BankID: b.ID, Name: b.Name, Mission: b.Mission,
		Disposition:   disposition{b.Skepticism, b.Literalism, b.Empathy},
		DefensePolicy: b.DefensePolicy, Consolidation: b.ConsolidationState, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt}
	if bg, ok := cfg["background"].(string); ok {
		v.Background = &bg
	}
	return v
}

// bankListItem is Hindsight's BankListItem.
type bankListItem struct {
	BankID         string      `json:"bank_id"`
	Name           string      `json:"name"`
	Disposition    disposition `json:"disposition"`
	Mission        string      `json:"mission"`
	CreatedAt      time.Time   `json:"created_at"`
	UpdatedAt      time.Time   `json:"updated_at"`
	FactCount      int         `json:"fact_count"`
	LastDocumentAt *time.Time  `json:"last_document_at"`
	LastWriteAt    *time.Time  `json:"last_write_at"`
	DisplayAlias   *string     `json:"display_alias"`
	MatchedAliases []string    `json:"matched_aliases"`
	Consolidation  string      `json:"consolidation"`
}

func (s *Server) listBanks(w http.ResponseWriter, r *http.Request) error {
	q, err := textParam(r, "q")
	if err != nil {
		return err
	}
	limit, err := intParam(r, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	offset, err := intParam(r, "offset", 0, 0, 1<<30)
	if err != nil {
		return err
	}
	// A key limited to some banks sees only those: listing must not reveal
	// which other banks exist.
	var ids []string
	all := true
	if key := callerKey(r); key != nil && !key.all {
		all = false
		for b := range key.banks {
			ids = append(ids, b)
		}
	}
	banks, total, err := s.d.Store.ListBankSummaries(r.Context(), ids, all, q, limit, offset)
	if err != nil {
		return err
	}
	out := make([]bankListItem, len(banks))
	for i, b := range banks {
		out[i] = bankListItem{BankID: b.ID, Name: b.Name, Disposition: disposition{b.Skepticism, b.Literalism, b.Empathy}, Mission: b.Mission,
			CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt, FactCount: b.FactCount, LastDocumentAt: b.LastDocumentAt, LastWriteAt: b.LastWriteAt,
			MatchedAliases: []string{}, Consolidation: b.ConsolidationState}
		if len(b.Aliases) > 0 {
			out[i].DisplayAlias = &b.Aliases[0]
		}
		if q != "" {
			for _, a := range b.Aliases {
				if strings.Contains(strings.ToLower(a), strings.ToLower(q)) {
					out[i].MatchedAliases = append(out[i].MatchedAliases, a)
				}
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"banks": out, "total": total, "limit": limit, "offset": offset})
	return nil
}

func (s *Server) getBank(w http.ResponseWriter, r *http.Request) error {
	b, cfg, err := s.bankAndConfig(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewBank(b, cfg))
	return nil
}

// bankAndConfig reads the request's bank and its configuration overrides.
func (s *Server) bankAndConfig(r *http.Request) (store.Bank, map[string]any, error) {
	id, err := s.bankID(r)
	if err != nil {
		return store.Bank{}, nil, err
	}
	b, err := s.d.Store.GetBank(r.Context(), id)
	if err != nil {
		return store.Bank{}, nil, err
	}
	ov, err := s.d.Store.BankConfig(r.Context(), id)
	if err != nil {
		return store.Bank{}, nil, err
	}
	return b, ov, nil
}

func (s *Server) putBank(w http.ResponseWriter, r *http.Request) error {
	return s.writeBank(w, r, true)
}
func (s *Server) patchBank(w http.ResponseWriter, r *http.Request) error {
	return s.writeBank(w, r, false)
}

// writeBank handles PUT (create or update; like Hindsight's
// create_or_update_bank, fields left out keep their values) and PATCH
// (change only the fields given; the bank must exist).
func (s *Server) writeBank(w http.ResponseWriter, r *http.Request, put bool) error {
	id, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body bankBody
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	b := store.Bank{ID: id, Name: id, Skepticism: 3, Literalism: 3, Empathy: 3, DefensePolicy: json.RawMessage(`{}`), ConsolidationState: "running"}
	existing, err := s.d.Store.GetBank(r.Context(), id)
	switch {
	case err == nil:
		b = existing
	case errors.Is(err, store.ErrNotFound) && !put:
		return notFound("bank " + id + " does not exist")
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	if body.Name != nil {
		b.Name = *body.Name
	}
	for _, m := range []*string{body.Mission, body.ReflectMission} {
		if m != nil {
			b.Mission = *m
		}
	}
	d := body.Disposition
	if d == nil {
		d = &dispositionBody{}
	}
	for _, t := range []struct {
		field    string
		v, alias *int
		dst      *int
	}{
		{"disposition.skepticism", d.Skepticism, body.DispositionSkepticism, &b.Skepticism},
		{"disposition.literalism", d.Literalism, body.DispositionLiteralism, &b.Literalism},
		{"disposition.empathy", d.Empathy, body.DispositionEmpathy, &b.Empathy},
	} {
		v := t.v
		field := t.field
		if t.alias != nil {
			v, field = t.alias, strings.ReplaceAll(field, ".", "_")
		}
		if v == nil {
			continue
		}
		if *v < 1 || *v > 5 {
			return badRequest(field, field+" must be an integer from 1 to 5")
		}
		*t.dst = *v
	}
	if len(body.DefensePolicy) > 0 && string(body.DefensePolicy) != "null" {
		if err := checkDefensePolicy(body.DefensePolicy); err != nil {
			return err
		}
		b.DefensePolicy = body.DefensePolicy
	}
	if c := body.Consolidation; c != nil {
		if *c != "running" && *c != "paused" {
			return badRequest("consolidation", "consolidation must be running or paused")
		}
		b.ConsolidationState = *c
	}
	if body.EnableObservations != nil {
		b.ConsolidationState = map[bool]string{true: "running", false: "paused"}[*body.EnableObservations]
	}
	overrides := bankBodyOverrides(body)
	for k, v := range overrides {
		if err := checkConfigValue(k, v); err != nil {
			return err
		}
	}
	out, err := s.d.Store.PutBank(r.Context(), b)
	if err != nil {
		return err
	}
	cfg, err := s.setBankConfig(r.Context(), id, overrides)
	if err != nil {
		return err
	}
	if s.d.OnPolicyChange != nil {
		s.d.OnPolicyChange(id)
	}
	writeJSON(w, http.StatusOK, viewBank(out, cfg))
	return nil
}

// checkDefensePolicy refuses a defense policy with keys the defense
// package does not know, naming the key: an unknown key ignored would look
// applied while doing nothing.
func checkDefensePolicy(raw json.RawMessage) error {
	var p defense.Policy
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			name = strings.Trim(name, `"`)
			return badRequest("defense_policy."+name, fmt.Sprintf("defense_policy.%s: unknown key %q; an unknown key would look applied while doing nothing (see docs/OPERATIONS.md for the policy keys)", name, name))
		}
		return badRequest("defense_policy", "defense_policy: "+err.Error())
	}
	if err := p.Validate(); err != nil {
		return badRequest("defense_policy", "defense_policy: "+err.Error())
	}
	return nil
}

// bankBodyOverrides are the CreateBankRequest fields that are bank
// configuration.
func bankBodyOverrides(b bankBody) map[string]any {
	out := map[string]any{}
	add := func(k string, v any, set bool) {
		if set {
			out[k] = v
		}
	}
	add("background", deref(b.Background), b.Background != nil)
	add("retain_mission", deref(b.RetainMission), b.RetainMission != nil)
	add("retain_extraction_mode", deref(b.RetainExtractionMode), b.RetainExtractionMode != nil)
	add("retain_custom_instructions", deref(b.RetainCustomInstructions), b.RetainCustomInstructions != nil)
	add("observations_mission", deref(b.ObservationsMission), b.ObservationsMission != nil)
	for k, v := range map[string]*int{"retain_chunk_size": b.RetainChunkSize, "retain_structured_chunk_size": b.RetainStructuredChunkSize,
		"retain_max_attachments_per_chunk": b.RetainMaxAttachmentsPerChk} {
		if v != nil {
			out[k] = *v
		}
	}
	for k, v := range map[string]*bool{"enable_observations": b.EnableObservations, "enable_text_search": b.EnableTextSearch,
		"enable_temporal_retrieval": b.EnableTemporalRetrieval, "enable_graph_retrieval": b.EnableGraphRetrieval, "enable_reranking": b.EnableReranking} {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

func (s *Server) deleteBank(w http.ResponseWriter, r *http.Request) error {
	id, err := s.bankID(r)
	if err != nil {
		return err
	}
	if err := s.d.Store.DeleteBank(r.Context(), id); err != nil {
		return err
	}
	s.audits.invalidate(id)
	// The bank's mental models went with it; no replica may serve them.
	s.models.invalidateBank(id, "local")
	if err := s.d.Store.NotifyBankMentalModels(r.Context(), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": "bank " + id + " deleted", "bank_id": id})
	return nil
}

// setBankConfig stores configuration overrides and drops what this
// replica caches of the bank's configuration.
func (s *Server) setBankConfig(ctx context.Context, id string, overrides map[string]any) (map[string]any, error) {
	ov, err := s.d.Store.SetBankConfig(ctx, id, overrides)
	s.audits.invalidate(id)
	return ov, err
}

// configKeys are the bank configuration keys Hindsight 1.1.0 accepts per
// bank (BankTemplateConfig), with their JSON types. memstream acts on the
// ones in configApplied; the others are stored and reported back.
var configKeys = map[string]string{
	"reflect_mission": "string", "retain_mission": "string", "retain_extraction_mode": "string", "retain_custom_instructions": "string",
	"retain_chunk_size": "integer", "retain_structured_chunk_size": "integer", "enable_observations": "boolean",
	"observations_mission": "string", "enable_text_search": "boolean", "enable_temporal_retrieval": "boolean",
	"enable_graph_retrieval": "boolean", "enable_reranking": "boolean", "reflect_use_decision_model": "boolean",
	"mental_model_refresh_use_decision_model": "boolean", "mental_model_delta_use_decision_model": "boolean",
	"disposition_skepticism": "integer", "disposition_literalism": "integer", "disposition_empathy": "integer",
	"entity_labels": "array", "entities_allow_free_form": "boolean", "retain_default_strategy": "string", "retain_strategies": "object",
	"retain_chunk_batch_size": "integer", "retain_max_attachments_per_chunk": "integer", "mcp_enabled_tools": "array",
	"consolidation_llm_batch_size": "integer", "consolidation_source_facts_max_tokens": "integer",
	"consolidation_source_facts_max_tokens_per_observation": "integer", "max_observations_per_scope": "integer",
	"observation_scope_limits": "array", "default_observation_scopes": "any", "consolidation_strategies": "array",
	"reflect_source_facts_max_tokens": "integer", "knowledge_page_default_trigger": "object", "reflect_default_options": "object",
	"mental_model_min_refresh_interval_seconds": "integer", "llm_gemini_safety_settings": "array", "recall_budget_function": "string",
	"recall_budget_fixed_low": "integer", "recall_budget_fixed_mid": "integer", "recall_budget_fixed_high": "integer",
	"recall_budget_adaptive_low": "number", "recall_budget_adaptive_mid": "number", "recall_budget_adaptive_high": "number",
	"recall_budget_min": "integer", "recall_budget_max": "integer", "audit_log_enabled": "boolean", "store_document_text": "boolean",
	"enable_auto_consolidation": "boolean", "consolidation_use_decision_model": "boolean", "consolidation_max_memories_per_round": "integer",
	"consolidation_llm_parallelism": "integer", "recall_include_chunks": "boolean", "recall_prefer_observations": "boolean",
	"recall_max_tokens": "integer", "recall_chunks_max_tokens": "integer", "memory_defense": "object", "background": "string",
}

// configApplied are the keys memstream acts on, and where: the rest are
// accepted, stored and reported, and documented as not applied.
var configApplied = map[string]string{
	"reflect_mission":        "the bank's mission (reflect)",
	"disposition_skepticism": "the bank's disposition (reflect)",
	"disposition_literalism": "the bank's disposition (reflect)",
	"disposition_empathy":    "the bank's disposition (reflect)",
	"enable_observations":    "consolidation running (true) or paused (false)",
	"background":             "the bank profile's background",
	auditConfigKey:           "the bank's API audit log (…/audit-logs): false records no writes; unset, http.audit_log_enabled decides",
}

func checkConfigValue(key string, v any) error {
	field := "updates." + key
	want, ok := configKeys[key]
	if !ok {
		return badRequest(field, fmt.Sprintf("%s: %q is not a bank configuration key of Hindsight 1.1.0 (see docs/COMPATIBILITY.md)", field, key))
	}
	if v == nil {
		return nil
	}
	okType := false
	switch want {
	case "string":
		_, okType = v.(string)
	case "boolean":
		_, okType = v.(bool)
	case "integer":
		f, isNum := v.(float64)
		okType = isNum && f == float64(int64(f))
		if i, isInt := v.(int); isInt {
			okType, f = true, float64(i)
		}
		if okType && strings.HasPrefix(key, "disposition_") && (f < 1 || f > 5) {
			return badRequest(field, field+" must be an integer from 1 to 5")
		}
	case "number":
		_, okType = v.(float64)
	case "array":
		_, okType = v.([]any)
	case "object":
		_, okType = v.(map[string]any)
	default:
		okType = true
	}
	if !okType {
		return badRequest(field, fmt.Sprintf("%s must be of type %s", field, want))
	}
	return nil
}

// bankConfigView is Hindsight's BankConfigResponse: config is every key
// with its effective value (memstream's own where it has one), overrides
// the keys the bank sets.
func (s *Server) bankConfigView(b store.Bank, overrides map[string]any) map[string]any {
	cfg := map[string]any{}
	for k := range configKeys {
		cfg[k] = nil
	}
	for k, v := range overrides {
		cfg[k] = v
	}
	cfg["reflect_mission"] = b.Mission
	cfg["disposition_skepticism"] = b.Skepticism
	cfg["disposition_literalism"] = b.Literalism
	cfg["disposition_empathy"] = b.Empathy
	cfg["enable_observations"] = b.ConsolidationState == "running"
	cfg[auditConfigKey] = s.audits.effective(overrides)
	return map[string]any{"bank_id": b.ID, "config": cfg, "overrides": overrides}
}

func (s *Server) getBankConfig(w http.ResponseWriter, r *http.Request) error {
	b, ov, err := s.bankAndConfig(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.bankConfigView(b, ov))
	return nil
}

type bankConfigUpdate struct {
	Updates map[string]any `json:"updates"`
}

func (s *Server) patchBankConfig(w http.ResponseWriter, r *http.Request) error {
	id, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body bankConfigUpdate
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if body.Updates == nil {
		return badRequest("updates", "updates is required: an object of configuration keys")
	}
	updates := map[string]any{}
	keys := make([]string, 0, len(body.Updates))
	for k := range body.Updates {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		// Hindsight also takes the environment-variable form of a key.
		name := strings.ToLower(strings.TrimPrefix(k, "HINDSIGHT_API_"))
		if err := checkConfigValue(name, body.Updates[k]); err != nil {
			return err
		}
		updates[name] = body.Updates[k]
	}
	if err := s.d.Store.EnsureBank(r.Context(), id); err != nil {
		return err
	}
	b, err := s.d.Store.GetBank(r.Context(), id)
	if err != nil {
		return err
	}
	if v, ok := updates["reflect_mission"].(string); ok {
		b.Mission = v
	}
	for k, dst := range map[string]*int{"disposition_skepticism": &b.Skepticism, "disposition_literalism": &b.Literalism, "disposition_empathy": &b.Empathy} {
		if v, ok := updates[k].(float64); ok {
			*dst = int(v)
		}
	}
	if v, ok := updates["enable_observations"].(bool); ok {
		b.ConsolidationState = map[bool]string{true: "running", false: "paused"}[v]
	}
	if b, err = s.d.Store.PutBank(r.Context(), b); err != nil {
		return err
	}
	ov, err := s.setBankConfig(r.Context(), id, updates)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.bankConfigView(b, ov))
	return nil
}

func (s *Server) resetBankConfig(w http.ResponseWriter, r *http.Request) error {
	id, err := s.bankID(r)
	if err != nil {
		return err
	}
	b, err := s.d.Store.GetBank(r.Context(), id)
	if err != nil {
		return err
	}
	// The keys memstream keeps in the bank row return to their defaults.
	b.Mission, b.Skepticism, b.Literalism, b.Empathy, b.ConsolidationState = "", 3, 3, 3, "running"
	if b, err = s.d.Store.PutBank(r.Context(), b); err != nil {
		return err
	}
	if err := s.d.Store.ResetBankConfig(r.Context(), id); err != nil {
		return err
	}
	s.audits.invalidate(id)
	writeJSON(w, http.StatusOK, s.bankConfigView(b, map[string]any{}))
	return nil
}

// profileRetired answers the bank profile routes Hindsight 1.1.0 retired
// with Hindsight's own 410.
func (s *Server) profileRetired(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.bankID(r); err != nil {
		return err
	}
	return &apiError{Status: http.StatusGone, Code: "gone", Message: "The bank profile endpoints have been removed. Disposition traits and the reflect mission are bank " +
		"configuration: read them from GET /v1/default/banks/{bank_id}/config as `disposition_skepticism`, `disposition_literalism`, " +
		"`disposition_empathy` and `reflect_mission`, and write them with PATCH /v1/default/banks/{bank_id}/config."}
}

func validAlias(a string) bool {
	return a != "" && len(a) <= 128 && !strings.ContainsAny(a, "/\x00") && cleanText(a)
}

type aliasCreate struct {
	Alias   string `json:"alias"`
	Primary bool   `json:"primary"`
}

func (s *Server) aliasesView(w http.ResponseWriter, r *http.Request, bank string, status int) error {
	as, err := s.d.Store.ListBankAliases(r.Context(), bank)
	if err != nil {
		return err
	}
	s.aliases.invalidate()
	writeJSON(w, status, map[string]any{"bank_id": bank, "aliases": as})
	return nil
}

func (s *Server) listBankAliases(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	return s.aliasesView(w, r, bank, http.StatusOK)
}

func (s *Server) createBankAlias(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body aliasCreate
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if !validAlias(body.Alias) || !bankIDPattern.MatchString(body.Alias) {
		return badRequest("alias", "alias must match "+bankIDPattern.String())
	}
	if err := s.d.Store.EnsureBank(r.Context(), bank); err != nil {
		return err
	}
	if err := s.d.Store.AddBankAlias(r.Context(), bank, body.Alias, body.Primary); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return &apiError{Status: http.StatusConflict, Code: "conflict", Field: "alias", Message: "alias " + body.Alias + " is already a bank id or another bank's alias"}
		}
		return err
	}
	return s.aliasesView(w, r, bank, http.StatusCreated)
}

func (s *Server) setBankAliasPrimary(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body struct {
		Primary *bool `json:"primary"`
	}
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if body.Primary == nil {
		return badRequest("primary", "primary is required")
	}
	if err := s.d.Store.SetBankAliasPrimary(r.Context(), bank, r.PathValue("alias"), *body.Primary); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return notFound(fmt.Sprintf("Bank '%s' has no alias '%s'", bank, r.PathValue("alias")))
		}
		return err
	}
	return s.aliasesView(w, r, bank, http.StatusOK)
}

func (s *Server) deleteBankAlias(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	if err := s.d.Store.DeleteBankAlias(r.Context(), bank, r.PathValue("alias")); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return notFound(fmt.Sprintf("Bank '%s' has no alias '%s'", bank, r.PathValue("alias")))
		}
		return err
	}
	return s.aliasesView(w, r, bank, http.StatusOK)
}

// stats is Hindsight's BankStatsResponse with memstream's counters (SPEC
// §5) beside it.
func (s *Server) stats(w http.ResponseWriter, r *http.Request) error {
	id, err := s.bankID(r)
	if err != nil {
		return err
	}
	st, err := s.d.Store.BankStats(r.Context(), id)
	if err != nil {
		return err
	}
	hs, err := s.d.Store.BankHindsightStats(r.Context(), id)
	if err != nil {
		return err
	}
	if _, err := s.d.Store.GetBank(r.Context(), id); err != nil && st.EventsIngested == 0 && st.Facts == 0 {
		return err
	}
	ops := hs.OperationsByStatus
	out := map[string]any{
		"bank_id": id, "total_nodes": st.Facts + st.Observations, "total_links": st.Links, "total_documents": st.Documents,
		"nodes_by_fact_type": hs.NodesByFactType, "links_by_link_type": hs.LinksByLinkType, "links_by_fact_type": hs.LinksByFactType,
		"links_breakdown": hs.LinksBreakdown, "pending_operations": ops["pending"] + ops["processing"], "failed_operations": ops["failed"],
		"operations_by_status": ops, "last_consolidated_at": hs.LastConsolidatedAt, "last_memory_write_at": hs.LastMemoryWriteAt,
		"pending_consolidation": st.PendingConsolidation, "failed_consolidation": hs.FailedConsolidation, "total_observations": st.Observations,
		// memstream's own (SPEC §5)
		"facts": st.Facts, "observations": st.Observations, "documents": st.Documents, "chunks": st.Chunks, "entities": st.Entities,
		"links": st.Links, "mental_models": st.MentalModels, "events_ingested": st.EventsIngested, "events_dead_lettered": st.EventsDeadLettered,
		"invalidated_memories": hs.InvalidatedMemories,
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// period is a timeseries window and the bucket its points are truncated to.
type period struct {
	window time.Duration
	trunc  string
}

// periods maps Hindsight's timeseries periods to a window and a bucket.
var periods = map[string]period{
	"1d": {24 * time.Hour, "hour"}, "7d": {7 * 24 * time.Hour, "day"}, "30d": {30 * 24 * time.Hour, "day"},
	"90d": {90 * 24 * time.Hour, "week"}, "1y": {365 * 24 * time.Hour, "month"}, "all": {100 * 365 * 24 * time.Hour, "month"},
}

// periodParam reads Hindsight's period query parameter (default 7d) and
// returns its name with its window and bucket.
func periodParam(r *http.Request) (string, period, error) {
	v := r.URL.Query().Get("period")
	if v == "" {
		v = "7d"
	}
	p, ok := periods[v]
	if !ok {
		return "", period{}, badRequest("period", "period must be one of 1d, 7d, 30d, 90d, 1y, all")
	}
	return v, p, nil
}

func (s *Server) memoriesTimeseries(w http.ResponseWriter, r *http.Request) error {
	id, err := s.bankID(r)
	if err != nil {
		return err
	}
	name, p, err := periodParam(r)
	if err != nil {
		return err
	}
	field := r.URL.Query().Get("time_field")
	if field == "" {
		field = "created_at"
	}
	if !slices.Contains([]string{"created_at", "mentioned_at", "occurred_start", "updated_at"}, field) {
		return badRequest("time_field", "time_field must be created_at, mentioned_at, occurred_start or updated_at")
	}
	buckets, err := s.d.Store.MemoriesTimeseries(r.Context(), id, field, p.trunc, time.Now().Add(-p.window))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"bank_id": id, "period": name, "trunc": p.trunc, "time_field": field, "buckets": buckets})
	return nil
}
