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
	"memories_list":     {"type", "q", "state", "limit", "offset"},
	"memory_invalidate": {"reason"},
	"observations_list": {"q", "state", "limit", "offset"},
	"entities_list":     {"q", "limit", "offset"},
	"documents_list":    {"limit", "offset"},
}

// successStatus is the status of a successful answer where it is not 200.
var successStatus = map[string]string{"mental_model_create": "201"}

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
	return map[string]any{
		"openapi": "3.0.3",
		"info":    map[string]any{"title": "memstream", "version": "1", "description": "Long-term memory for AI agents; Hindsight-compatible routes."},
		"paths":   paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
			"schemas": map[string]any{
				"Error": obj(map[string]any{"error": obj(map[string]any{"code": str, "message": str, "field": str})}),
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
					"name": str, "mission": str, "consolidation": map[string]any{"type": "string", "enum": []string{"running", "paused"}},
					"disposition":    obj(map[string]any{"skepticism": intRange(), "literalism": intRange(), "empathy": intRange()}),
					"defense_policy": map[string]any{"type": "object"},
				}),
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
