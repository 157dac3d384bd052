package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The fake answers a structured-output call (response_format json_schema,
// as Hindsight sends with HINDSIGHT_API_LLM_STRICT_SCHEMA=true and
// memstream's adjudicator always) from the schema itself, not from the
// prompt's wording, so a reworded prompt keeps being answered:
//
//   - The call's units are what it is about. When the schema pins ids
//     (a string enum inside an array, as Hindsight's consolidation pins
//     source_fact_ids), one unit per id, its text the user-message line
//     that names it. Else, when the user message is JSON holding objects
//     with "id" and "text" (memstream's consolidation input), one unit per
//     object of the first such list. Else one unit per sentence of the
//     user message's content (after a line that is only a label, such as
//     "Content:", when it has one): an extraction.
//   - Units with ids (facts to consolidate) that say the same thing
//     (equal text but for case, spaces and closing punctuation) are one
//     unit citing all their ids; a unit that says what an existing
//     observation of the user message says (a JSON object with "id" and
//     "text"; one listing the fact ids it may take, as memstream's
//     "for_facts", only for those) matches that observation.
//   - The root object's first array of objects without a reference
//     (a string property "id" or "…_id") gets one item per unmatched
//     unit: the facts, or the creates. Its first array of objects with a
//     reference and an array of strings (an update) gets one item per
//     matched unit, the reference naming the observation. Every other
//     array is empty (or minItems long).
//   - In a unit's item the first free string (no enum, default or format)
//     is the unit's text; an array of strings holds the unit's ids; other
//     strings take their default, or "".
//   - Enums take their default or first value, nullable fields null,
//     numbers their minimum or 0, booleans false.
//
// So an extraction gets one fact per sentence and a consolidation one
// observation per distinct fact, new or confirming the one that already
// says it, for both systems alike, as a faithful model would answer.

// schema is the subset of JSON Schema the fake reads. Properties keep
// their order: which array gets the units depends on it.
type schema struct {
	Type       json.RawMessage    `json:"type"`
	Properties orderedProps       `json:"properties"`
	Items      *schema            `json:"items"`
	Enum       []any              `json:"enum"`
	Const      any                `json:"const"`
	Default    json.RawMessage    `json:"default"`
	AnyOf      []*schema          `json:"anyOf"`
	OneOf      []*schema          `json:"oneOf"`
	AllOf      []*schema          `json:"allOf"`
	Ref        string             `json:"$ref"`
	Defs       map[string]*schema `json:"$defs"`
	OldDefs    map[string]*schema `json:"definitions"`
	MinItems   *int               `json:"minItems"`
	MaxItems   *int               `json:"maxItems"`
	Minimum    *float64           `json:"minimum"`
	Format     string             `json:"format"`
}

type orderedProps struct {
	names []string
	m     map[string]*schema
}

func (p *orderedProps) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("properties: not an object")
	}
	p.m = map[string]*schema{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := t.(string)
		var s schema
		if err := dec.Decode(&s); err != nil {
			return fmt.Errorf("properties.%s: %w", name, err)
		}
		p.names = append(p.names, name)
		p.m[name] = &s
	}
	return nil
}

// types lists the schema's type keyword (a string or a list).
func (s *schema) types() []string {
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(s.Type, &many)
	return many
}

func (s *schema) is(t string) bool { return slices.Contains(s.types(), t) }

// unit is one thing a structured call is about: a sentence to extract, or
// facts to consolidate (ids) and the observation they confirm (match).
type unit struct {
	ids         []string
	text, match string
}

// observation is an existing observation shown in a consolidation call;
// forFacts, when set, lists the fact ids it may take.
type observation struct {
	id, text string
	forFacts []string
}

type filler struct {
	root  *schema
	units []unit
	depth int
}

func (f *filler) resolve(s *schema) (*schema, error) {
	for range 16 {
		if s == nil || s.Ref == "" {
			return s, nil
		}
		name, ok := strings.CutPrefix(s.Ref, "#/$defs/")
		defs := f.root.Defs
		if !ok {
			name, ok = strings.CutPrefix(s.Ref, "#/definitions/")
			defs = f.root.OldDefs
		}
		if !ok || defs[name] == nil {
			return nil, fmt.Errorf("unresolvable $ref %q", s.Ref)
		}
		s = defs[name]
	}
	return nil, errors.New("$ref chain too deep")
}

