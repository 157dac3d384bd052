package eval

import (
	"strings"
	"testing"
)

func TestQualityBars(t *testing.T) {
	r := Report{
		Overall: Metrics{Type: OverallType, Answerable: 100, Turn: Retrieval{RecallAny10: 0.86}},
		ByType: []Metrics{
			{Type: TypeKnowledgeUpdate, Answerable: 10, KnowledgeUpdates: 10, KnowledgeUpdateAccuracy: 0.5},
			{Type: TypeTemporalReasoning, Answerable: 10, Turn: Retrieval{RecallAny10: 0.75}},
		},
	}
	bars := QualityBars(r)
	want := []struct {
		met      bool
		measured float64
	}{{true, 0.86}, {false, 0.5}, {true, 0.75}, {false, 0}}
	if len(bars) != len(want) {
		t.Fatalf("%d bars, want %d", len(bars), len(want))
	}
	for i, w := range want {
		if bars[i].Met != w.met || bars[i].Measured != w.measured {
			t.Errorf("bar %s = %+v, want met=%v measured=%v", bars[i].Name, bars[i], w.met, w.measured)
		}
	}
	md := BarsMarkdown(bars)
	for _, s := range []string{"missed by 0.300", "| temporal-reasoning turn recall_any@10 | ≥ 0.75 | 0.750 | met |", "no questions"} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q:\n%s", s, md)
		}
	}
}
