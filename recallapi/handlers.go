package recallapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/store"
)

type bankBody struct {
	Name          *string         `json:"name"`
	Mission       *string         `json:"mission"`
	Disposition   *disposition    `json:"disposition"`
	DefensePolicy json.RawMessage `json:"defense_policy"`
	Consolidation *string         `json:"consolidation"` // running | paused
}

type disposition struct {
	Skepticism int `json:"skepticism"`
	Literalism int `json:"literalism"`
	Empathy    int `json:"empathy"`
}

type bankView struct {
	BankID        string          `json:"bank_id"`
	Name          string          `json:"name"`
	Mission       string          `json:"mission"`
	Disposition   disposition     `json:"disposition"`
	DefensePolicy json.RawMessage `json:"defense_policy"`
	Consolidation string          `json:"consolidation"`
	CreatedAt     time.Time       `json:"created_at"`
	UpdatedAt     time.Time       `json:"updated_at"`
}

func viewBank(b store.Bank) bankView {
	return bankView{BankID: b.ID, Name: b.Name, Mission: b.Mission,
		Disposition:   disposition{b.Skepticism, b.Literalism, b.Empathy},
		DefensePolicy: b.DefensePolicy, Consolidation: b.ConsolidationState, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt}
}

func (s *Server) listBanks(w http.ResponseWriter, r *http.Request) error {
	banks, err := s.d.Store.ListBanks(r.Context())
	if err != nil {
		return err
	}
	out := make([]bankView, 0, len(banks))
	key := callerKey(r)
	for _, b := range banks {
		// A key limited to some banks sees only those: listing must not
		// reveal which other banks exist.
		if key != nil && !key.all && !key.banks[b.ID] {
			continue
		}
		out = append(out, viewBank(b))
	}
	writeJSON(w, http.StatusOK, map[string]any{"banks": out})
	return nil
}

func (s *Server) getBank(w http.ResponseWriter, r *http.Request) error {
	id, err := s.bankID(r)
	if err != nil {
		return err
	}
	b, err := s.d.Store.GetBank(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewBank(b))
	return nil
}

func (s *Server) putBank(w http.ResponseWriter, r *http.Request) error {
	return s.writeBank(w, r, true)
}
func (s *Server) patchBank(w http.ResponseWriter, r *http.Request) error {
	return s.writeBank(w, r, false)
}

// writeBank handles PUT (create or replace; unset fields take defaults) and
// PATCH (change only the fields given; the bank must exist).
func (s *Server) writeBank(w http.ResponseWriter, r *http.Request, replace bool) error {
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
	case err == nil && !replace:
		b = existing
	case err == nil:
		b.CreatedAt = existing.CreatedAt
	case errors.Is(err, store.ErrNotFound) && !replace:
		return notFound("bank " + id + " does not exist")
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	if body.Name != nil {
		b.Name = *body.Name
	}
	if body.Mission != nil {
		b.Mission = *body.Mission
	}
	if d := body.Disposition; d != nil {
		// In a fixed order, so that the field named is the same every time.
		for _, t := range []struct {
			field string
			v     int
		}{{"disposition.skepticism", d.Skepticism}, {"disposition.literalism", d.Literalism}, {"disposition.empathy", d.Empathy}} {
			if t.v < 1 || t.v > 5 {
				return badRequest(t.field, t.field+" must be an integer from 1 to 5")
			}
		}
		b.Skepticism, b.Literalism, b.Empathy = d.Skepticism, d.Literalism, d.Empathy
	}
	if len(body.DefensePolicy) > 0 {
		var p defense.Policy
		if err := json.Unmarshal(body.DefensePolicy, &p); err != nil {
			return badRequest("defense_policy", "defense_policy: "+err.Error())
		}
		if err := p.Validate(); err != nil {
			return badRequest("defense_policy", "defense_policy: "+err.Error())
		}
		b.DefensePolicy = body.DefensePolicy
	}
	if c := body.Consolidation; c != nil {
		if *c != "running" && *c != "paused" {
			return badRequest("consolidation", "consolidation must be running or paused")
		}
		b.ConsolidationState = *c
	}
	out, err := s.d.Store.PutBank(r.Context(), b)
	if err != nil {
		return err
	}
	if s.d.OnPolicyChange != nil {
		s.d.OnPolicyChange(id)
	}
	writeJSON(w, http.StatusOK, viewBank(out))
	return nil
}

func (s *Server) deleteBank(w http.ResponseWriter, r *http.Request) error {
	id, err := s.bankID(r)
	if err != nil {
		return err
	}
	if err := s.d.Store.DeleteBank(r.Context(), id); err != nil {
		return err
	}
	// The bank's mental models went with it; no replica may serve them.
	s.models.invalidateBank(id, "local")
	if err := s.d.Store.NotifyBankMentalModels(r.Context(), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "bank_id": id})
	return nil
}