// fill returns a value valid for s; u is the unit whose item is being
// filled (nil outside one), root whether s is the response's top object.
func (f *filler) fill(s *schema, u *unit, root bool) (any, error) {
	f.depth++
	defer func() { f.depth-- }()
	if f.depth > 32 {
		return nil, errors.New("schema nests too deep")
	}
	s, err := f.resolve(s)
	if err != nil || s == nil {
		return nil, err
	}
	if s.Const != nil {
		return s.Const, nil
	}
	if len(s.AllOf) > 0 {
		return f.fill(s.AllOf[0], u, root)
	}
	if alts := append(slices.Clone(s.AnyOf), s.OneOf...); len(alts) > 0 {
		for _, a := range alts {
			if r, _ := f.resolve(a); r != nil && r.is("null") {
				return nil, nil
			}
		}
		return f.fill(alts[0], u, root)
	}
	if len(s.Enum) > 0 {
		if u != nil && len(u.ids) > 0 && slices.Contains(s.Enum, any(u.ids[0])) {
			return u.ids[0], nil
		}
		if d := s.defaultValue(); d != nil && slices.Contains(s.Enum, d) {
			return d, nil
		}
		return s.Enum[0], nil
	}
	switch {
	case s.is("null"):
		return nil, nil
	case s.is("object") || len(s.Properties.names) > 0:
		return f.object(s, u, root)
	case s.is("array"):
		n := 0
		if s.MinItems != nil {
			n = *s.MinItems
		}
		out := []any{}
		for range n {
			v, err := f.fill(s.Items, u, false)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case s.is("string"):
		if d := s.defaultValue(); d != nil {
			return d, nil
		}
		if s.Format == "date-time" {
			return "2026-11-01T08:00:00Z", nil
		}
		return "", nil
	case s.is("integer") || s.is("number"):
		if s.Minimum != nil {
			return *s.Minimum, nil
		}
		return 0, nil
	case s.is("boolean"):
		return false, nil
	}
	return nil, fmt.Errorf("schema of no type the fake fills: %s", s.Type)
}

func (s *schema) defaultValue() any {
	if len(s.Default) == 0 {
		return nil
	}
	var v any
	_ = json.Unmarshal(s.Default, &v)
	return v
}

func (f *filler) object(s *schema, u *unit, root bool) (any, error) {
	out := map[string]any{}
	plainGiven, refGiven, textGiven := false, false, false
	for _, name := range s.Properties.names {
		p, err := f.resolve(s.Properties.m[name])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		kind := ""
		if root && p.is("array") {
			kind = f.itemKind(p.Items)
		}
		switch {
		case kind == "plain" && !plainGiven, kind == "update" && !refGiven:
			matched := kind == "update"
			plainGiven, refGiven = plainGiven || !matched, refGiven || matched
			items := []any{}
			for i := range f.units {
				if (f.units[i].match != "") != matched {
					continue
				}
				if p.MaxItems != nil && len(items) >= *p.MaxItems {
					break
				}
				v, err := f.fill(p.Items, &f.units[i], false)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				items = append(items, v)
			}
			out[name] = items
		case u != nil && u.match != "" && isRef(name, p):
			out[name] = u.match
		case u != nil && !textGiven && freeString(p) && !isRef(name, p):
			textGiven = true
			out[name] = u.text
		case u != nil && len(u.ids) > 0 && p.is("array") && f.stringItems(p) != nil:
			it := f.stringItems(p)
			ids := []any{}
			for _, id := range u.ids {
				if len(it.Enum) == 0 || slices.Contains(it.Enum, any(id)) {
					ids = append(ids, id)
				}
			}
			out[name] = ids
		default:
			v, err := f.fill(p, u, false)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out[name] = v
		}
	}
	return out, nil
}

// isRef reports whether property name refers to an existing item.
func isRef(name string, s *schema) bool {
	return (name == "id" || strings.HasSuffix(name, "_id")) && s.is("string") && len(s.Enum) == 0
}

func (f *filler) stringItems(s *schema) *schema {
	it, err := f.resolve(s.Items)
	if err != nil || it == nil || !it.is("string") {
		return nil
	}
	return it
}

// itemKind classifies an array's items: "plain" objects (facts, creates),
// "update" objects (a reference and an array of strings: what they cite),
// or "" (anything else, deletes among them).
func (f *filler) itemKind(items *schema) string {
	it, err := f.resolve(items)
	if err != nil || it == nil || !(it.is("object") || len(it.Properties.names) > 0) {
		return ""
	}
	ref, cites := false, false
	for _, n := range it.Properties.names {
		p, err := f.resolve(it.Properties.m[n])
		if err != nil || p == nil {
			continue
		}
		ref = ref || isRef(n, p)
		cites = cites || (p.is("array") && f.stringItems(p) != nil)
	}
	switch {
	case !ref:
		return "plain"
	case cites:
		return "update"
	}
	return ""
}

func (f *filler) itemsAreObjects(s *schema) bool {
	it, err := f.resolve(s.Items)
	return err == nil && it != nil && (it.is("object") || len(it.Properties.names) > 0)
}

func freeString(s *schema) bool {
	return s.is("string") && len(s.Enum) == 0 && s.Const == nil && len(s.Default) == 0 && s.Format == ""
}

// enumIDs collects the string enums inside arrays of s: ids the schema
// pins an answer to.
func (f *filler) enumIDs(s *schema, inArray bool, seen map[*schema]bool) []string {
	s, err := f.resolve(s)
	if err != nil || s == nil || seen[s] {
		return nil
	}
	seen[s] = true
	var out []string
	if inArray && s.is("string") {
		for _, e := range s.Enum {
			if str, ok := e.(string); ok {
				out = append(out, str)
			}
		}
	}
	for _, n := range s.Properties.names {
		out = append(out, f.enumIDs(s.Properties.m[n], false, seen)...)
	}
	if s.Items != nil {
		out = append(out, f.enumIDs(s.Items, true, seen)...)
	}
	for _, a := range append(append(slices.Clone(s.AnyOf), s.OneOf...), s.AllOf...) {
		out = append(out, f.enumIDs(a, inArray, seen)...)
	}
	seen[s] = false
	return out
}

// trailingMeta is a line's closing "(key=value, …)", which Hindsight
// appends to a fact's line with its times.
var trailingMeta = regexp.MustCompile(`\s*\((\w+=[^()]*)\)\s*$`)

// labelLine is a line that is only a label ("Content:"): what follows is
// the content to extract from.
var labelLine = regexp.MustCompile(`(?m)^[A-Za-z][\w ]{0,30}:[ \t]*$`)

// unitsFor finds what a call with response schema s and user message
// user is about (see the comment at the top of this file).
func (f *filler) unitsFor(user string) []unit {
	var facts []unit
	var obs []observation
	var doc any
	isJSON := json.Unmarshal([]byte(user), &doc) == nil
	if ids := f.enumIDs(f.root, false, map[*schema]bool{}); len(ids) > 0 {
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			text := id
			for _, line := range strings.Split(user, "\n") {
				if strings.Contains(line, id) {
					t := strings.NewReplacer("["+id+"]", "", id, "").Replace(line)
					text = strings.Trim(trailingMeta.ReplaceAllString(t, ""), " \t-:*")
					break
				}
			}
			facts = append(facts, unit{ids: []string{id}, text: text})
		}
		for _, line := range strings.Split(user, "\n") {
			var v any
			if json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimSpace(line), ",")), &v) == nil {
				obs = append(obs, observations(v)...)
			}
		}
	} else if lists := idTextLists(doc, nil); isJSON && len(lists) > 0 {
		for _, o := range lists[0] {
			facts = append(facts, unit{ids: []string{o.id}, text: o.text})
		}
		for _, l := range lists[1:] {
			obs = append(obs, l...)
		}
	}
	if len(facts) > 0 {
		return group(facts, obs)
	}
	content := user
	if locs := labelLine.FindAllStringIndex(user, -1); len(locs) > 0 {
		content = user[locs[len(locs)-1][1]:]
	}
	var out []unit
	for _, s := range Sentences(content) {
		out = append(out, unit{text: s})
	}
	return out
}

