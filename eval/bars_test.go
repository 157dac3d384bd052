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
	r.Overall.Turn.RecallAny10 = 0.91
	r.ByType[1].Turn.RecallAny10 = 0.85
	bm25 := Arm{Name: BaselineBM25, Report: Report{Overall: Metrics{Turn: Retrieval{RecallAny10: 0.91}}}}
	dense := Arm{Name: BaselineDense, Report: Report{Overall: Metrics{Turn: Retrieval{RecallAny10: 0.5}}}}
	bars := QualityBars(r, bm25, dense)
	want := []struct {
		met      bool
		measured float64
	}{{true, 0.91}, {false, 0.5}, {true, 0.85}, {false, 0}, {false, 0.91}, {true, 0.91}}
	if len(bars) != len(want) {
		t.Fatalf("%d bars, want %d", len(bars), len(want))
	}
	for i, w := range want {
		if bars[i].Met != w.met || bars[i].Measured != w.measured {
			t.Errorf("bar %s = %+v, want met=%v measured=%v", bars[i].Name, bars[i], w.met, w.measured)
		}
	}
	md := BarsMarkdown(bars)
	for _, s := range []string{"missed by 0.400", "| temporal-reasoning turn recall_any@10 | ≥ 0.850 | 0.850 | met |", "no questions",
		"| overall turn recall_any@10 ahead of BM25 over raw turns | > 0.910 | 0.910 | missed: behind by 0.000 |"} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q:\n%s", s, md)
		}
	}
}

func TestCompareBaselinesSaysWhereMemstreamIsNotAhead(t *testing.T) {
	main := Report{
		Overall: Metrics{Type: OverallType, Answerable: 20, Turn: Retrieval{RecallAny10: 0.8}},
		ByType: []Metrics{
			{Type: TypeSingleSessionUser, Answerable: 10, Turn: Retrieval{RecallAny10: 0.9}},
			{Type: TypeTemporalReasoning, Answerable: 10, Turn: Retrieval{RecallAny10: 0.7}},
			{Type: TypeAbstention},
		},
	}
	bm := Arm{Name: BaselineBM25, Report: Report{Overall: Metrics{Turn: Retrieval{RecallAny10: 0.6}}, ByType: []Metrics{
		{Type: TypeSingleSessionUser, Answerable: 10, Turn: Retrieval{RecallAny10: 0.9}},
		{Type: TypeTemporalReasoning, Answerable: 10, Turn: Retrieval{RecallAny10: 0.5}},
	}}}
	cs := CompareBaselines(main, []Arm{bm})
	if len(cs) != 3 {
		t.Fatalf("%d rows, want 3 (two answerable types and overall): %+v", len(cs), cs)
	}
	if len(cs[0].Behind) != 1 || len(cs[1].Behind) != 0 || len(cs[2].Behind) != 0 {
		t.Errorf("behind = %v %v %v; want only the tie on %s", cs[0].Behind, cs[1].Behind, cs[2].Behind, TypeSingleSessionUser)
	}
	md := BaselinesMarkdown(main, []Arm{bm})
	if !strings.Contains(md, "| single-session-user | 0.900 | 0.900 | **not ahead of BM25 over raw turns** |") {
		t.Errorf("markdown does not flag the tie:\n%s", md)
	}
}
