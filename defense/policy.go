package defense

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Action is what happens to a finding.
type Action string

// Actions. Redact is the default because losing a token's value is cheap,
// while remembering it means replaying it into every future recall.
const (
	ActionAllow  Action = "allow"
	ActionRedact Action = "redact"
	ActionBlock  Action = "block"
)

func (a Action) valid() bool {
	return a == ActionAllow || a == ActionRedact || a == ActionBlock
}

// Policy decides the action per finding. It is stored as JSONB on the bank
// row and edited through the bank API, so the JSON shape is a contract. The
// most specific rule wins: Labels, then Categories, then Default, then
// redact.
type Policy struct {
	Default     Action            `json:"default,omitempty"`
	Categories  map[string]Action `json:"categories,omitempty"`
	Labels      map[string]Action `json:"labels,omitempty"`
	EnableEmail bool              `json:"enable_email,omitempty"`
	EnablePhone bool              `json:"enable_phone,omitempty"`
}

// DefaultPolicy redacts everything the default detectors find.
func DefaultPolicy() Policy { return Policy{Default: ActionRedact} }

// Validate rejects unknown actions, labels and categories, naming the field,
// so a typo such as "aws_secret_key" fails at the bank API instead of
// silently never matching.
func (p Policy) Validate() error {
	if p.Default != "" && !p.Default.valid() {
		return fmt.Errorf("policy.default: unknown action %q (want allow, redact or block)", p.Default)
	}
	labels, cats := knownNames()
	for _, k := range sortedKeys(p.Categories) {
		if !cats[k] {
			return fmt.Errorf("policy.categories[%q]: unknown category", k)
		}
		if a := p.Categories[k]; !a.valid() {
			return fmt.Errorf("policy.categories[%q]: unknown action %q", k, a)
		}
	}
	for _, k := range sortedKeys(p.Labels) {
		if !labels[k] {
			return fmt.Errorf("policy.labels[%q]: unknown label", k)
		}
		if a := p.Labels[k]; !a.valid() {
			return fmt.Errorf("policy.labels[%q]: unknown action %q", k, a)
		}
	}
	return nil
}

func sortedKeys(m map[string]Action) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// ActionFor resolves the action for one label and category.
func (p Policy) ActionFor(label, category string) Action {
	if a, ok := p.Labels[label]; ok {
		return a
	}
	if a, ok := p.Categories[category]; ok {
		return a
	}
	if p.Default != "" {
		return p.Default
	}
	return ActionRedact
}

// Result is the outcome of applying a policy to one text.
type Result struct {
	// Text has every redacted or blocked finding replaced by
	// "[REDACTED:<label>]". Blocked findings are masked too, so a caller
	// that ignores the error still cannot persist the secret.
	Text string `json:"text"`
	// Findings carry offsets into the input text, not into Text.
	Findings      []Finding `json:"findings,omitempty"`
	Blocked       bool      `json:"blocked"`
	BlockedLabels []string  `json:"blocked_labels,omitempty"`
}

// ErrBlocked matches (errors.Is) every *BlockedError.
var ErrBlocked = errors.New("content blocked by defense policy")

// BlockedError reports which labels blocked a text. It carries labels only:
// its message is safe to return to the HTTP client (422) and to log.
type BlockedError struct {
	Labels []string
}

// Error names the blocking labels, never the matched text.
func (e *BlockedError) Error() string {
	return ErrBlocked.Error() + ": " + strings.Join(e.Labels, ", ")
}

// Is makes errors.Is(err, ErrBlocked) true.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

// RedactionMarker is the replacement text for a redacted finding. It keeps
// the label so recall still says what kind of thing was there.
func RedactionMarker(label string) string { return "[REDACTED:" + label + "]" }

// Apply scans text and enforces p. It returns a *BlockedError (with the
// Result still filled in) when any finding's action is block, and a plain
// error when the policy itself is invalid.
func (s *Scanner) Apply(text string, p Policy) (Result, error) {
	if err := p.Validate(); err != nil {
		return Result{}, err
	}
	findings := s.scan(text, s.cfg.EnableEmail || p.EnableEmail, s.cfg.EnablePhone || p.EnablePhone)
	res := Result{Text: text, Findings: findings}
	if len(findings) == 0 {
		return res, nil
	}
	var b strings.Builder
	last := 0
	for i := range findings {
		f := &findings[i]
		f.Action = p.ActionFor(f.Label, f.Category)
		if f.Action == ActionAllow {
			continue
		}
		if f.Action == ActionBlock && !slices.Contains(res.BlockedLabels, f.Label) {
			res.BlockedLabels = append(res.BlockedLabels, f.Label)
		}
		if b.Cap() == 0 {
			b.Grow(len(text))
		}
		b.WriteString(text[last:f.Start])
		b.WriteString(RedactionMarker(f.Label))
		last = f.End
	}
	if b.Cap() > 0 {
		b.WriteString(text[last:])
		res.Text = b.String()
	}
	if len(res.BlockedLabels) > 0 {
		sort.Strings(res.BlockedLabels)
		res.Blocked = true
		return res, &BlockedError{Labels: slices.Clone(res.BlockedLabels)}
	}
	return res, nil
}

// MergePolicy overlays a bank's stored policy JSON on the base policy. A
// bank stores only what it changes, so a later change of the base (the
// configuration) still reaches every bank that did not override it.
func MergePolicy(base Policy, raw json.RawMessage) (Policy, error) {
	p := base
	if len(raw) == 0 || string(raw) == "{}" || string(raw) == "null" {
		return p, nil
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return base, fmt.Errorf("defense policy: %w", err)
	}
	if err := p.Validate(); err != nil {
		return base, err
	}
	return p, nil
}

// RedactAll masks every finding in text, the opt-in detectors (email,
// phone) included when the scanner has them, whatever any bank's policy
// says: for showing raw records, such as dead letters, to an operator.
func (s *Scanner) RedactAll(text string) string {
	res, _ := s.Apply(text, Policy{Default: ActionRedact, EnableEmail: true, EnablePhone: true})
	return res.Text
}