// sameText is the key under which two texts say the same thing.
func sameText(s string) string {
	return strings.TrimRight(strings.ToLower(strings.Join(strings.Fields(s), " ")), ".!?。！？ ")
}

// group folds facts that say the same thing into one unit and matches
// each unit with the observation that already says it.
func group(facts []unit, obs []observation) []unit {
	var out []unit
	at := map[string]int{}
	for _, u := range facts {
		k := sameText(u.text)
		if i, ok := at[k]; ok {
			out[i].ids = append(out[i].ids, u.ids...)
			continue
		}
		at[k] = len(out)
		out = append(out, u)
	}
	for i := range out {
		for _, o := range obs {
			if sameText(o.text) == sameText(out[i].text) && (o.forFacts == nil || slices.Contains(o.forFacts, out[i].ids[0])) {
				out[i].match = o.id
				break
			}
		}
	}
	return out
}

// observations returns the objects of v holding string "id" and "text".
func observations(v any) []observation {
	var out []observation
	switch x := v.(type) {
	case map[string]any:
		if o, ok := asObservation(x); ok {
			return []observation{o}
		}
	case []any:
		for _, e := range x {
			if m, ok := e.(map[string]any); ok {
				if o, ok := asObservation(m); ok {
					out = append(out, o)
				}
			}
		}
	}
	return out
}

func asObservation(m map[string]any) (observation, bool) {
	id, ok1 := m["id"].(string)
	text, ok2 := m["text"].(string)
	if !ok1 || !ok2 {
		return observation{}, false
	}
	o := observation{id: id, text: text}
	for _, v := range m {
		if l, ok := v.([]any); ok && len(l) > 0 {
			if _, ok := l[0].(string); ok {
				for _, e := range l {
					if s, ok := e.(string); ok {
						o.forFacts = append(o.forFacts, s)
					}
				}
			}
		}
	}
	return o, true
}

// idTextLists returns the lists (keys in sorted order, depth first) of
// objects holding string "id" and "text".
func idTextLists(v any, acc [][]observation) [][]observation {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			acc = idTextLists(x[k], acc)
		}
	case []any:
		if l := observations(x); len(l) > 0 {
			return append(acc, l)
		}
		for _, e := range x {
			acc = idTextLists(e, acc)
		}
	}
	return acc
}

// answerSchema returns the JSON answer to a call whose response_format
// carries schema raw, and how many units it answered for.
func answerSchema(raw json.RawMessage, user string) ([]byte, int, error) {
	var s schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, 0, fmt.Errorf("response schema: %w", err)
	}
	f := &filler{root: &s}
	f.units = f.unitsFor(user)
	v, err := f.fill(&s, nil, true)
	if err != nil {
		return nil, 0, err
	}
	b, err := json.Marshal(v)
	return b, len(f.units), err
}
