package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tool is one MCP tool: Hindsight's name and arguments, and what it asks
// the HTTP API.
type tool struct {
	name, desc string
	in         reflect.Type
	defaults   map[string]any
	// errExtra is the empty collection Hindsight's tool returns beside an
	// error, so a client can keep reading the answer in its usual shape.
	errExtra map[string]any
	// multiOnly tools exist only in multi-bank mode (bank management).
	multiOnly bool
	// ownBank: the tool's own bank_id argument is required (create_bank).
	ownBank bool
	// noBank: the tool needs no bank (list_banks).
	noBank bool
	effect effect
	run    func(ctx context.Context, c *caller, raw json.RawMessage) (any, error)
}

// effect is what a tool does, for the tool annotations clients use to
// group and auto-approve calls (Hindsight's hints: a closed memory store,
// so never open-world).
type effect int

const (
	reads effect = iota
	writes
	destroys
)

func (t tool) annotations() *mcp.ToolAnnotations {
	no, yes := false, true
	a := &mcp.ToolAnnotations{OpenWorldHint: &no}
	switch t.effect {
	case reads:
		a.ReadOnlyHint = true
	case writes:
		a.DestructiveHint = &no
	case destroys:
		a.DestructiveHint = &yes
	}
	return a
}

// def declares a tool whose arguments decode into In.
func def[In any](name string, e effect, desc string, run func(context.Context, *caller, In) (any, error)) tool {
	return tool{name: name, desc: desc, effect: e, in: reflect.TypeFor[In](),
		run: func(ctx context.Context, c *caller, raw json.RawMessage) (any, error) {
			var in In
			if err := json.Unmarshal(raw, &in); err != nil {
				return nil, fmt.Errorf("invalid arguments: %w", err)
			}
			return run(ctx, c, in)
		}}
}

func (t tool) with(defaults map[string]any) tool { t.defaults = defaults; return t }
func (t tool) onError(extra map[string]any) tool { t.errExtra = extra; return t }
func (t tool) bankManagement() tool              { t.multiOnly = true; return t }
func (t tool) flags(ownBank, noBank bool) tool   { t.ownBank, t.noBank = ownBank, noBank; return t }
func pageQuery(limit, offset int) url.Values {
	return url.Values{"limit": {itoa(limit)}, "offset": {itoa(offset)}}
}
func itoa(n int) string                            { return strconv.Itoa(n) }
func setIf(q url.Values, key, v string) url.Values { return setIfAll(q, key, v) }

func setIfAll(q url.Values, key string, vs ...string) url.Values {
	for _, v := range vs {
		if v != "" {
			q.Add(key, v)
		}
	}
	return q
}

type object = map[string]any

// get calls a route and returns its JSON answer as an object.
func (c *caller) get(ctx context.Context, method, path string, q url.Values, body any) (object, error) {
	var out object
	if _, err := c.do(ctx, method, path, q, body, &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = object{}
	}
	return out, nil
}

// Arguments shared by several tools.

type retainArgs struct {
	Content    string            `json:"content" jsonschema:"What to remember: one fact, a note, or a transcript (\"Name (role): text\" lines are read as a conversation). Be specific."`
	Context    string            `json:"context,omitempty" jsonschema:"A label for the memory, e.g. preferences, work, family."`
	Timestamp  string            `json:"timestamp,omitempty" jsonschema:"When it happened (ISO 8601, e.g. 2024-01-15T10:30:00Z; naive times are UTC; \"unset\" for timeless content). Default: now."`
	Tags       []string          `json:"tags,omitempty" jsonschema:"Tags that scope who sees it, e.g. [\"project:alpha\", \"user:123\"]."`
	Metadata   map[string]string `json:"metadata,omitempty" jsonschema:"String key-value metadata, e.g. {\"source\": \"slack\"}."`
	DocumentID string            `json:"document_id,omitempty" jsonschema:"The document (conversation) this belongs to; memories of one document are listed and deleted together."`
	Strategy   string            `json:"strategy,omitempty" jsonschema:"A named retain strategy of the bank's config (accepted; memstream extracts every item the same way)."`
}

type retainAsyncArgs struct {
	retainArgs
	UpdateMode string `json:"update_mode,omitempty" jsonschema:"With document_id: replace (delete what the document held first) or append (add to it, memstream's default)."`
}

func (a retainArgs) item(updateMode string) object {
	it := object{"content": a.Content, "context": a.Context}
	for k, v := range map[string]string{"timestamp": a.Timestamp, "document_id": a.DocumentID, "strategy": a.Strategy, "update_mode": updateMode} {
		if v != "" {
			it[k] = v
		}
	}
	if a.Tags != nil {
		it["tags"] = a.Tags
	}
	if a.Metadata != nil {
		it["metadata"] = a.Metadata
	}
	return it
}

// retainAnswer is the API's retain answer, as far as the tools read it.
type retainAnswer struct {
	OperationID string `json:"operation_id"`
	Status      string `json:"status"`
	Items       []struct {
		EventID    string `json:"event_id"`
		Status     string `json:"status"`
		ErrorClass string `json:"error_class"`
	} `json:"items"`
}

// itemField turns the API's items[0].content into the tool's content.
func itemField(err error) error {
	if ae, ok := err.(*APIError); ok {
		ae.Field = strings.TrimPrefix(strings.TrimPrefix(ae.Field, "items[0]"), ".")
		if ae.Field == "" && strings.HasPrefix(ae.Message, "items[0]") {
			ae.Field = "content"
		}
	}
	return err
}

