package recallapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/store"
)

// RecallRequest is Hindsight's recall body plus memstream's own knobs
// (fusion, arms, rerank, diversity).
type RecallRequest struct {
	Query              string         `json:"query"`
	Types              []string       `json:"types"`
	PreferObservations *bool          `json:"prefer_observations"`
	Budget             string         `json:"budget"`
	MaxTokens          *int           `json:"max_tokens"`
	Trace              bool           `json:"trace"`
	QueryTimestamp     string         `json:"query_timestamp"`
	Include            *includeOpts   `json:"include"`
	Tags               tagList        `json:"tags"`
	TagsMatch          string         `json:"tags_match"`
	TagGroups          []tagGroup     `json:"tag_groups"`
	MinScores          *minScores     `json:"min_scores"`
	TemporalWindow     *timeWindowArg `json:"temporal_window"`

	Fusion string   `json:"fusion"`
	Arms   []string `json:"arms"`
	// Rerank false skips the configured cross-encoder (default true).
	Rerank *bool `json:"rerank"`
	// Diversity in [0, 1) turns on MMR diversification.
	Diversity float64 `json:"diversity"`
	// HeuristicsOff switches off named ranking heuristics
	// (recall.Heuristics), for ablations.
	HeuristicsOff []string `json:"heuristics_off"`
}

// includeOpts is Hindsight's IncludeOptions. A key that is absent takes
// Hindsight's default (entities on, chunks and source facts off); a key
// sent as null turns the part off.
type includeOpts struct {
	Entities    optional[tokenOpts] `json:"entities"`
	Chunks      optional[tokenOpts] `json:"chunks"`
	SourceFacts optional[tokenOpts] `json:"source_facts"`
}

type tokenOpts struct {
	MaxTokens *int `json:"max_tokens"`
}

type minScores struct {
	Semantic *float64 `json:"semantic"`
	Keyword  *float64 `json:"keyword"`
	Reranker *float64 `json:"reranker"`
	Final    *float64 `json:"final"`
}

type timeWindowArg struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// recallPlan is a validated recall request: what to ask package recall,
// and what to do with its answer.
type recallPlan struct {
	req            recall.Request
	entities       bool
	entityTokens   int
	chunks         bool
	chunkTokens    int
	sourceFacts    bool
	sourceTokens   int
	groups         []tagGroup // evaluated here, when not expressible as Tags
	min            *minScores
	preferObs      bool
	requestedTypes []string
}

