package eval

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Variant is one recall configuration of an ablation: the request fields
// that differ from the baseline. Empty fields mean the server's defaults.
type Variant struct {
	// Name labels the row of the ablation table.
	Name string
	// Arms, Fusion and Types go into the recall request as they are.
	Arms   []string
	Fusion string
	Types  []string
	// Off switches ranking heuristics off by name (the recall request's
	// heuristics_off).
	Off []string
	// Collapse wraps the recaller in Collapse (a client-side what-if).
	Collapse bool
}

// Heuristics are memstream's switchable ranking heuristics (recall's
// Heuristics); the ablation runs once with each one off, so each has to
// show what it is worth on the held-out part.
var Heuristics = []string{"dedupe", "recency", "query_form", "query_centre", "arm_weights", "present", "change"}

// RecallArms are the retrieval arms of memstream's recall, in the order
// the ablation table lists them.
var RecallArms = []string{"semantic", "keyword", "graph", "temporal"}

// AblationVariants lists the configurations the ablation compares with
// the baseline run (all arms, RRF, every fact type), which is not in the
// list because the caller has already measured it: each arm alone, the
// other fusion method, and recall without consolidated observations. Reranking is
// absent because memstream's recall has no reranker yet; the report says so
// rather than printing a row that would only repeat the baseline.
func AblationVariants() []Variant {
	var vs []Variant
	for _, a := range RecallArms {
		vs = append(vs, Variant{Name: a + " only", Arms: []string{a}})
	}
	vs = append(vs,
		Variant{Name: "all arms, interleave", Fusion: "interleave"},
		// Without observations: world and experience facts only.
		Variant{Name: "no observations", Types: []string{"world", "experience"}},
	)
	for _, h := range Heuristics {
		vs = append(vs, Variant{Name: "heuristic off: " + h, Off: []string{h}})
	}
	vs = append(vs, Variant{Name: "all heuristics off", Off: Heuristics})
	return vs
}

// ParseJointOff reads sets of heuristics to switch off together: sets
// separated by commas, names within a set by "+". Every name must be one
// of Heuristics and a set must name at least two.
func ParseJointOff(s string) ([][]string, error) {
	var out [][]string
	for _, set := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		names := strings.Split(set, "+")
		if len(names) < 2 {
			return nil, fmt.Errorf("%q: a set names two heuristics or more, joined by +", set)
		}
		for _, n := range names {
			if !slices.Contains(Heuristics, n) {
				return nil, fmt.Errorf("%q is not a heuristic (%s)", n, strings.Join(Heuristics, ", "))
			}
		}
		out = append(out, names)
	}
	return out, nil
}

// JointVariants are the ablation rows of sets of heuristics off together.
func JointVariants(sets [][]string) []Variant {
	var vs []Variant
	for _, set := range sets {
		vs = append(vs, Variant{Name: "heuristics off: " + strings.Join(set, "+"), Off: set})
	}
	return vs
}

// Collapse wraps a Recaller and drops every result whose text, after
// trimming and case folding, repeats a higher-ranked one. It is a what-if
// for the ablation, not a fix: memstream stores small talk that recurs
// across sessions ("Good to know!") as separate facts, and when recall
// returns all copies they push the evidence out of the top ten. Running
// the same questions through Collapse measures what collapsing them inside
// recall would gain.
type Collapse struct{ Inner Recaller }

// Recall asks the inner recaller and keeps the first result of each text.
func (c Collapse) Recall(ctx context.Context, bankID, query string, queryTime time.Time) ([]Retrieved, time.Duration, error) {
	res, took, err := c.Inner.Recall(ctx, bankID, query, queryTime)
	if err != nil {
		return nil, took, err
	}
	seen := make(map[string]bool, len(res))
	out := res[:0:0]
	for _, r := range res {
		k := strings.ToLower(strings.TrimSpace(r.Text))
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, r)
	}
	return out, took, nil
}
