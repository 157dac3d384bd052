package recallapi

import (
	"net/http"
	"regexp"
	"strings"
)

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// queryParams documents each route's query-string parameters, by route
// name.
var queryParams = map[string][]string{
	"banks_list": {"q", "limit", "offset"},
	"memories_list": {"type", "q", "state", "document_id", "entity_id", "tags", "tags_match", "time_field", "start_date", "end_date",
		"consolidation_state", "limit", "offset"},
	"memory_invalidate":       {"reason"},
	"clear_bank_memories":     {"type"},
	"get_graph":               {"type", "limit", "q", "tags", "tags_match", "document_id", "chunk_id"},
	"list_tags":               {"q", "limit", "offset"},
	"observations_list":       {"q", "state", "limit", "offset"},
	"list_observation_scopes": {"limit", "offset"},
	"entities_list":           {"q", "limit", "offset"},
	"get_entity_graph":        {"limit", "min_count"},
	"documents_list":          {"q", "tags", "tags_match", "limit", "offset"},
	"list_document_chunks":    {"limit", "offset"},
	"get_document_history":    {"limit", "offset"},
	"mental_models_list":      {"tags", "tags_match", "detail", "limit", "offset"},
	"mental_model_get":        {"detail"},
	"list_directives":         {"tags", "tags_match", "active_only", "limit", "offset"},
	"list_operations":         {"status", "type", "limit", "offset"},
	"list_webhooks":           {"limit", "offset"},
	"list_webhook_deliveries": {"limit", "cursor"},
	"get_memories_timeseries": {"period", "time_field"},
	"import_bank_template":    {"dry_run"},
	"export_documents":        {"document_id", "include_observations", "include_knowledge_base"},
	"import_documents":        {"on_conflict"},
	"export_bank_transfer":    {"include_data", "include_bank_config", "include_history", "document_id"},
	"import_bank_transfer":    {"target_bank_id", "mode", "include_data", "include_bank_config", "include_history"},
	"clone_bank":              {"target_bank_id", "include_data", "include_bank_config", "include_history"},
	"get_knowledge_base_tree": {"tags", "tags_match"},
	"search_knowledge_base":   {"q", "limit"},
	"list_audit_logs":         {"action", "transport", "start_date", "end_date", "limit", "offset"},
	"audit_log_stats":         {"action", "period"},
	"list_llm_requests": {"status", "operation", "scope", "call_type", "provider", "trace_id", "document_id", "memory_id", "group",
		"start_date", "end_date", "limit", "offset"},
	"llm_request_stats": {"operation", "call_type", "period"},
}

// successStatus is the status of a successful answer where it is not 200.
var successStatus = map[string]string{"create_bank_alias": "201", "create_webhook": "201", "create_knowledge_folder": "201",
	"create_knowledge_page": "201", "export_bank_transfer": "202", "import_bank_transfer": "202", "clone_bank": "202"}

// openapi renders the route table as an OpenAPI 3 document.
func (s *Server) openapi(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, s.openAPIDoc())
	return nil
}