func recallPlanFor(bank string, b RecallRequest) (recallPlan, error) {
	req := recall.Request{BankID: bank, Query: strings.TrimSpace(b.Query), Types: b.Types, Budget: b.Budget,
		MaxTokens: 4096, Tags: b.Tags, TagsMatch: b.TagsMatch, Fusion: b.Fusion, Arms: b.Arms, Trace: b.Trace,
		SkipRerank: b.Rerank != nil && !*b.Rerank, Diversity: b.Diversity, Off: b.HeuristicsOff}
	// Without query_timestamp the query time stays zero: recall answers as
	// of the bank's event clock (its latest event), not the wall clock.
	p := recallPlan{req: req, entities: true, entityTokens: 500, chunkTokens: 8192, sourceTokens: 4096, min: b.MinScores,
		requestedTypes: b.Types}
	if b.Diversity < 0 || b.Diversity >= 1 {
		return p, badRequest("diversity", "diversity must be in [0, 1)")
	}
	if req.Query == "" {
		return p, badRequest("query", "query is required")
	}
	if len(req.Query) > 8000 {
		return p, badRequest("query", "query is longer than 8000 bytes")
	}
	for _, t := range b.Types {
		if !validTypes[t] {
			return p, badRequest("types", fmt.Sprintf("types: unknown type %q (world, experience, observation)", t))
		}
	}
	if err := budgetAndTokens(b.Budget, b.MaxTokens, b.Tags, &p.req.Budget, &p.req.MaxTokens); err != nil {
		return p, err
	}
	if b.TagsMatch == "" {
		p.req.TagsMatch = "any"
	} else if !validTagsMatch[b.TagsMatch] {
		return p, badRequest("tags_match", "tags_match must be any, all, any_strict, all_strict or exact")
	}
	switch b.Fusion {
	case "":
		p.req.Fusion = "rrf"
	case "rrf", "interleave":
	default:
		return p, badRequest("fusion", "fusion must be rrf or interleave")
	}
	for _, a := range b.Arms {
		if !validArms[a] {
			return p, badRequest("arms", fmt.Sprintf("arms: unknown arm %q (semantic, keyword, graph, temporal)", a))
		}
	}
	for _, h := range b.HeuristicsOff {
		if !slices.Contains(recall.Heuristics, h) {
			return p, badRequest("heuristics_off", fmt.Sprintf("heuristics_off: unknown heuristic %q (%s)", h, strings.Join(recall.Heuristics, ", ")))
		}
	}
	if b.QueryTimestamp != "" {
		t, ok := parseISO(b.QueryTimestamp)
		if !ok {
			return p, badRequest("query_timestamp", "query_timestamp must be an ISO 8601 datetime")
		}
		p.req.QueryTime = t
	}
	if b.TemporalWindow != nil {
		if _, err := isoField("temporal_window.start", b.TemporalWindow.Start); err != nil || b.TemporalWindow.Start == "" {
			return p, badRequest("temporal_window.start", "temporal_window.start must be an ISO 8601 datetime")
		}
		if _, err := isoField("temporal_window.end", b.TemporalWindow.End); err != nil || b.TemporalWindow.End == "" {
			return p, badRequest("temporal_window.end", "temporal_window.end must be an ISO 8601 datetime")
		}
	}
	if len(b.TagGroups) > 0 {
		if len(b.Tags) > 0 {
			return p, badRequest("tag_groups", "tags and tag_groups are mutually exclusive; use tag_groups for compound filtering")
		}
		for i := range b.TagGroups {
			if err := b.TagGroups[i].validate(fmt.Sprintf("tag_groups[%d]", i)); err != nil {
				return p, err
			}
		}
		// One plain leaf is what recall's own tag filter does, in SQL;
		// anything else is evaluated on the results.
		if g := b.TagGroups[0]; len(b.TagGroups) == 1 && g.Tags != nil {
			p.req.Tags, p.req.TagsMatch = g.Tags, g.Match
			if p.req.TagsMatch == "" {
				p.req.TagsMatch = "any_strict"
			}
		} else {
			p.groups = b.TagGroups
		}
	}
	if inc := b.Include; inc != nil {
		p.entities, p.entityTokens = inc.Entities.on(true), tokensOf(inc.Entities, 500)
		p.chunks, p.chunkTokens = inc.Chunks.on(false), tokensOf(inc.Chunks, 8192)
		p.sourceFacts, p.sourceTokens = inc.SourceFacts.on(false), tokensOf(inc.SourceFacts, 4096)
	}
	p.preferObs = b.PreferObservations != nil && *b.PreferObservations
	return p, nil
}

