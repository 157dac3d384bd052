package reflect

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// validateSchema checks v (decoded JSON: map[string]any, []any, string,
// float64, bool, nil) against the JSON-Schema subset that response_schema
// supports: type (one name or a list), properties, required,
// additionalProperties false, enum, const, items, minItems, maxItems. It
// returns the first violation with its JSON path. Keywords outside the
// subset are ignored rather than rejected: a schema written for a full
// validator still constrains what this one checks.
func validateSchema(schema map[string]any, v any) error {
	return validateAt("$", schema, v)
}

func validateAt(path string, s map[string]any, v any) error {
	if t, ok := s["type"]; ok {
		var names []string
		switch t := t.(type) {
		case string:
			names = []string{t}
		case []any:
			for _, n := range t {
				if n, ok := n.(string); ok {
					names = append(names, n)
				}
			}
		}
		if len(names) > 0 && !slices.ContainsFunc(names, func(n string) bool { return hasType(n, v) }) {
			return fmt.Errorf("%s: expected %s, got %s", path, strings.Join(names, " or "), typeName(v))
		}
	}
	if c, ok := s["const"]; ok && !jsonEqual(c, v) {
		return fmt.Errorf("%s: must equal %v", path, c)
	}
	if e, ok := s["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return jsonEqual(x, v) }) {
		return fmt.Errorf("%s: %v is not one of %v", path, v, e)
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if name, ok := r.(string); ok {
					if _, has := v[name]; !has {
						return fmt.Errorf("%s: missing required property %q", path, name)
					}
				}
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys) // the first error reported is stable
		for _, k := range keys {
			ps, ok := props[k].(map[string]any)
			if !ok {
				if ap, isBool := s["additionalProperties"].(bool); isBool && !ap {
					return fmt.Errorf("%s: property %q is not allowed", path, k)
				}
				if aps, isSchema := s["additionalProperties"].(map[string]any); isSchema {
					if err := validateAt(path+"."+k, aps, v[k]); err != nil {
						return err
					}
				}
				continue
			}
			if err := validateAt(path+"."+k, ps, v[k]); err != nil {
				return err
			}
		}
	case []any:
		if n, ok := s["minItems"].(float64); ok && float64(len(v)) < n {
			return fmt.Errorf("%s: has %d items, fewer than minItems %v", path, len(v), n)
		}
		if n, ok := s["maxItems"].(float64); ok && float64(len(v)) > n {
			return fmt.Errorf("%s: has %d items, more than maxItems %v", path, len(v), n)
		}
		if is, ok := s["items"].(map[string]any); ok {
			for i, x := range v {
				if err := validateAt(fmt.Sprintf("%s[%d]", path, i), is, x); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func hasType(name string, v any) bool {
	switch name {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	}
	return true // an unknown type name constrains nothing
}

func typeName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func jsonEqual(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// checkSchema rejects a response_schema this validator cannot use, so a
// typo is a 400 rather than an answer that is silently unchecked.
func checkSchema(s map[string]any) error {
	if t, ok := s["type"]; ok {
		switch t := t.(type) {
		case string:
			if !knownType(t) {
				return &RequestError{Field: "response_schema.type", Message: fmt.Sprintf("%q is not a JSON type", t)}
			}
		case []any:
		default:
			return &RequestError{Field: "response_schema.type", Message: "must be a string or a list of strings"}
		}
	}
	if p, ok := s["properties"]; ok {
		pm, ok := p.(map[string]any)
		if !ok {
			return &RequestError{Field: "response_schema.properties", Message: "must be an object"}
		}
		for k, sub := range pm {
			sm, ok := sub.(map[string]any)
			if !ok {
				return &RequestError{Field: "response_schema.properties." + k, Message: "must be a schema object"}
			}
			if err := checkSchema(sm); err != nil {
				return err
			}
		}
	}
	if it, ok := s["items"]; ok {
		im, ok := it.(map[string]any)
		if !ok {
			return &RequestError{Field: "response_schema.items", Message: "must be a schema object"}
		}
		return checkSchema(im)
	}
	return nil
}

func knownType(t string) bool {
	switch t {
	case "object", "array", "string", "number", "integer", "boolean", "null":
		return true
	}
	return false
}