type retainItem struct {
	Content    string            `json:"content"`
	Timestamp  string            `json:"timestamp"`
	Context    string            `json:"context"`
	Metadata   map[string]string `json:"metadata"`
	DocumentID string            `json:"document_id"`
	Tags       []string          `json:"tags"`
}

type retainBody struct {
	Items []retainItem `json:"items"`
	Async bool         `json:"async"`
}

// retain validates the items, applies the bank's defense policy (a block
// answers 422 naming the label, never the value), produces them to Kafka
// and, unless async, waits until they are persisted.
func (s *Server) retain(w http.ResponseWriter, r *http.Request) error {
	id, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body retainBody
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if len(body.Items) == 0 {
		return badRequest("items", "items must contain at least one item")
	}
	// Fail closed: if the bank's policy cannot be read, a block it holds
	// could not be enforced, so nothing is produced.
	raw, err := s.d.Store.BankPolicy(r.Context(), id)
	if err != nil {
		return fmt.Errorf("retain bank %s: read defense policy: %w", id, err)
	}
	policy, err := defense.MergePolicy(s.cfg.BasePolicy, raw)
	if err != nil {
		return fmt.Errorf("retain bank %s: stored defense policy: %w", id, err)
	}
	opID := newID()
	events := make([]event.Event, len(body.Items))
	keys := make([]string, len(body.Items))
	for i, it := range body.Items {
		field := fmt.Sprintf("items[%d]", i)
		if strings.TrimSpace(it.Content) == "" {
			return badRequest(field+".content", field+".content must not be empty")
		}
		if err := validateTags(field+".tags", it.Tags); err != nil {
			return err
		}
		if len(it.DocumentID) > 512 {
			return badRequest(field+".document_id", field+".document_id must be at most 512 bytes")
		}
		if it.Timestamp != "" {
			if _, err := time.Parse(time.RFC3339Nano, it.Timestamp); err != nil {
				return badRequest(field+".timestamp", field+".timestamp must be RFC 3339")
			}
		}
		// The pipeline gates context, tags and metadata as well as the
		// content, so a block there must fail here too, not after a 200.
		checks := [][2]string{{field + ".content", it.Content}, {field + ".context", it.Context}}
		for j, tag := range it.Tags {
			checks = append(checks, [2]string{fmt.Sprintf("%s.tags[%d]", field, j), tag})
		}
		for _, k := range slices.Sorted(maps.Keys(it.Metadata)) {
			checks = append(checks, [2]string{field + ".metadata." + k, it.Metadata[k]})
		}
		for _, c := range checks {
			if c[1] == "" {
				continue
			}
			if _, _, err := s.d.Gate.Check(opID, c[1], policy); err != nil {
				var be *defense.BlockedError
				if errors.As(err, &be) {
					return &apiError{Status: http.StatusUnprocessableEntity, Code: "blocked_by_policy", Message: err.Error(), Field: c[0]}
				}
				return err
			}
		}
		keys[i] = fmt.Sprintf("retain/%s/%d", opID, i)
		events[i] = event.Event{BankID: id, EventID: keys[i], DocumentID: it.DocumentID, Content: it.Content,
			Timestamp: it.Timestamp, Context: it.Context, Tags: it.Tags, Metadata: it.Metadata}
		if events[i].Timestamp == "" {
			events[i].Timestamp = time.Now().UTC().Format(time.RFC3339Nano)
		}
		// A transcript ("Name (role): text" lines) is a conversation, not
		// one long user message.
		if ms, ok := event.ParseTranscript(it.Content); ok {
			events[i].Messages, events[i].Content = ms, ""
		}
	}
	if err := s.d.Publisher.Publish(r.Context(), events); err != nil {
		return &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "could not publish to Kafka: " + err.Error()}
	}
	if !body.Async {
		if err := s.waitPersisted(r.Context(), id, keys); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "bank_id": id, "items_count": len(body.Items),
		"async": body.Async, "operation_id": opID})
	return nil
}

// waitPersisted polls the store, so it works whichever replica ingests.
func (s *Server) waitPersisted(ctx context.Context, bank string, keys []string) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RetainWait)
	defer cancel()
	delay := 20 * time.Millisecond
	for {
		n, err := s.d.Store.EventsPersisted(ctx, bank, keys)
		if err == nil && n == len(keys) {
			return nil
		}
		select {
		case <-ctx.Done():
			return &apiError{Status: http.StatusServiceUnavailable, Code: "timeout",
				Message: fmt.Sprintf("items were accepted by Kafka but not persisted within http.retain_wait (%s); they will still be ingested", s.cfg.RetainWait)}
		case <-time.After(delay):
		}
		delay = min(delay*2, 250*time.Millisecond)
	}
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