// memoryIDs lists the memories that the retained events became: those of
// the operation's document whose source event is one of its items.
func (c *caller) memoryIDs(ctx context.Context, a retainAnswer) ([]string, error) {
	op, err := c.get(ctx, http.MethodGet, c.bankPath("operations", a.OperationID), nil, nil)
	if err != nil {
		return nil, err
	}
	doc, _ := op["document_id"].(string)
	events := map[string]bool{}
	for _, it := range a.Items {
		events[it.EventID] = true
	}
	ids := []string{}
	if doc == "" {
		return ids, nil
	}
	for offset := 0; ; offset += 1000 {
		var page struct {
			Items []struct {
				ID            string `json:"id"`
				SourceEventID string `json:"source_event_id"`
			} `json:"items"`
			Total int `json:"total"`
		}
		q := setIf(pageQuery(1000, offset), "document_id", doc)
		if _, err := c.do(ctx, http.MethodGet, c.bankPath("memories", "list"), q, nil, &page); err != nil {
			return nil, err
		}
		for _, m := range page.Items {
			if events[m.SourceEventID] {
				ids = append(ids, m.ID)
			}
		}
		if len(page.Items) < 1000 || offset+len(page.Items) >= page.Total {
			return ids, nil
		}
	}
}

type recallArgs struct {
	Query                string           `json:"query" jsonschema:"What to look for, in natural language (e.g. the user's food preferences)."`
	MaxTokens            int              `json:"max_tokens,omitempty" jsonschema:"Token budget for the results' text."`
	Budget               string           `json:"budget,omitempty" jsonschema:"How hard to search: low, mid or high."`
	Types                []string         `json:"types,omitempty" jsonschema:"Fact types to include: world, experience, observation. Default: all."`
	PreferObservations   *bool            `json:"prefer_observations,omitempty" jsonschema:"Drop raw facts that a returned observation was built from."`
	Tags                 []string         `json:"tags,omitempty" jsonschema:"Only memories with these tags (see tags_match). Not with tag_groups."`
	TagsMatch            string           `json:"tags_match,omitempty" jsonschema:"any or all (untagged memories included), any_strict or all_strict (excluded), exact."`
	TagGroups            []map[string]any `json:"tag_groups,omitempty" jsonschema:"Boolean tag filters, AND-ed: leaves {\"tags\": [...], \"match\": \"any_strict\"} or {\"and\"|\"or\": [...]}, {\"not\": {...}}."`
	QueryTimestamp       string           `json:"query_timestamp,omitempty" jsonschema:"The time the question is asked at (ISO 8601): anchors 'last week' and recency. Default: the bank's latest event."`
	MinScores            map[string]any   `json:"min_scores,omitempty" jsonschema:"Score floors: any of semantic, keyword, reranker, final."`
	TemporalWindow       map[string]any   `json:"temporal_window,omitempty" jsonschema:"{\"start\": ISO, \"end\": ISO}: ranks memories dated inside it higher (does not filter)."`
	IncludeChunks        bool             `json:"include_chunks,omitempty" jsonschema:"Also return the source text the facts were extracted from."`
	MaxChunkTokens       int              `json:"max_chunk_tokens,omitempty" jsonschema:"Token budget for chunks."`
	IncludeEntities      bool             `json:"include_entities,omitempty" jsonschema:"Also return observations about the entities the results mention."`
	MaxEntityTokens      int              `json:"max_entity_tokens,omitempty" jsonschema:"Token budget for entity observations."`
	IncludeSourceFacts   bool             `json:"include_source_facts,omitempty" jsonschema:"For observations, also return the facts they rest on."`
	MaxSourceFactsTokens int              `json:"max_source_facts_tokens,omitempty" jsonschema:"Token budget for source facts."`
}

type reflectArgs struct {
	Query              string         `json:"query" jsonschema:"The question or topic to think through."`
	Context            string         `json:"context,omitempty" jsonschema:"Why the answer is needed, or other context for it."`
	Budget             string         `json:"budget,omitempty" jsonschema:"How hard to search: low, mid or high."`
	MaxTokens          int            `json:"max_tokens,omitempty" jsonschema:"Maximum tokens of the answer."`
	ResponseSchema     map[string]any `json:"response_schema,omitempty" jsonschema:"A JSON Schema; the answer then also has structured_output."`
	Tags               []string       `json:"tags,omitempty" jsonschema:"Only memories with these tags (see tags_match)."`
	TagsMatch          string         `json:"tags_match,omitempty" jsonschema:"any, all, any_strict, all_strict or exact."`
	ApplyAllDirectives bool           `json:"apply_all_directives,omitempty" jsonschema:"Follow every active directive, whatever its tags."`
	IncludeBasedOn     bool           `json:"include_based_on,omitempty" jsonschema:"Also return the memories, mental models and directives the answer rests on."`
	IncludeTrace       bool           `json:"include_trace,omitempty" jsonschema:"Also return the agent loop's tool and LLM calls (large; for debugging)."`
}

type mentalModelID struct {
	MentalModelID string `json:"mental_model_id" jsonschema:"The mental model's id (from list_mental_models)."`
}

