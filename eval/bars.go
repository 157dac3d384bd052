package eval

import (
	"fmt"
	"strings"
)

// Bar is one quality target of the current round and whether a report
// meets it.
type Bar struct {
	Name     string  `json:"name"`
	Target   float64 `json:"target"`
	Measured float64 `json:"measured"`
	// Questions is how many questions the measurement averages over; a
	// bar over no questions is not met.
	Questions int  `json:"questions"`
	Met       bool `json:"met"`
}

// QualityBars checks a report against the bars of the quality issue
// (offline providers, full run): overall turn-level recall_any@10 ≥ 0.85,
// knowledge-update correctness ≥ 0.8, temporal-reasoning and
// cross-lingual-alias turn-level recall_any@10 ≥ 0.75. Turn level is the
// strict reading: session level would credit a result from the right
// conversation that does not hold the answer.
func QualityBars(r Report) []Bar {
	typ := func(t string) Metrics { m, _ := r.byType(t); return m }
	ku := typ(TypeKnowledgeUpdate)
	tr := typ(TypeTemporalReasoning)
	cl := typ(TypeCrossLingualAlias)
	bars := []Bar{
		{Name: "overall turn recall_any@10", Target: 0.85, Measured: r.Overall.Turn.RecallAny10, Questions: r.Overall.Answerable},
		{Name: "knowledge-update correctness", Target: 0.80, Measured: ku.KnowledgeUpdateAccuracy, Questions: ku.KnowledgeUpdates},
		{Name: "temporal-reasoning turn recall_any@10", Target: 0.75, Measured: tr.Turn.RecallAny10, Questions: tr.Answerable},
		{Name: "cross-lingual-alias turn recall_any@10", Target: 0.75, Measured: cl.Turn.RecallAny10, Questions: cl.Answerable},
	}
	for i := range bars {
		bars[i].Met = bars[i].Questions > 0 && bars[i].Measured >= bars[i].Target
	}
	return bars
}

// BarsMarkdown renders the bars as a table with the gap of each missed one.
func BarsMarkdown(bars []Bar) string {
	var b strings.Builder
	b.WriteString("## Quality bars\n\n| bar | target | measured | verdict |\n|---|---:|---:|---|\n")
	for _, x := range bars {
		verdict := "met"
		switch {
		case x.Questions == 0:
			verdict = "no questions"
		case !x.Met:
			verdict = fmt.Sprintf("missed by %.3f", x.Target-x.Measured)
		}
		fmt.Fprintf(&b, "| %s | ≥ %.2f | %.3f | %s |\n", x.Name, x.Target, x.Measured, verdict)
	}
	return b.String()
}