type recallBody struct {
	Query          string   `json:"query"`
	Types          []string `json:"types"`
	Budget         string   `json:"budget"`
	MaxTokens      *int     `json:"max_tokens"`
	Trace          bool     `json:"trace"`
	QueryTimestamp string   `json:"query_timestamp"`
	Tags           []string `json:"tags"`
	TagsMatch      string   `json:"tags_match"`
	Fusion         string   `json:"fusion"`
	Arms           []string `json:"arms"`
	Include        any      `json:"include"`
	// Rerank false skips the configured cross-encoder (default true).
	Rerank *bool `json:"rerank"`
	// Diversity in [0, 1) turns on MMR diversification.
	Diversity float64 `json:"diversity"`
	// HeuristicsOff switches off named ranking heuristics
	// (recall.Heuristics), for ablations.
	HeuristicsOff []string `json:"heuristics_off"`
}

func (s *Server) recall(w http.ResponseWriter, r *http.Request) error {
	id, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body recallBody
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	req, err := recallRequest(id, body)
	if err != nil {
		return err
	}
	resp, err := s.d.Recaller.Recall(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

var validTypes = map[string]bool{"world": true, "experience": true, "observation": true}
var validTagsMatch = map[string]bool{"any": true, "all": true, "any_strict": true, "all_strict": true, "exact": true}
var validArms = map[string]bool{"semantic": true, "keyword": true, "graph": true, "temporal": true}

func recallRequest(bank string, b recallBody) (recall.Request, error) {
	req := recall.Request{BankID: bank, Query: strings.TrimSpace(b.Query), Types: b.Types, Budget: b.Budget,
		MaxTokens: 4096, Tags: b.Tags, TagsMatch: b.TagsMatch, Fusion: b.Fusion, Arms: b.Arms, Trace: b.Trace,
		SkipRerank: b.Rerank != nil && !*b.Rerank, Diversity: b.Diversity, Off: b.HeuristicsOff}
	// Without query_timestamp the query time stays zero: recall answers as
	// of the bank's event clock (its latest event), not the wall clock.
	if b.Diversity < 0 || b.Diversity >= 1 {
		return req, badRequest("diversity", "diversity must be in [0, 1)")
	}
	if req.Query == "" {
		return req, badRequest("query", "query is required")
	}
	if len(req.Query) > 8000 {
		return req, badRequest("query", "query is longer than 8000 bytes")
	}
	for _, t := range b.Types {
		if !validTypes[t] {
			return req, badRequest("types", fmt.Sprintf("types: unknown type %q (world, experience, observation)", t))
		}
	}
	if err := budgetAndTokens(b.Budget, b.MaxTokens, b.Tags, &req.Budget, &req.MaxTokens); err != nil {
		return req, err
	}
	if b.TagsMatch == "" {
		req.TagsMatch = "any"
	} else if !validTagsMatch[b.TagsMatch] {
		return req, badRequest("tags_match", "tags_match must be any, all, any_strict, all_strict or exact")
	}
	switch b.Fusion {
	case "":
		req.Fusion = "rrf"
	case "rrf", "interleave":
	default:
		return req, badRequest("fusion", "fusion must be rrf or interleave")
	}
	for _, a := range b.Arms {
		if !validArms[a] {
			return req, badRequest("arms", fmt.Sprintf("arms: unknown arm %q (semantic, keyword, graph, temporal)", a))
		}
	}
	for _, h := range b.HeuristicsOff {
		if !slices.Contains(recall.Heuristics, h) {
			return req, badRequest("heuristics_off", fmt.Sprintf("heuristics_off: unknown heuristic %q (%s)", h, strings.Join(recall.Heuristics, ", ")))
		}
	}
	if b.QueryTimestamp != "" {
		t, err := time.Parse(time.RFC3339Nano, b.QueryTimestamp)
		if err != nil {
			return req, badRequest("query_timestamp", "query_timestamp must be RFC 3339")
		}
		req.QueryTime = t.UTC()
	}
	return req, nil
}

// budgetAndTokens validates the budget, max_tokens and tags fields shared by
// recall and reflect, filling budget (default mid) and maxTokens when given.
func budgetAndTokens(budgetIn string, maxIn *int, tags []string, budget *string, maxTokens *int) error {
	switch budgetIn {
	case "":
		*budget = "mid"
	case "low", "mid", "high":
	default:
		return badRequest("budget", "budget must be low, mid or high")
	}
	if maxIn != nil {
		if *maxIn <= 0 || *maxIn > 1_000_000 {
			return badRequest("max_tokens", "max_tokens must be between 1 and 1000000")
		}
		*maxTokens = *maxIn
	}
	return validateTags("tags", tags)
}