func (s *Server) recall(w http.ResponseWriter, r *http.Request) error {
	id, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body RecallRequest
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	out, err := s.Recall(r.Context(), id, body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// RecallResult is one recalled fact in Hindsight's shape, with memstream's
// own fields beside it.
type RecallResult struct {
	ID            string            `json:"id"`
	Text          string            `json:"text"`
	Type          string            `json:"type"`
	Entities      []string          `json:"entities"`
	Context       string            `json:"context"`
	OccurredStart *time.Time        `json:"occurred_start"`
	OccurredEnd   *time.Time        `json:"occurred_end"`
	MentionedAt   time.Time         `json:"mentioned_at"`
	DocumentID    string            `json:"document_id"`
	Metadata      map[string]string `json:"metadata"`
	ChunkID       *string           `json:"chunk_id,omitempty"`
	Tags          []string          `json:"tags"`
	SourceFactIDs []string          `json:"source_fact_ids,omitempty"`
	Scores        recallScores      `json:"scores"`
	SourceEventID string            `json:"source_event_id"`
	ProofCount    int               `json:"proof_count"`
	Trend         string            `json:"trend,omitempty"`
	Tokens        int               `json:"tokens"`
}

// recallScores extends Hindsight's RecallScores with memstream's graph and
// temporal arms.
type recallScores struct {
	Final    float64  `json:"final"`
	Reranker *float64 `json:"reranker"`
	Semantic float64  `json:"semantic"`
	Keyword  float64  `json:"keyword"`
	Graph    float64  `json:"graph"`
	Temporal float64  `json:"temporal"`
}

type entityState struct {
	EntityID      string                    `json:"entity_id"`
	CanonicalName string                    `json:"canonical_name"`
	Observations  []store.EntityObservation `json:"observations"`
}

type chunkData struct {
	ID         string `json:"id"`
	Text       string `json:"text"`
	ChunkIndex int    `json:"chunk_index"`
	Truncated  bool   `json:"truncated"`
}

// RecallResponse is Hindsight's RecallResponse. EntityRefs is memstream's
// list of the entities the results mention (with kind and counts).
type RecallResponse struct {
	Results              []RecallResult          `json:"results"`
	Trace                *recall.Trace           `json:"trace,omitempty"`
	Entities             map[string]entityState  `json:"entities,omitempty"`
	Chunks               map[string]chunkData    `json:"chunks,omitempty"`
	SourceFacts          map[string]RecallResult `json:"source_facts,omitempty"`
	SourceFactsTruncated *bool                   `json:"source_facts_truncated,omitempty"`
	EntityRefs           []recall.EntityRef      `json:"entity_refs,omitempty"`
}

// Recall answers a recall request in Hindsight's shape. It is the recall
// route without its HTTP framing.
func (s *Server) Recall(ctx context.Context, bank string, body RecallRequest) (RecallResponse, error) {
	p, err := recallPlanFor(bank, body)
	if err != nil {
		return RecallResponse{}, err
	}
	resp, err := s.d.Recaller.Recall(ctx, p.req)
	if err != nil {
		return RecallResponse{}, err
	}
	results := resp.Results
	if p.groups != nil {
		results = slices.DeleteFunc(results, func(x recall.Result) bool {
			for i := range p.groups {
				if !p.groups[i].matches(x.Tags) {
					return true
				}
			}
			return false
		})
	}
	if m := p.min; m != nil {
		results = slices.DeleteFunc(results, func(x recall.Result) bool {
			sc := x.Scores
			return (m.Final != nil && sc.Final < *m.Final) || (m.Semantic != nil && sc.Semantic < *m.Semantic) ||
				(m.Keyword != nil && sc.Keyword < *m.Keyword) || (m.Reranker != nil && (sc.Rerank == nil || *sc.Rerank < *m.Reranker))
		})
	}
	out := RecallResponse{Results: make([]RecallResult, 0, len(results)), Trace: resp.Trace, EntityRefs: resp.Entities}
	var obsIDs, ids []uuid.UUID
	for _, x := range results {
		ids = append(ids, x.ID)
		if x.Type == "observation" {
			obsIDs = append(obsIDs, x.ID)
		}
	}
	var sources map[uuid.UUID][]uuid.UUID
	if len(obsIDs) > 0 && (p.sourceFacts || p.preferObs) {
		if sources, err = s.d.Store.ObservationSources(ctx, bank, obsIDs); err != nil {
			return out, err
		}
	}
	if p.preferObs && len(sources) > 0 {
		covered := map[uuid.UUID]bool{}
		for _, src := range sources {
			for _, id := range src {
				covered[id] = true
			}
		}
		results = slices.DeleteFunc(results, func(x recall.Result) bool { return x.Type != "observation" && covered[x.ID] })
	}
	var chunks map[uuid.UUID]store.MemoryChunk
	if p.chunks && len(ids) > 0 {
		if chunks, err = s.d.Store.MemoryChunks(ctx, bank, ids); err != nil {
			return out, err
		}
		out.Chunks = map[string]chunkData{}
	}
	budget := p.chunkTokens
	for _, x := range results {
		v := recallResultView(x)
		if c, ok := chunks[x.ID]; ok {
			cid := c.ChunkID.String()
			v.ChunkID = &cid
			if _, seen := out.Chunks[cid]; !seen && budget > 0 {
				text, truncated := cutTokens(c.Text, budget)
				budget -= approxTokens(text)
				out.Chunks[cid] = chunkData{ID: cid, Text: text, ChunkIndex: c.Index, Truncated: truncated}
			}
		}
		for _, src := range sources[x.ID] {
			v.SourceFactIDs = append(v.SourceFactIDs, src.String())
		}
		out.Results = append(out.Results, v)
	}
	if p.sourceFacts && len(sources) > 0 {
		if err := s.addSourceFacts(ctx, bank, &out, sources, p.sourceTokens); err != nil {
			return out, err
		}
	}
	if p.entities && len(resp.Entities) > 0 {
		if err := s.addEntityStates(ctx, bank, &out, resp.Entities, p.entityTokens); err != nil {
			return out, err
		}
	}
	return out, nil
}

func recallResultView(x recall.Result) RecallResult {
	return RecallResult{ID: x.ID.String(), Text: x.Text, Type: x.Type, Entities: nonNil(x.Entities), Context: x.Context,
		OccurredStart: x.OccurredStart, OccurredEnd: x.OccurredEnd, MentionedAt: x.MentionedAt, DocumentID: x.DocumentID,
		Metadata: x.Metadata, Tags: nonNil(x.Tags), SourceEventID: x.SourceEventID, ProofCount: x.ProofCount, Trend: x.Trend,
		Tokens: x.Tokens, Scores: recallScores{Final: x.Scores.Final, Reranker: x.Scores.Rerank, Semantic: x.Scores.Semantic,
			Keyword: x.Scores.Keyword, Graph: x.Scores.Graph, Temporal: x.Scores.Temporal}}
}

// addEntityStates fills Hindsight's entities map: each entity the results
// mention, by name, with the observations about it, within maxTokens.
func (s *Server) addEntityStates(ctx context.Context, bank string, out *RecallResponse, refs []recall.EntityRef, maxTokens int) error {
	ids := make([]uuid.UUID, len(refs))
	for i, e := range refs {
		ids[i] = e.ID
	}
	obs, err := s.d.Store.EntityObservations(ctx, bank, ids, 5)
	if err != nil {
		return err
	}
	out.Entities = map[string]entityState{}
	budget := maxTokens
	for _, e := range refs {
		st := entityState{EntityID: e.ID.String(), CanonicalName: e.Name, Observations: []store.EntityObservation{}}
		for _, o := range obs[e.ID] {
			if n := approxTokens(o.Text); n <= budget {
				budget -= n
				st.Observations = append(st.Observations, o)
			}
		}
		out.Entities[e.Name] = st
	}
	return nil
}

// addSourceFacts fills Hindsight's source_facts map with the facts behind
// the observations in the results, within maxTokens (-1: no limit).
func (s *Server) addSourceFacts(ctx context.Context, bank string, out *RecallResponse, sources map[uuid.UUID][]uuid.UUID, maxTokens int) error {
	var ids []uuid.UUID
	for _, src := range sources {
		ids = append(ids, src...)
	}
	mems, err := s.d.Store.GetMemories(ctx, bank, ids)
	if err != nil {
		return err
	}
	out.SourceFacts = map[string]RecallResult{}
	truncated := false
	budget := maxTokens
	for _, m := range mems {
		n := approxTokens(m.Text)
		if maxTokens >= 0 && n > budget {
			truncated = true
			continue
		}
		budget -= n
		out.SourceFacts[m.ID.String()] = memoryAsResult(m)
	}
	out.SourceFactsTruncated = &truncated
	return nil
}

func memoryAsResult(m store.Memory) RecallResult {
	names := make([]string, len(m.Entities))
	for i, e := range m.Entities {
		names[i] = e.Name
	}
	v := RecallResult{ID: m.ID.String(), Text: m.Text, Type: m.Type, Entities: names, Context: m.Context,
		OccurredStart: m.OccurredStart, OccurredEnd: m.OccurredEnd, MentionedAt: m.MentionedAt, DocumentID: m.DocumentID,
		Metadata: m.Metadata, Tags: nonNil(m.Tags), SourceEventID: m.SourceEventID, ProofCount: m.ProofCount, Trend: m.Trend}
	if m.ChunkID != nil {
		c := m.ChunkID.String()
		v.ChunkID = &c
	}
	return v
}

// approxTokens estimates tokens as Hindsight's budgets count them, about
// four characters each; it only bounds the optional parts of an answer.
func approxTokens(s string) int { return (len([]rune(s)) + 3) / 4 }

// cutTokens cuts s to about n tokens, saying whether it did.
func cutTokens(s string, n int) (string, bool) {
	r := []rune(s)
	if len(r) <= n*4 {
		return s, false
	}
	return string(r[:n*4]), true
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
