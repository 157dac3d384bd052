package recallapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"
)

// findNUL returns the JSON path of the first string in a decoded request
// that holds a NUL character.
func findNUL(v any) (string, bool) { return findNULValue(reflect.ValueOf(v), "") }

// findNUL walks a decoded request for a string holding a NUL character and
// returns the JSON path of the first one.
func findNULValue(v reflect.Value, path string) (string, bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "", false
		}
		return findNULValue(v.Elem(), path)
	case reflect.String:
		return path, strings.IndexByte(v.String(), 0) >= 0
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			tag, hasTag := f.Tag.Lookup("json")
			name, _, _ := strings.Cut(tag, ",")
			if name == "-" {
				continue
			}
			// An untagged field is part of a value decoded by its own
			// UnmarshalJSON (contentValue): its path is the value's.
			p := path
			if hasTag && !f.Anonymous {
				if path != "" {
					p = path + "." + name
				} else {
					p = name
				}
			}
			if found, ok := findNULValue(v.Field(i), p); ok {
				return found, true
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if raw, ok := v.Interface().(json.RawMessage); ok && bytes.Contains(bytes.ToLower(raw), []byte(`\u0000`)) {
				return path, true
			}
			return "", false
		}
		for i := range v.Len() {
			if found, ok := findNULValue(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); ok {
				return found, true
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			k := fmt.Sprint(iter.Key().Interface())
			if strings.IndexByte(k, 0) >= 0 {
				return path, true
			}
			if found, ok := findNULValue(iter.Value(), path+"."+k); ok {
				return found, true
			}
		}
	}
	return "", false
}

// checkParams refuses path and query parameters that are not valid UTF-8
// or hold a NUL character, for every route, before a handler can pass them
// to PostgreSQL (which answers such text with an error, not a row).
func checkParams(r *http.Request, pattern string) error {
	for _, name := range pathParams(pattern) {
		if v := r.PathValue(name); !cleanText(v) {
			return badRequest(name, name+" must be valid UTF-8 without NUL characters")
		}
	}
	for name, vals := range r.URL.Query() {
		if !cleanText(name) {
			return badRequest("", "query parameter names must be valid UTF-8 without NUL characters")
		}
		for _, v := range vals {
			if !cleanText(v) {
				return badRequest(name, name+" must be valid UTF-8 without NUL characters")
			}
		}
	}
	return nil
}

func cleanText(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }

// pathParams lists the {name} parameters of a mux pattern.
func pathParams(pattern string) []string {
	var out []string
	for _, m := range pathParam.FindAllStringSubmatch(pattern, -1) {
		out = append(out, strings.TrimSuffix(m[1], "..."))
	}
	return out
}
