package eval

import (
	"fmt"
	"strings"
)

// TypeCoverage is how much of one question type's evidence ingestion kept.
type TypeCoverage struct {
	Type string `json:"type"`
	// Answerable is the number of answerable questions of the type.
	Answerable int `json:"answerable"`
	// AnyStored counts the questions with at least one evidence turn that
	// produced a stored fact: the ceiling of turn-level recall_any@k, since
	// recall cannot return a turn the pipeline dropped.
	AnyStored int `json:"any_stored"`
	// AllStored counts the questions whose every evidence turn did.
	AllStored int `json:"all_stored"`
}

// Coverage separates ingestion losses from ranking losses: a miss whose
// evidence turn was never stored is the extractor's, not recall's.
type Coverage struct {
	// EvidenceTurns and StoredTurns count distinct evidence turns and how
	// many of them have a stored fact.
	EvidenceTurns int            `json:"evidence_turns"`
	StoredTurns   int            `json:"stored_turns"`
	ByType        []TypeCoverage `json:"by_type"`
	Overall       TypeCoverage   `json:"overall"`
	// Lost lists evidence turns without a stored fact (at most 20), with
	// their text, for the report.
	Lost []MissTurn `json:"lost,omitempty"`
}

// EvidenceCoverage checks every answerable question of one part (all
// parts when part is empty) against the source turns of the stored facts.
// stored holds the (session, turn) of every fact; facts of unknown turn
// are not in it. The lost turns are listed with their text only for the
// tuning part: the held-out part is not read turn by turn.
func EvidenceCoverage(d *Dataset, stored map[Evidence]bool, part string) Coverage {
	var c Coverage
	seen := map[Evidence]bool{}
	byType := map[string]*TypeCoverage{}
	c.Overall.Type = OverallType
	for _, q := range d.Questions {
		if part != "" && q.Part != part {
			continue
		}
		if q.Abstention || len(q.Evidence) == 0 {
			continue
		}
		tc := byType[q.Type]
		if tc == nil {
			tc = &TypeCoverage{Type: q.Type}
			byType[q.Type] = tc
		}
		n := 0
		for _, ev := range q.Evidence {
			if stored[ev] {
				n++
			}
			if seen[ev] {
				continue
			}
			seen[ev] = true
			c.EvidenceTurns++
			if stored[ev] {
				c.StoredTurns++
			} else if len(c.Lost) < 20 && Tunable(q.Part) {
				msg, _ := d.Turn(ev)
				c.Lost = append(c.Lost, MissTurn{Evidence: ev, Text: msg.Content})
			}
		}
		for _, t := range []*TypeCoverage{tc, &c.Overall} {
			t.Answerable++
			if n > 0 {
				t.AnyStored++
			}
			if n == len(q.Evidence) {
				t.AllStored++
			}
		}
	}
	for _, t := range Types {
		if tc := byType[t]; tc != nil {
			c.ByType = append(c.ByType, *tc)
		}
	}
	return c
}

// Markdown renders the coverage as a table with the lost turns below it.
func (c Coverage) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Evidence stored by ingestion\n\n%d of %d evidence turns produced at least one stored fact. "+
		"\"any stored\" is the ceiling of turn-level recall_any@k.\n\n", c.StoredTurns, c.EvidenceTurns)
	b.WriteString("| type | answerable | any evidence stored | all evidence stored |\n|---|---:|---:|---:|\n")
	for _, t := range append(append([]TypeCoverage(nil), c.ByType...), c.Overall) {
		if t.Answerable == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %.3f | %.3f |\n", t.Type, t.Answerable,
			float64(t.AnyStored)/float64(t.Answerable), float64(t.AllStored)/float64(t.Answerable))
	}
	if len(c.Lost) > 0 {
		b.WriteString("\nEvidence turns with no stored fact (first ones):\n\n")
		for _, l := range c.Lost {
			fmt.Fprintf(&b, "- %s#%d: %s\n", l.SessionID, l.TurnIndex, l.Text)
		}
	}
	return b.String()
}
