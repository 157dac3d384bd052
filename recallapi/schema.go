package recallapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Types shared by the Hindsight 1.1.0 request schemas (hindsight_api's
// request models): every field Hindsight accepts is accepted here, explicit
// nulls included, and unknown fields are ignored as Hindsight ignores them.

// isoLayouts are the forms of ISO 8601 that Hindsight's timestamps accept
// (Python's datetime.fromisoformat); a value without an offset is UTC.
var isoLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999Z0700",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02 15:04",
	"2006-01-02",
	"20060102T150405Z0700",
	"20060102T150405",
	"20060102",
}

// parseISO parses a timestamp as Hindsight does: RFC 3339, or naive ISO
// 8601 taken as UTC.
func parseISO(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, false
	}
	for _, l := range isoLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// isoField parses an optional timestamp field, naming it in the error.
func isoField(field, s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, ok := parseISO(s)
	if !ok {
		return nil, badRequest(field, fmt.Sprintf("%s %q is not an ISO 8601 datetime (e.g. 2024-01-15T10:30:00Z, or 2024-01-15T10:30:00 taken as UTC)", field, clip(s, 40)))
	}
	return &t, nil
}

// clip shortens user input quoted in an error.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// tagList is a list of tags. Like Hindsight, it also takes a string, which
// MCP bridges send for a JSON array: a JSON array inside the string is
// parsed, any other string is one tag.
type tagList []string

func (t *tagList) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*t = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		var inner []string
		if json.Unmarshal([]byte(s), &inner) == nil {
			*t = inner
		} else {
			*t = []string{s}
		}
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return err
	}
	*t = l
	return nil
}

// contentValue is a retain item's content: a string, or Hindsight's list of
// content blocks. Text blocks are joined; memstream has no vision model, so
// image and file blocks are refused rather than dropped.
type contentValue struct {
	Text string
	// Blocked names the first non-text block, if any.
	Blocked string
}

func (c *contentValue) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if err := json.Unmarshal(b, &c.Text); err == nil {
		return nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(b, &blocks); err != nil {
		return &fieldError{field: "content", msg: "content must be a string or a list of content blocks"}
	}
	var parts []string
	for i, bl := range blocks {
		if bl.Type != "text" {
			if c.Blocked == "" {
				c.Blocked = fmt.Sprintf("[%d] (%s)", i, bl.Type)
			}
			continue
		}
		parts = append(parts, bl.Text)
	}
	c.Text = strings.Join(parts, "\n\n")
	return nil
}

// entityInput is an entity a retain item names (Hindsight EntityInput).
type entityInput struct {
	Text string  `json:"text"`
	Type *string `json:"type"`
}

// tagGroup is one node of Hindsight's compound tag filter: a leaf {tags,
// match} or {and: [...]}, {or: [...]}, {not: {...}}.
type tagGroup struct {
	Tags    []string   `json:"tags"`
	Match   string     `json:"match"`
	Resolve string     `json:"resolve"`
	And     []tagGroup `json:"and"`
	Or      []tagGroup `json:"or"`
	Not     *tagGroup  `json:"not"`
}

// validate checks the tree's shape, naming the path of a bad node.
func (g *tagGroup) validate(path string) error {
	kinds := 0
	if g.Tags != nil {
		kinds++
	}
	if g.And != nil {
		kinds++
	}
	if g.Or != nil {
		kinds++
	}
	if g.Not != nil {
		kinds++
	}
	if kinds != 1 {
		return badRequest(path, path+" must be exactly one of a leaf {tags, match}, {and}, {or} or {not}")
	}
	if g.Tags != nil && g.Match != "" && !validTagsMatch[g.Match] {
		return badRequest(path+".match", path+".match must be any, all, any_strict, all_strict or exact")
	}
	for i := range g.And {
		if err := g.And[i].validate(fmt.Sprintf("%s.and[%d]", path, i)); err != nil {
			return err
		}
	}
	for i := range g.Or {
		if err := g.Or[i].validate(fmt.Sprintf("%s.or[%d]", path, i)); err != nil {
			return err
		}
	}
	if g.Not != nil {
		return g.Not.validate(path + ".not")
	}
	return nil
}

// matches evaluates the tree against a memory's tags, with Hindsight's
// rules: a leaf's match defaults to any_strict; the non-strict modes also
// match untagged memories.
func (g *tagGroup) matches(tags []string) bool {
	switch {
	case g.And != nil:
		for i := range g.And {
			if !g.And[i].matches(tags) {
				return false
			}
		}
		return true
	case g.Or != nil:
		for i := range g.Or {
			if g.Or[i].matches(tags) {
				return true
			}
		}
		return false
	case g.Not != nil:
		return !g.Not.matches(tags)
	}
	match := g.Match
	if match == "" {
		match = "any_strict"
	}
	return tagsMatch(tags, g.Tags, match)
}

// tagsMatch applies one tags_match mode (SPEC §5) to a memory's tags.
func tagsMatch(have, want []string, mode string) bool {
	if len(have) == 0 {
		return mode == "any" || mode == "all" || (mode == "exact" && len(want) == 0)
	}
	set := make(map[string]bool, len(have))
	for _, t := range have {
		set[t] = true
	}
	switch mode {
	case "any", "any_strict":
		for _, t := range want {
			if set[t] {
				return true
			}
		}
		return len(want) == 0
	case "all", "all_strict":
		for _, t := range want {
			if !set[t] {
				return false
			}
		}
		return true
	case "exact":
		if len(want) != len(set) {
			return false
		}
		for _, t := range want {
			if !set[t] {
				return false
			}
		}
		return true
	}
	return false
}

// optional is a JSON field that tells "absent" (Set false) from "null"
// (Set true, Null true) from a value.
type optional[T any] struct {
	Set, Null bool
	V         T
}

func (o *optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if bytes.Equal(b, []byte("null")) {
		o.Null = true
		return nil
	}
	return json.Unmarshal(b, &o.V)
}

// on reports whether an include option is in effect: absent takes the
// default, null turns it off, an object turns it on.
func (o optional[T]) on(def bool) bool {
	if !o.Set {
		return def
	}
	return !o.Null
}

// tokensOf is an include option's max_tokens, or def.
func tokensOf(o optional[tokenOpts], def int) int {
	if o.Set && !o.Null && o.V.MaxTokens != nil {
		return *o.V.MaxTokens
	}
	return def
}
