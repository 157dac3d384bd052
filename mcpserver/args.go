package mcpserver

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// inputSchema is a tool's argument schema, inferred from its argument
// struct (json names, jsonschema descriptions, omitempty = optional), with
// Hindsight's defaults and, for multi-bank tools, an optional bank_id.
// Extra properties are allowed: they are dropped before validation, as
// Hindsight drops them.
func inputSchema(t reflect.Type, defaults map[string]any, withBank bool) (*jsonschema.Schema, error) {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{})
	if err != nil {
		return nil, fmt.Errorf("infer the schema of %s: %w", t, err)
	}
	s.AdditionalProperties = nil
	if s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{}
	}
	for k, v := range defaults {
		p, ok := s.Properties[k]
		if !ok {
			return nil, fmt.Errorf("default for %s: %s has no such argument", k, t)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		p.Default = raw
	}
	if withBank {
		s.Properties["bank_id"] = &jsonschema.Schema{Type: "string",
			Description: "The bank to use; defaults to the session's bank (the X-Bank-Id header, or the server's default bank)."}
	}
	return s, nil
}

// arguments is a tool's validated arguments.
type arguments struct {
	schema   *jsonschema.Resolved
	props    map[string]*jsonschema.Schema
	defaults map[string]any
}

func newArguments(s *jsonschema.Schema, defaults map[string]any) (*arguments, error) {
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	// Defaults as JSON values, so they validate as a client's would.
	norm := make(map[string]any, len(defaults))
	for k, v := range defaults {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		var jv any
		if err := json.Unmarshal(raw, &jv); err != nil {
			return nil, err
		}
		norm[k] = jv
	}
	return &arguments{schema: rs, props: s.Properties, defaults: norm}, nil
}

// prepare reads raw tool arguments tolerantly: unknown arguments and nulls
// are dropped, a list or object sent as JSON text is decoded (a plain
// string for a list of strings becomes a one-item list), defaults fill
// what is missing, and the result is validated against the schema.
func (a *arguments) prepare(raw json.RawMessage) (map[string]any, error) {
	m := map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("the arguments must be a JSON object: %w", err)
		}
	}
	for _, k := range slices.Collect(maps.Keys(m)) {
		p, ok := a.props[k]
		if !ok || m[k] == nil {
			delete(m, k)
			continue
		}
		s, isText := m[k].(string)
		switch {
		case isText && hasType(p, "array"):
			var v any
			if json.Unmarshal([]byte(s), &v) == nil {
				if l, ok := v.([]any); ok {
					m[k] = l
					break
				}
			}
			if p.Items != nil && hasType(p.Items, "string") {
				m[k] = []any{s}
			}
		case isText && hasType(p, "object"):
			var v any
			if json.Unmarshal([]byte(s), &v) == nil {
				if o, ok := v.(map[string]any); ok {
					m[k] = o
				}
			}
		}
	}
	for k, v := range a.defaults {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	if err := a.schema.Validate(m); err != nil {
		return nil, fmt.Errorf("invalid arguments: %w", err)
	}
	return m, nil
}

func hasType(s *jsonschema.Schema, t string) bool {
	return s.Type == t || slices.Contains(s.Types, t)
}
