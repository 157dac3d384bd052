package reflect

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValidateSchema(t *testing.T) {
	t.Parallel()
	schema := map[string]any{}
	if err := json.Unmarshal([]byte(`{
		"type": "object",
		"required": ["city", "sources"],
		"additionalProperties": false,
		"properties": {
			"city": {"type": "string"},
			"confidence": {"type": "string", "enum": ["low", "medium", "high"]},
			"year": {"type": ["integer", "null"]},
			"sources": {"type": "array", "minItems": 1, "items": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}}
		}}`), &schema); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ doc, wantErr string }{
		{`{"city":"Shanghai","sources":[{"id":"a"}]}`, ""},
		{`{"city":"Shanghai","confidence":"high","year":2026,"sources":[{"id":"a"}]}`, ""},
		{`{"city":"Shanghai","year":null,"sources":[{"id":"a"}]}`, ""},
		{`{"sources":[{"id":"a"}]}`, `$: missing required property "city"`},
		{`{"city":3,"sources":[{"id":"a"}]}`, `$.city: expected string, got number`},
		{`{"city":"x","confidence":"sure","sources":[{"id":"a"}]}`, `$.confidence: sure is not one of`},
		{`{"city":"x","year":2026.5,"sources":[{"id":"a"}]}`, `$.year: expected integer or null`},
		{`{"city":"x","sources":[]}`, `$.sources: has 0 items, fewer than minItems 1`},
		{`{"city":"x","sources":[{"id":1}]}`, `$.sources[0].id: expected string`},
		{`{"city":"x","sources":[{}]}`, `$.sources[0]: missing required property "id"`},
		{`{"city":"x","sources":[{"id":"a"}],"extra":1}`, `$: property "extra" is not allowed`},
		{`["Shanghai"]`, `$: expected object, got array`},
	} {
		var v any
		if err := json.Unmarshal([]byte(c.doc), &v); err != nil {
			t.Fatal(err)
		}
		err := validateSchema(schema, v)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: unexpected error %v", c.doc, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: error %v, want %q", c.doc, err, c.wantErr)
		}
	}
}

func TestOfflineFillSchema(t *testing.T) {
	t.Parallel()
	resp := &Response{Text: "Shanghai [o1]", BasedOn: BasedOn{Observations: []string{"o1"}, Memories: []string{"m1"}}}
	ok := map[string]any{"type": "object", "required": []any{"answer", "sources"}, "properties": map[string]any{
		"answer": map[string]any{"type": "string"}, "sources": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}
	v := fillSchema(ok, resp)
	if err := validateSchema(ok, v); err != nil {
		t.Fatalf("filled %v: %v", v, err)
	}
	if m := v.(map[string]any); m["answer"] != resp.Text || len(m["sources"].([]any)) != 2 {
		t.Errorf("filled %v", v)
	}
	// A required number cannot be extracted honestly: validation says so.
	bad := map[string]any{"type": "object", "required": []any{"confidence"}, "properties": map[string]any{"confidence": map[string]any{"type": "number"}}}
	if err := validateSchema(bad, fillSchema(bad, resp)); err == nil {
		t.Error("a required number was filled from text")
	}
}

func TestRenderFitsCeilingAsValidJSON(t *testing.T) {
	t.Parallel()
	var items []any
	for i := range 50 {
		items = append(items, map[string]any{"id": i, "text": strings.Repeat("word ", 40)})
	}
	for _, ceiling := range []int{5000, 1000, 300, 40} {
		out := render(testTokens(), "memories", items, ceiling)
		if n := testTokens().Count(out); n > ceiling {
			t.Errorf("ceiling %d: rendered %d tokens", ceiling, n)
		}
		var v struct {
			Memories  []map[string]any `json:"memories"`
			Omitted   int              `json:"omitted"`
			Truncated bool             `json:"truncated"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("ceiling %d: invalid JSON %q: %v", ceiling, out, err)
		}
		if len(v.Memories)+v.Omitted != len(items) || v.Truncated != (v.Omitted > 0) {
			t.Errorf("ceiling %d: %d kept + %d omitted, truncated %v", ceiling, len(v.Memories), v.Omitted, v.Truncated)
		}
		if ceiling == 5000 && v.Omitted != 0 {
			t.Errorf("everything fits in 5000 tokens, yet %d omitted", v.Omitted)
		}
		if ceiling == 40 && (len(v.Memories) != 1 || !strings.Contains(v.Memories[0]["text"].(string), "[truncated]")) {
			t.Errorf("a tiny ceiling should cut the first item's text, got %q", out)
		}
	}
}
