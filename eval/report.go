package eval

import (
	"fmt"
	"math"
	"strings"
)

// Markdown renders the report as tables for a pull request or an issue:
// turn-level and session-level ranking per type, then answer quality and
// cost. Numbers have fixed precision so that the output can be diffed.
func (r Report) Markdown() string {
	var b strings.Builder
	name := r.Name
	if name == "" {
		name = "unnamed run"
	}
	fmt.Fprintf(&b, "## memstream eval: %s\n\n", name)
	budget := "all results"
	if r.TokenBudget > 0 {
		budget = fmt.Sprintf("%d tokens", r.TokenBudget)
	}
	threshold := "none (no answerable results)"
	if r.AbstentionThreshold > -math.MaxFloat64 {
		threshold = fmt.Sprintf("%.3f (p%g of answerable top scores)", r.AbstentionThreshold, r.AbstentionPercentile)
	}
	fmt.Fprintf(&b, "Questions: %d (%d answerable). Context budget: %s. Abstention threshold: %s.\n",
		r.Overall.Questions, r.Overall.Answerable, budget, threshold)

	rows := append(append([]Metrics(nil), r.ByType...), r.Overall)
	for _, level := range []string{"Turn", "Session"} {
		fmt.Fprintf(&b, "\n### %s level\n\n", level)
		b.WriteString("| type | answerable | recall_any@1 | recall_any@5 | recall_any@10 | recall_all@10 | NDCG@10 | MRR |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, m := range rows {
			x := m.Turn
			if level == "Session" {
				x = m.Session
			}
			if m.Answerable == 0 {
				fmt.Fprintf(&b, "| %s | 0 | – | – | – | – | – | – |\n", m.Type)
				continue
			}
			fmt.Fprintf(&b, "| %s | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n",
				m.Type, m.Answerable, x.RecallAny1, x.RecallAny5, x.RecallAny10, x.RecallAll10, x.NDCG10, x.MRR)
		}
	}
	b.WriteString("\n### Answers and cost\n\n")
	b.WriteString("| type | questions | answer-in-context | update correct | abstention false-answer | tokens/query | p50 ms | p95 ms |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, m := range rows {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %.1f | %.1f | %.1f |\n",
			m.Type, m.Questions,
			ratio(m.AnswerInContext, m.Answerable),
			ratio(m.KnowledgeUpdateAccuracy, m.KnowledgeUpdates),
			ratio(m.AbstentionFalseRate, m.Abstentions),
			m.MeanTokens, m.LatencyP50MS, m.LatencyP95MS)
	}
	return b.String()
}

// ratio prints a dash where a metric has no questions, so "0.000" always
// means measured and bad.
func ratio(v float64, n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3f", v)
}

// Arm is one named configuration in an ablation, for example "semantic
// only" or "rrf".
type Arm struct {
	Name   string `json:"name"`
	Report Report `json:"report"`
}

// AblationMarkdown compares arms against the first one, the baseline
// (usually "all arms"). Each cell shows the arm's value and its difference
// from the baseline, so that the effect of removing or swapping one recall
// component reads off directly.
func AblationMarkdown(arms []Arm) string {
	var b strings.Builder
	if len(arms) == 0 {
		return "No arms to compare.\n"
	}
	base := arms[0].Report.Overall
	fmt.Fprintf(&b, "## Ablation (baseline: %s)\n\n", arms[0].Name)
	b.WriteString("| arm | turn recall_any@10 | session recall_any@10 | turn NDCG@10 | turn MRR | answer-in-context | update correct | abstention false-answer | tokens/query | p95 ms |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, a := range arms {
		m := a.Report.Overall
		cell := func(v, bv float64, format string) string {
			s := fmt.Sprintf(format, v)
			if i == 0 {
				return s
			}
			return s + " (" + fmt.Sprintf("%+"+format[1:], v-bv) + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", a.Name,
			cell(m.Turn.RecallAny10, base.Turn.RecallAny10, "%.3f"),
			cell(m.Session.RecallAny10, base.Session.RecallAny10, "%.3f"),
			cell(m.Turn.NDCG10, base.Turn.NDCG10, "%.3f"),
			cell(m.Turn.MRR, base.Turn.MRR, "%.3f"),
			cell(m.AnswerInContext, base.AnswerInContext, "%.3f"),
			cell(m.KnowledgeUpdateAccuracy, base.KnowledgeUpdateAccuracy, "%.3f"),
			cell(m.AbstentionFalseRate, base.AbstentionFalseRate, "%.3f"),
			cell(m.MeanTokens, base.MeanTokens, "%.1f"),
			cell(m.LatencyP95MS, base.LatencyP95MS, "%.1f"))
	}

	b.WriteString("\n### Turn recall_any@10 by type\n\n| arm |")
	var types []string
	for _, t := range Types {
		if m, ok := arms[0].Report.byType(t); ok && m.Answerable > 0 {
			types = append(types, t)
		}
	}
	for _, t := range types {
		b.WriteString(" " + t + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(types)) + "\n")
	for i, a := range arms {
		b.WriteString("| " + a.Name + " |")
		for _, t := range types {
			bm, _ := arms[0].Report.byType(t)
			m, ok := a.Report.byType(t)
			switch {
			case !ok:
				b.WriteString(" – |")
			case i == 0:
				fmt.Fprintf(&b, " %.3f |", m.Turn.RecallAny10)
			default:
				fmt.Fprintf(&b, " %.3f (%+.3f) |", m.Turn.RecallAny10, m.Turn.RecallAny10-bm.Turn.RecallAny10)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (r Report) byType(t string) (Metrics, bool) {
	for _, m := range r.ByType {
		if m.Type == t {
			return m, true
		}
	}
	return Metrics{}, false
}