func (s *Server) openAPIDoc() map[string]any {
	paths := map[string]map[string]any{}
	for _, rt := range s.table() {
		ok := "200"
		if st, found := successStatus[rt.name]; found {
			ok = st
		}
		op := map[string]any{
			"operationId": rt.name,
			"summary":     rt.summary,
			"responses": map[string]any{
				ok:        map[string]any{"description": "OK"},
				"default": map[string]any{"description": "Error", "content": jsonSchema("#/components/schemas/Error")},
			},
		}
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(rt.path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		for _, q := range queryParams[rt.name] {
			params = append(params, map[string]any{"name": q, "in": "query", "required": false, "schema": map[string]any{"type": "string"}})
		}
		if params != nil {
			op["parameters"] = params
		}
		if rt.body != "" {
			op["requestBody"] = map[string]any{"required": true, "content": jsonSchema("#/components/schemas/" + rt.body)}
		}
		if rt.scope != "" {
			op["security"] = []any{map[string]any{"bearer": []string{rt.scope}}}
		}
		if paths[rt.path] == nil {
			paths[rt.path] = map[string]any{}
		}
		paths[rt.path][strings.ToLower(rt.method)] = op
	}
	str := map[string]any{"type": "string"}
	strs := map[string]any{"type": "array", "items": str}
	boolean := map[string]any{"type": "boolean"}
	integer := map[string]any{"type": "integer"}
	return map[string]any{
		"openapi": "3.0.3",
		"info":    map[string]any{"title": "memstream", "version": "1", "description": "Long-term memory for AI agents; Hindsight-compatible routes."},
		"paths":   paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
			"schemas": map[string]any{
				"Error": obj(map[string]any{"error": obj(map[string]any{"code": str, "message": str, "field": str}), "detail": str}),
				"RetainRequest": obj(map[string]any{
					"items": map[string]any{"type": "array", "items": obj(map[string]any{
						"content": str, "timestamp": str, "context": str, "document_id": str, "tags": strs,
						"metadata": map[string]any{"type": "object", "additionalProperties": str}})},
					"async": map[string]any{"type": "boolean"},
				}),
				"RecallRequest": obj(map[string]any{
					"query": str, "types": strs, "budget": map[string]any{"type": "string", "enum": []string{"low", "mid", "high"}},
					"max_tokens": map[string]any{"type": "integer", "minimum": 1}, "trace": map[string]any{"type": "boolean"},
					"query_timestamp": str, "tags": strs,
					"tags_match": map[string]any{"type": "string", "enum": []string{"any", "all", "any_strict", "all_strict", "exact"}},
					"fusion":     map[string]any{"type": "string", "enum": []string{"rrf", "interleave"}},
					"arms":       strs,
					"rerank":     map[string]any{"type": "boolean"},
					"diversity":  map[string]any{"type": "number", "minimum": 0, "maximum": 1},
				}),
				"ReflectRequest": obj(map[string]any{
					"query": str, "budget": map[string]any{"type": "string", "enum": []string{"low", "mid", "high"}},
					"max_tokens": map[string]any{"type": "integer", "minimum": 1}, "tags": strs,
					"response_schema": map[string]any{"type": "object"},
					"disposition":     obj(map[string]any{"skepticism": intRange(), "literalism": intRange(), "empathy": intRange()}),
				}),
				"EntityMergeRequest": obj(map[string]any{"into": map[string]any{"type": "string", "format": "uuid"}}),
				"EntityAliasRequest": obj(map[string]any{"alias": str}),
				"MentalModelCreate": obj(map[string]any{
					"name": str, "source_query": str, "content": str, "tags": strs,
					"max_tokens": map[string]any{"type": "integer", "minimum": 1},
				}),
				"MentalModelPatch": obj(map[string]any{
					"name": str, "source_query": str, "content": str, "tags": strs,
					"max_tokens": map[string]any{"type": "integer", "minimum": 1},
				}),
				"MemoryLookupRequest": obj(map[string]any{"ids": map[string]any{"type": "array", "maxItems": 1000,
					"items": map[string]any{"type": "string", "format": "uuid"}}}),
				"DeadLetterReplayRequest": obj(map[string]any{
					"records": map[string]any{"type": "array", "maxItems": 1000, "items": obj(map[string]any{
						"topic": str, "partition": map[string]any{"type": "integer"}, "offset": map[string]any{"type": "integer"}})},
					"class": str,
				}),
				"Bank": obj(map[string]any{
					"name": str, "mission": str, "reflect_mission": str, "background": str, "consolidation": map[string]any{"type": "string", "enum": []string{"running", "paused"}},
					"disposition":            obj(map[string]any{"skepticism": intRange(), "literalism": intRange(), "empathy": intRange()}),
					"disposition_skepticism": intRange(), "disposition_literalism": intRange(), "disposition_empathy": intRange(),
					"defense_policy": map[string]any{"type": "object"},
				}),
				"BankConfigUpdate":                      obj(map[string]any{"updates": map[string]any{"type": "object"}}),
				"BankAlias":                             obj(map[string]any{"alias": str, "primary": boolean}),
				"BankAliasPrimary":                      obj(map[string]any{"primary": boolean}),
				"PromptPreviewRequest":                  obj(map[string]any{"operation": map[string]any{"type": "string", "enum": []string{"retain", "consolidation", "reflect"}}, "strategy": str}),
				"ConsolidationStrategiesPreviewRequest": obj(map[string]any{"strategies": map[string]any{"type": "array", "items": map[string]any{"type": "object"}}, "sample_limit": integer}),
				"DryRunExtractRequest":                  obj(map[string]any{"content": map[string]any{}, "context": str, "timestamp": str, "agent_name": str}),
				"UpdateMemoryRequest": obj(map[string]any{"text": str, "context": str, "occurred_start": str, "occurred_end": str, "mentioned_at": str,
					"fact_type": map[string]any{"type": "string", "enum": []string{"world", "experience"}}, "entities": strs, "resolve_entities": boolean,
					"state": map[string]any{"type": "string", "enum": []string{"valid", "invalidated"}}, "reason": str}),
				"DirectiveCreate":       obj(map[string]any{"name": str, "content": str, "priority": integer, "is_active": boolean, "tags": strs}),
				"DirectivePatch":        obj(map[string]any{"name": str, "content": str, "priority": integer, "is_active": boolean, "tags": strs}),
				"UpdateDocumentRequest": obj(map[string]any{"tags": strs, "observation_scopes": map[string]any{}}),
				"WebhookCreate": obj(map[string]any{"url": str, "secret": str, "event_types": strs, "enabled": boolean,
					"http_config": obj(map[string]any{"method": str, "timeout_seconds": integer, "headers": map[string]any{"type": "object"}, "params": map[string]any{"type": "object"}})}),
				"WebhookPatch": obj(map[string]any{"url": str, "secret": str, "event_types": strs, "enabled": boolean, "http_config": map[string]any{"type": "object"}}),
				"BankTemplateManifest": obj(map[string]any{"version": str, "bank": map[string]any{"type": "object"},
					"mental_models": map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
					"directives":    map[string]any{"type": "array", "items": map[string]any{"type": "object"}}}),
				"CreateFolderRequest": obj(map[string]any{"name": str, "parent_id": str}),
				"CreatePageRequest":   obj(map[string]any{"name": str, "source_query": str, "parent_id": str, "tags": strs, "max_tokens": integer}),
				"UpdateNodeRequest":   obj(map[string]any{"name": str, "parent_id": str, "source_query": str, "tags": strs, "max_tokens": integer}),
			},
		},
	}
}

func obj(props map[string]any) map[string]any {
	return map[string]any{"type": "object", "properties": props}
}

func intRange() map[string]any {
	return map[string]any{"type": "integer", "minimum": 1, "maximum": 5}
}

func jsonSchema(ref string) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": ref}}}
}