type modelFields struct {
	Tags                             []string       `json:"tags,omitempty" jsonschema:"Tags that scope the model and the memories it is built from."`
	Trigger                          map[string]any `json:"trigger,omitempty" jsonschema:"Refresh policy (mode, refresh_after_consolidation, tags_match, …); memstream refreshes after consolidation and on refresh_mental_model."`
	TagsMatch                        string         `json:"tags_match,omitempty" jsonschema:"Shorthand for trigger.tags_match."`
	TriggerRefreshAfterConsolidation *bool          `json:"trigger_refresh_after_consolidation,omitempty" jsonschema:"Shorthand for trigger.refresh_after_consolidation."`
}

// trigger folds the legacy shorthands into the trigger object.
func (m modelFields) trigger() (map[string]any, error) {
	t := map[string]any{}
	for k, v := range m.Trigger {
		t[k] = v
	}
	for _, s := range []struct {
		key string
		v   any
		set bool
	}{{"tags_match", m.TagsMatch, m.TagsMatch != ""},
		{"refresh_after_consolidation", m.TriggerRefreshAfterConsolidation, m.TriggerRefreshAfterConsolidation != nil}} {
		if !s.set {
			continue
		}
		v := s.v
		if p, ok := v.(*bool); ok {
			v = *p
		}
		if old, ok := t[s.key]; ok && old != v {
			return nil, fmt.Errorf("trigger.%s=%v conflicts with the shorthand %v; set it in one place", s.key, old, v)
		}
		t[s.key] = v
	}
	if len(t) == 0 {
		return nil, nil
	}
	return t, nil
}

type pageArgs struct {
	Limit  int `json:"limit,omitempty" jsonschema:"Maximum number of results."`
	Offset int `json:"offset,omitempty" jsonschema:"Results to skip, for paging up to total."`
}

var paging = map[string]any{"limit": 100, "offset": 0}

func withPaging(extra map[string]any) map[string]any {
	m := map[string]any{}
	for k, v := range paging {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// stripContent leaves a mental model's metadata: listing never pulls a
// bank's whole synthesized knowledge into the agent's context.
func stripContent(m object, keepContent bool) {
	if !keepContent {
		delete(m, "content")
	}
	delete(m, "based_on")
}

// tools are Hindsight 1.1.0's MCP tools (hindsight_api/mcp_tools.py), in
// its order.
func tools() []tool {
	return []tool{
		def("retain", writes, "Store information in long-term memory, for later recall. Use it whenever the user shares personal facts, preferences, events, decisions, plans, relationships or work context. Returns at once (status accepted) with an operation_id to poll with get_operation; the memory is ingested within seconds.",
			func(ctx context.Context, c *caller, a retainAsyncArgs) (any, error) {
				var r retainAnswer
				if _, err := c.do(ctx, http.MethodPost, c.bankPath("memories"), nil, object{"items": []object{a.item(a.UpdateMode)}, "async": true}, &r); err != nil {
					return nil, itemField(err)
				}
				return object{"status": "accepted", "message": "Memory accepted for ingest", "operation_id": r.OperationID, "bank_id": c.bank}, nil
			}).with(map[string]any{"context": "general"}),

		def("sync_retain", writes, "Store information in long-term memory and wait until it is stored and recallable (up to the server's http.retain_wait). Returns the new memories' ids; status pending means it was accepted but is still being ingested (poll get_operation).",
			func(ctx context.Context, c *caller, a retainArgs) (any, error) {
				var r retainAnswer
				status, err := c.do(ctx, http.MethodPost, c.bankPath("memories"), nil, object{"items": []object{a.item("")}, "async": false}, &r)
				if err != nil {
					return nil, itemField(err)
				}
				if status == http.StatusAccepted {
					return object{"status": "pending", "message": "Accepted but not yet stored within the server's wait; poll get_operation", "operation_id": r.OperationID, "memory_ids": []string{}}, nil
				}
				ids, err := c.memoryIDs(ctx, r)
				if err != nil {
					return nil, err
				}
				return object{"status": "completed", "message": "Memory stored", "operation_id": r.OperationID, "memory_ids": ids}, nil
			}).with(map[string]any{"context": "general"}),

		def("recall", reads, "Search the bank's memories: semantic, full-text, graph and temporal retrieval, fused and cut to a token budget. Use it before answering anything that may depend on the user's history, preferences, goals or earlier conversations.",
			func(ctx context.Context, c *caller, a recallArgs) (any, error) {
				body := object{"query": a.Query, "max_tokens": a.MaxTokens, "budget": strings.ToLower(a.Budget), "tags_match": a.TagsMatch,
					"include": object{"entities": part(a.IncludeEntities, a.MaxEntityTokens), "chunks": part(a.IncludeChunks, a.MaxChunkTokens),
						"source_facts": part(a.IncludeSourceFacts, a.MaxSourceFactsTokens)}}
				for k, v := range map[string]any{"types": a.Types, "tags": a.Tags, "tag_groups": a.TagGroups, "min_scores": a.MinScores, "temporal_window": a.TemporalWindow} {
					if !reflect.ValueOf(v).IsNil() {
						body[k] = v
					}
				}
				if a.PreferObservations != nil {
					body["prefer_observations"] = *a.PreferObservations
				}
				if a.QueryTimestamp != "" {
					body["query_timestamp"] = a.QueryTimestamp
				}
				return c.get(ctx, http.MethodPost, c.bankPath("memories", "recall"), nil, body)
			}).with(map[string]any{"max_tokens": 4096, "budget": "high", "tags_match": "any", "max_chunk_tokens": 8192,
			"max_entity_tokens": 500, "max_source_facts_tokens": 4096,
			"include_chunks": false, "include_entities": false, "include_source_facts": false}).onError(map[string]any{"results": []any{}}),

		def("reflect", reads, "Think a question through with everything the bank knows (its memories, observations and mental models), following the bank's disposition and directives. Use it for reasoned answers (what should I do, what patterns are there); use recall for plain lookups.",
			func(ctx context.Context, c *caller, a reflectArgs) (any, error) {
				include := object{}
				if a.IncludeBasedOn {
					include["facts"] = object{}
				}
				if a.IncludeTrace {
					include["tool_calls"] = object{}
				}
				body := object{"query": a.Query, "budget": strings.ToLower(a.Budget), "max_tokens": a.MaxTokens, "tags_match": a.TagsMatch,
					"apply_all_directives": a.ApplyAllDirectives, "include": include}
				if a.Context != "" {
					body["context"] = a.Context
				}
				if a.ResponseSchema != nil {
					body["response_schema"] = a.ResponseSchema
				}
				if a.Tags != nil {
					body["tags"] = a.Tags
				}
				return c.get(ctx, http.MethodPost, c.bankPath("reflect"), nil, body)
			}).with(map[string]any{"budget": "low", "max_tokens": 4096, "tags_match": "any",
			"apply_all_directives": false, "include_based_on": false, "include_trace": false}).onError(map[string]any{"text": ""}),

		def("list_banks", reads, "List the memory banks this key may use, most recently written first. Each bank is a separate memory.",
			func(ctx context.Context, c *caller, a struct {
				Query string `json:"query,omitempty" jsonschema:"Only banks whose id or name contains this (case-insensitive)."`
				pageArgs
			}) (any, error) {
				return c.get(ctx, http.MethodGet, "/v1/default/banks", setIf(pageQuery(a.Limit, a.Offset), "q", a.Query), nil)
			}).with(paging).bankManagement().flags(false, true).onError(map[string]any{"banks": []any{}}),

		def("create_bank", writes, "Create a memory bank, or update the name and mission of an existing one (needs an admin key). Banks are also created by their first retain.",
			func(ctx context.Context, c *caller, a struct {
				BankID  string `json:"bank_id" jsonschema:"The bank's id, e.g. user-123."`
				Name    string `json:"name,omitempty" jsonschema:"A display name."`
				Mission string `json:"mission,omitempty" jsonschema:"Who the agent is and what it is for; reflect uses it."`
			}) (any, error) {
				body := object{}
				if a.Name != "" {
					body["name"] = a.Name
				}
				if a.Mission != "" {
					body["mission"] = a.Mission
				}
				return c.get(ctx, http.MethodPut, c.bankPath(), nil, body)
			}).bankManagement().flags(true, false),

		def("list_mental_models", reads, "List the bank's mental models (standing answers kept current by re-running their source query): ids, names, tags and staleness, without their content; read one with get_mental_model.",
			func(ctx context.Context, c *caller, a struct {
				Tags []string `json:"tags,omitempty" jsonschema:"Only models with any of these tags."`
				pageArgs
			}) (any, error) {
				out, err := c.get(ctx, http.MethodGet, c.bankPath("mental-models"), setIfAll(pageQuery(a.Limit, a.Offset), "tags", a.Tags...), nil)
				if err != nil {
					return nil, err
				}
				items, _ := out["items"].([]any)
				for _, it := range items {
					if m, ok := it.(object); ok {
						stripContent(m, false)
					}
				}
				return object{"items": nonNil(items), "total": out["total"]}, nil
			}).with(paging).onError(map[string]any{"items": []any{}}),

		def("get_mental_model", reads, "Get one mental model by id, with its content.",
			func(ctx context.Context, c *caller, a struct {
				mentalModelID
				Detail string `json:"detail,omitempty" jsonschema:"metadata (no content), content, or full (with what it rests on)."`
			}) (any, error) {
				switch a.Detail {
				case "metadata", "content", "full":
				default:
					return nil, &APIError{Status: 400, Code: "bad_request", Field: "detail", Message: "detail must be metadata, content or full"}
				}
				out, err := c.get(ctx, http.MethodGet, c.bankPath("mental-models", a.MentalModelID), nil, nil)
				if err != nil {
					return nil, err
				}
				if a.Detail != "full" {
					stripContent(out, a.Detail == "content")
				}
				return out, nil
			}).with(map[string]any{"detail": "full"}),

		def("create_mental_model", writes, "Create a mental model: a living document, generated by reflecting on source_query and refreshed as memories arrive. Its content is generated in the background: poll operation_id with get_operation.",
			func(ctx context.Context, c *caller, a struct {
				Name          string `json:"name" jsonschema:"A name, e.g. Coding preferences."`
				SourceQuery   string `json:"source_query" jsonschema:"The question reflect answers to write the content, e.g. What tools does the user prefer?"`
				MentalModelID string `json:"mental_model_id,omitempty" jsonschema:"An id of your own (a UUID); default: generated."`
				MaxTokens     int    `json:"max_tokens,omitempty" jsonschema:"Maximum tokens of the content."`
				modelFields
			}) (any, error) {
				trig, err := a.trigger()
				if err != nil {
					return nil, err
				}
				body := object{"name": a.Name, "source_query": a.SourceQuery, "max_tokens": a.MaxTokens}
				if a.MentalModelID != "" {
					body["id"] = a.MentalModelID
				}
				if a.Tags != nil {
					body["tags"] = a.Tags
				}
				if trig != nil {
					body["trigger"] = trig
				}
				out, err := c.get(ctx, http.MethodPost, c.bankPath("mental-models"), nil, body)
				if err != nil {
					return nil, err
				}
				return object{"mental_model_id": out["mental_model_id"], "operation_id": out["operation_id"], "status": "created",
					"message": fmt.Sprintf("Mental model %q created; its content is generated in the background.", a.Name)}, nil
			}).with(map[string]any{"max_tokens": 2048}),

		def("update_mental_model", writes, "Change a mental model's name, source query, tags, size or refresh policy; call refresh_mental_model to regenerate its content.",
			func(ctx context.Context, c *caller, a struct {
				mentalModelID
				Name        *string `json:"name,omitempty" jsonschema:"A new name."`
				SourceQuery *string `json:"source_query,omitempty" jsonschema:"A new source query."`
				MaxTokens   *int    `json:"max_tokens,omitempty" jsonschema:"A new maximum size of the content."`
				modelFields
			}) (any, error) {
				trig, err := a.trigger()
				if err != nil {
					return nil, err
				}
				body := object{}
				if a.Name != nil {
					body["name"] = *a.Name
				}
				if a.SourceQuery != nil {
					body["source_query"] = *a.SourceQuery
				}
				if a.MaxTokens != nil {
					body["max_tokens"] = *a.MaxTokens
				}
				if a.Tags != nil {
					body["tags"] = a.Tags
				}
				if trig != nil {
					body["trigger"] = trig
				}
				return c.get(ctx, http.MethodPatch, c.bankPath("mental-models", a.MentalModelID), nil, body)
			}),

		def("delete_mental_model", destroys, "Delete a mental model and its content.",
			func(ctx context.Context, c *caller, a mentalModelID) (any, error) {
				if _, err := c.do(ctx, http.MethodDelete, c.bankPath("mental-models", a.MentalModelID), nil, nil, nil); err != nil {
					return nil, err
				}
				return object{"status": "deleted", "mental_model_id": a.MentalModelID}, nil
			}),

		def("refresh_mental_model", writes, "Regenerate a mental model's content from its source query, in the background: poll operation_id with get_operation.",
			func(ctx context.Context, c *caller, a mentalModelID) (any, error) {
				out, err := c.get(ctx, http.MethodPost, c.bankPath("mental-models", a.MentalModelID, "refresh"), nil, object{})
				if err != nil {
					return nil, err
				}
				return object{"operation_id": out["operation_id"], "status": "queued", "message": "Refresh queued for mental model " + a.MentalModelID}, nil
			}),

		def("clear_mental_model", destroys, "Empty a mental model's content, keeping its definition, so the next refresh writes it from scratch.",
			func(ctx context.Context, c *caller, a mentalModelID) (any, error) {
				if _, err := c.do(ctx, http.MethodPost, c.bankPath("mental-models", a.MentalModelID, "clear"), nil, object{}, nil); err != nil {
					return nil, err
				}
				return object{"mental_model_id": a.MentalModelID, "status": "cleared",
					"message": "Content cleared; call refresh_mental_model to rebuild it."}, nil
			}),

		def("list_directives", reads, "List the bank's directives: rules reflect follows.",
			func(ctx context.Context, c *caller, a struct {
				Tags       []string `json:"tags,omitempty" jsonschema:"Only directives with these tags."`
				ActiveOnly bool     `json:"active_only,omitempty" jsonschema:"Only active directives."`
				pageArgs
			}) (any, error) {
				q := setIfAll(pageQuery(a.Limit, a.Offset), "tags", a.Tags...)
				q.Set("active_only", strconv.FormatBool(a.ActiveOnly))
				return c.get(ctx, http.MethodGet, c.bankPath("directives"), q, nil)
			}).with(withPaging(map[string]any{"active_only": true})).onError(map[string]any{"items": []any{}}),

		def("create_directive", writes, "Create a directive: a rule reflect follows in this bank (e.g. Always answer in French).",
			func(ctx context.Context, c *caller, a struct {
				Name     string   `json:"name" jsonschema:"A short name."`
				Content  string   `json:"content" jsonschema:"The rule, in plain words."`
				Priority int      `json:"priority,omitempty" jsonschema:"Higher priorities come first."`
				IsActive bool     `json:"is_active,omitempty" jsonschema:"Whether reflect follows it now."`
				Tags     []string `json:"tags,omitempty" jsonschema:"Tags that scope where it applies."`
			}) (any, error) {
				body := object{"name": a.Name, "content": a.Content, "priority": a.Priority, "is_active": a.IsActive}
				if a.Tags != nil {
					body["tags"] = a.Tags
				}
				return c.get(ctx, http.MethodPost, c.bankPath("directives"), nil, body)
			}).with(map[string]any{"priority": 0, "is_active": true}),

		def("delete_directive", destroys, "Delete a directive.",
			func(ctx context.Context, c *caller, a struct {
				DirectiveID string `json:"directive_id" jsonschema:"The directive's id."`
			}) (any, error) {
				if _, err := c.do(ctx, http.MethodDelete, c.bankPath("directives", a.DirectiveID), nil, nil, nil); err != nil {
					return nil, err
				}
				return object{"status": "deleted", "directive_id": a.DirectiveID}, nil
			}),

		def("list_memories", reads, "Browse the bank's memories, newest first, optionally filtered by type, text or tags.",
			func(ctx context.Context, c *caller, a struct {
				Type      string   `json:"type,omitempty" jsonschema:"world, experience or observation."`
				Q         string   `json:"q,omitempty" jsonschema:"Only memories whose text contains this."`
				Tags      []string `json:"tags,omitempty" jsonschema:"Only memories with these tags (see tags_match)."`
				TagsMatch string   `json:"tags_match,omitempty" jsonschema:"any, all, any_strict, all_strict or exact."`
				pageArgs
			}) (any, error) {
				q := setIf(setIf(pageQuery(a.Limit, a.Offset), "type", a.Type), "q", a.Q)
				if len(a.Tags) > 0 {
					q = setIf(setIfAll(q, "tags", a.Tags...), "tags_match", a.TagsMatch)
				}
				return c.get(ctx, http.MethodGet, c.bankPath("memories", "list"), q, nil)
			}).with(withPaging(map[string]any{"tags_match": "any"})).onError(map[string]any{"items": []any{}}),

		def("get_memory", reads, "Get one memory by id, with its entities, dates and source.",
			func(ctx context.Context, c *caller, a struct {
				MemoryID string `json:"memory_id" jsonschema:"The memory's id."`
			}) (any, error) {
				return c.get(ctx, http.MethodGet, c.bankPath("memories", a.MemoryID), nil, nil)
			}),

		def("update_memory", writes, "Edit a memory: its text (embedded again), context, dates or type. Every change is kept in the memory's history.",
			func(ctx context.Context, c *caller, a struct {
				MemoryID        string   `json:"memory_id" jsonschema:"The memory's id."`
				Text            *string  `json:"text,omitempty" jsonschema:"The new text."`
				Context         *string  `json:"context,omitempty" jsonschema:"The new context."`
				OccurredStart   *string  `json:"occurred_start,omitempty" jsonschema:"When it started (ISO 8601)."`
				OccurredEnd     *string  `json:"occurred_end,omitempty" jsonschema:"When it ended (ISO 8601)."`
				MentionedAt     *string  `json:"mentioned_at,omitempty" jsonschema:"When it was said (ISO 8601)."`
				FactType        *string  `json:"fact_type,omitempty" jsonschema:"world or experience."`
				Entities        []string `json:"entities,omitempty" jsonschema:"Entity names (accepted; memstream links entities by extraction)."`
				ResolveEntities *bool    `json:"resolve_entities,omitempty" jsonschema:"Resolve entity names to the bank's entities (accepted)."`
			}) (any, error) {
				body := object{}
				for k, v := range map[string]*string{"text": a.Text, "context": a.Context, "occurred_start": a.OccurredStart,
					"occurred_end": a.OccurredEnd, "mentioned_at": a.MentionedAt, "fact_type": a.FactType} {
					if v != nil {
						body[k] = *v
					}
				}
				if a.Entities != nil {
					body["entities"] = a.Entities
				}
				if a.ResolveEntities != nil {
					body["resolve_entities"] = *a.ResolveEntities
				}
				return c.get(ctx, http.MethodPatch, c.bankPath("memories", a.MemoryID), nil, body)
			}).with(map[string]any{"resolve_entities": true}),

		def("invalidate_memory", destroys, "Retire a memory that is wrong or outdated: it stays, with the reason, but recall no longer returns it. restore: true brings it back.",
			func(ctx context.Context, c *caller, a struct {
				MemoryID string `json:"memory_id" jsonschema:"The memory's id."`
				Reason   string `json:"reason,omitempty" jsonschema:"Why it is retired."`
				Restore  bool   `json:"restore,omitempty" jsonschema:"Bring a retired memory back instead."`
			}) (any, error) {
				if a.Restore {
					body := object{"state": "valid"}
					if a.Reason != "" {
						body["reason"] = a.Reason
					}
					return c.get(ctx, http.MethodPatch, c.bankPath("memories", a.MemoryID), nil, body)
				}
				return c.get(ctx, http.MethodDelete, c.bankPath("memories", a.MemoryID), setIf(url.Values{}, "reason", a.Reason), nil)
			}).with(map[string]any{"restore": false}),

		def("list_documents", reads, "List the bank's documents: the conversations and files its memories came from.",
			func(ctx context.Context, c *caller, a struct {
				Q string `json:"q,omitempty" jsonschema:"Only documents whose id contains this."`
				pageArgs
			}) (any, error) {
				return c.get(ctx, http.MethodGet, c.bankPath("documents"), setIf(pageQuery(a.Limit, a.Offset), "q", a.Q), nil)
			}).with(paging).onError(map[string]any{"items": []any{}}),

		def("get_document", reads, "Get one document with its text and counts of what was derived from it.",
			func(ctx context.Context, c *caller, a struct {
				DocumentID string `json:"document_id" jsonschema:"The document's id."`
			}) (any, error) {
				return c.get(ctx, http.MethodGet, c.bankPath("documents", a.DocumentID), nil, nil)
			}),

		def("delete_document", destroys, "Delete a document and every memory, chunk and link derived from it.",
			func(ctx context.Context, c *caller, a struct {
				DocumentID string `json:"document_id" jsonschema:"The document's id."`
			}) (any, error) {
				out, err := c.get(ctx, http.MethodDelete, c.bankPath("documents", a.DocumentID), nil, nil)
				if err != nil {
					return nil, err
				}
				out["status"], out["document_id"] = "deleted", a.DocumentID
				return out, nil
			}),

		def("list_operations", reads, "List the bank's background operations (retains, mental-model refreshes, exports), newest first.",
			func(ctx context.Context, c *caller, a struct {
				Status         string `json:"status,omitempty" jsonschema:"pending, running, completed, failed or cancelled."`
				Type           string `json:"type,omitempty" jsonschema:"retain, refresh_mental_model, consolidation, …"`
				ExcludeParents bool   `json:"exclude_parents,omitempty" jsonschema:"Leave out batch parents (memstream has none)."`
				pageArgs
			}) (any, error) {
				q := setIf(setIf(pageQuery(a.Limit, a.Offset), "status", a.Status), "type", a.Type)
				return c.get(ctx, http.MethodGet, c.bankPath("operations"), q, nil)
			}).with(map[string]any{"limit": 20, "offset": 0, "exclude_parents": false}).onError(map[string]any{"items": []any{}}),

		def("get_operation", reads, "Get one background operation; a retain's lists what became of each item (persisted, dead_lettered or pending).",
			func(ctx context.Context, c *caller, a struct {
				OperationID string `json:"operation_id" jsonschema:"The operation's id."`
			}) (any, error) {
				return c.get(ctx, http.MethodGet, c.bankPath("operations", a.OperationID), nil, nil)
			}),

		def("cancel_operation", writes, "Cancel a pending operation.",
			func(ctx context.Context, c *caller, a struct {
				OperationID string `json:"operation_id" jsonschema:"The operation's id."`
			}) (any, error) {
				return c.get(ctx, http.MethodDelete, c.bankPath("operations", a.OperationID), nil, nil)
			}),

		def("list_tags", reads, "List the tags in use in the bank, with how many memories carry each.",
			func(ctx context.Context, c *caller, a struct {
				Q string `json:"q,omitempty" jsonschema:"Only tags matching this (* is a wildcard)."`
				pageArgs
			}) (any, error) {
				return c.get(ctx, http.MethodGet, c.bankPath("tags"), setIf(pageQuery(a.Limit, a.Offset), "q", a.Q), nil)
			}).with(paging).onError(map[string]any{"items": []any{}}),

		def("get_bank", reads, "Get the bank's profile: name, mission, disposition and configuration.",
			func(ctx context.Context, c *caller, _ struct{}) (any, error) {
				return c.get(ctx, http.MethodGet, c.bankPath(), nil, nil)
			}),

		def("get_bank_stats", reads, "Get the bank's counters: facts, observations, documents, entities, links, pending consolidation and more.",
			func(ctx context.Context, c *caller, _ struct{}) (any, error) {
				return c.get(ctx, http.MethodGet, c.bankPath("stats"), nil, nil)
			}).bankManagement(),

		def("update_bank", writes, "Change the bank's name, mission or configuration (needs an admin key). Only what is given changes.",
			func(ctx context.Context, c *caller, a struct {
				Name          string         `json:"name,omitempty" jsonschema:"A display name."`
				Mission       string         `json:"mission,omitempty" jsonschema:"Who the agent is and what it is for; reflect uses it."`
				ConfigUpdates map[string]any `json:"config_updates,omitempty" jsonschema:"Bank configuration keys to set, e.g. {\"disposition_skepticism\": 4, \"reflect_mission\": \"…\"}."`
			}) (any, error) {
				profile := object{}
				if a.Name != "" {
					profile["name"] = a.Name
				}
				if a.Mission != "" {
					profile["mission"] = a.Mission
				}
				if len(profile) == 0 && len(a.ConfigUpdates) == 0 {
					return nil, &APIError{Status: 400, Code: "bad_request", Message: "give at least one of name, mission, config_updates"}
				}
				if len(profile) > 0 {
					if _, err := c.do(ctx, http.MethodPatch, c.bankPath(), nil, profile, nil); err != nil {
						return nil, err
					}
				}
				if len(a.ConfigUpdates) > 0 {
					if _, err := c.do(ctx, http.MethodPatch, c.bankPath("config"), nil, object{"updates": a.ConfigUpdates}, nil); err != nil {
						return nil, err
					}
				}
				return c.get(ctx, http.MethodGet, c.bankPath(), nil, nil)
			}),

		def("delete_bank", destroys, "Delete the bank and everything in it: memories, documents, mental models, directives (needs an admin key). It cannot be undone.",
			func(ctx context.Context, c *caller, _ struct{}) (any, error) {
				out, err := c.get(ctx, http.MethodDelete, c.bankPath(), nil, nil)
				if err != nil {
					return nil, err
				}
				out["status"], out["bank_id"] = "deleted", c.bank
				return out, nil
			}),

		def("clear_memories", destroys, "Delete the bank's memories (all, or one fact type), keeping the bank and its settings.",
			func(ctx context.Context, c *caller, a struct {
				Type string `json:"type,omitempty" jsonschema:"Only this fact type: world, experience or observation."`
			}) (any, error) {
				out, err := c.get(ctx, http.MethodDelete, c.bankPath("memories"), setIf(url.Values{}, "type", a.Type), nil)
				if err != nil {
					return nil, err
				}
				out["status"], out["bank_id"] = "cleared", c.bank
				return out, nil
			}),

		def("get_knowledge_base_tree", reads, "The bank's knowledge base: folders and pages (pages are mental models), as a tree.",
			func(ctx context.Context, c *caller, _ struct{}) (any, error) {
				return c.get(ctx, http.MethodGet, c.bankPath("knowledge-base", "tree"), nil, nil)
			}),

		def("search_knowledge_base", reads, "Search the knowledge base's pages by name and content.",
			func(ctx context.Context, c *caller, a struct {
				Query string `json:"query" jsonschema:"What to look for."`
				Limit int    `json:"limit,omitempty" jsonschema:"Maximum number of pages."`
			}) (any, error) {
				return c.get(ctx, http.MethodGet, c.bankPath("knowledge-base", "search"), url.Values{"q": {a.Query}, "limit": {itoa(a.Limit)}}, nil)
			}).with(map[string]any{"limit": 10}),

		def("get_knowledge_page", reads, "Read one knowledge-base page as markdown.",
			func(ctx context.Context, c *caller, a struct {
				PageID string `json:"page_id" jsonschema:"The page's id."`
			}) (any, error) {
				return c.get(ctx, http.MethodGet, c.bankPath("knowledge-base", "pages", a.PageID), nil, nil)
			}),

		def("create_knowledge_folder", writes, "Create a folder in the knowledge base.",
			func(ctx context.Context, c *caller, a struct {
				Name     string `json:"name" jsonschema:"The folder's name."`
				ParentID string `json:"parent_id,omitempty" jsonschema:"The folder to create it in; default: the top level."`
			}) (any, error) {
				body := object{"name": a.Name}
				if a.ParentID != "" {
					body["parent_id"] = a.ParentID
				}
				return c.get(ctx, http.MethodPost, c.bankPath("knowledge-base", "folders"), nil, body)
			}),

		def("create_knowledge_page", writes, "Create a knowledge-base page: a mental model placed in the tree, generated from source_query in the background.",
			func(ctx context.Context, c *caller, a struct {
				Name                      string         `json:"name" jsonschema:"The page's name."`
				SourceQuery               string         `json:"source_query" jsonschema:"The question its content answers."`
				ParentID                  string         `json:"parent_id,omitempty" jsonschema:"The folder to put it in."`
				Tags                      []string       `json:"tags,omitempty" jsonschema:"Tags that scope it."`
				MaxTokens                 *int           `json:"max_tokens,omitempty" jsonschema:"Maximum tokens of its content."`
				Trigger                   map[string]any `json:"trigger,omitempty" jsonschema:"Refresh policy (accepted)."`
				RefreshAfterConsolidation *bool          `json:"refresh_after_consolidation,omitempty" jsonschema:"Refresh after consolidation (accepted; memstream does)."`
			}) (any, error) {
				body := object{"name": a.Name, "source_query": a.SourceQuery}
				if a.ParentID != "" {
					body["parent_id"] = a.ParentID
				}
				if a.Tags != nil {
					body["tags"] = a.Tags
				}
				if a.MaxTokens != nil {
					body["max_tokens"] = *a.MaxTokens
				}
				return c.get(ctx, http.MethodPost, c.bankPath("knowledge-base", "pages"), nil, body)
			}),

		def("update_knowledge_node", writes, "Rename or move a knowledge-base folder or page, or change a page's source query, tags or size. parent_id \"root\" moves it to the top level.",
			func(ctx context.Context, c *caller, a struct {
				NodeID                    string         `json:"node_id" jsonschema:"The folder's or page's id."`
				Name                      *string        `json:"name,omitempty" jsonschema:"A new name."`
				ParentID                  *string        `json:"parent_id,omitempty" jsonschema:"The folder to move it into; root for the top level."`
				SourceQuery               *string        `json:"source_query,omitempty" jsonschema:"A page's new source query."`
				Tags                      []string       `json:"tags,omitempty" jsonschema:"A page's new tags."`
				MaxTokens                 *int           `json:"max_tokens,omitempty" jsonschema:"A page's new maximum size."`
				Trigger                   map[string]any `json:"trigger,omitempty" jsonschema:"Refresh policy (accepted)."`
				RefreshAfterConsolidation *bool          `json:"refresh_after_consolidation,omitempty" jsonschema:"Refresh after consolidation (accepted)."`
			}) (any, error) {
				body := object{}
				if a.Name != nil {
					body["name"] = *a.Name
				}
				if a.ParentID != nil {
					if *a.ParentID == "root" || *a.ParentID == "" {
						body["parent_id"] = nil
					} else {
						body["parent_id"] = *a.ParentID
					}
				}
				if a.SourceQuery != nil {
					body["source_query"] = *a.SourceQuery
				}
				if a.Tags != nil {
					body["tags"] = a.Tags
				}
				if a.MaxTokens != nil {
					body["max_tokens"] = *a.MaxTokens
				}
				return c.get(ctx, http.MethodPatch, c.bankPath("knowledge-base", "nodes", a.NodeID), nil, body)
			}),

		def("delete_knowledge_node", destroys, "Delete a knowledge-base folder (with everything in it) or page.",
			func(ctx context.Context, c *caller, a struct {
				NodeID string `json:"node_id" jsonschema:"The folder's or page's id."`
			}) (any, error) {
				return c.get(ctx, http.MethodDelete, c.bankPath("knowledge-base", "nodes", a.NodeID), nil, nil)
			}),
	}
}

// part is one optional part of a recall answer: {max_tokens} when on,
// null (off) otherwise.
func part(on bool, maxTokens int) any {
	if !on {
		return nil
	}
	return object{"max_tokens": maxTokens}
}

func nonNil(s []any) []any {
	if s == nil {
		return []any{}
	}
	return s
}
