package eval

import (
	"strings"
	"testing"
)

func TestEvidenceCoverage(t *testing.T) {
	d, err := Generate(Small())
	if err != nil {
		t.Fatal(err)
	}
	stored := map[Evidence]bool{}
	answerable := 0
	var multi *Question
	for i, q := range d.Questions {
		if q.Abstention || q.Part != PartTuning {
			continue
		}
		answerable++
		for _, ev := range q.Evidence {
			stored[ev] = true
		}
		if multi == nil && len(q.Evidence) > 1 {
			multi = &d.Questions[i]
		}
	}
	if multi == nil {
		t.Fatal("small dataset has no multi-evidence question")
	}
	full := EvidenceCoverage(d, stored, PartTuning)
	if full.Overall.Answerable != answerable || full.Overall.AnyStored != answerable || full.Overall.AllStored != answerable ||
		full.StoredTurns != full.EvidenceTurns || len(full.Lost) != 0 {
		t.Fatalf("with every evidence turn stored: %+v", full.Overall)
	}
	// Drop one evidence turn of a multi-session question: it still has
	// some evidence stored, but no longer all of it.
	lost := multi.Evidence[0]
	delete(stored, lost)
	c := EvidenceCoverage(d, stored, PartTuning)
	if c.StoredTurns != c.EvidenceTurns-1 {
		t.Errorf("stored turns %d of %d, want one lost", c.StoredTurns, c.EvidenceTurns)
	}
	if c.Overall.AnyStored != answerable || c.Overall.AllStored != answerable-1 {
		t.Errorf("overall %+v, want any=%d all=%d", c.Overall, answerable, answerable-1)
	}
	if len(c.Lost) != 1 || c.Lost[0].Evidence != lost || c.Lost[0].Text == "" {
		t.Errorf("lost = %+v, want %v with its text", c.Lost, lost)
	}
	md := c.Markdown()
	if !strings.Contains(md, c.Lost[0].Text) || !strings.Contains(md, "| "+multi.Type+" |") {
		t.Errorf("markdown lacks the lost turn or the type row:\n%s", md)
	}
	// Nothing stored: no question can be answered at turn level.
	none := EvidenceCoverage(d, nil, "")
	if none.Overall.AnyStored != 0 || none.StoredTurns != 0 {
		t.Errorf("with nothing stored: %+v", none.Overall)
	}
	// The held-out part's lost turns are counted, never listed.
	held := EvidenceCoverage(d, nil, PartHeldOut)
	if held.EvidenceTurns == 0 || len(held.Lost) != 0 {
		t.Errorf("held-out coverage lists %d lost turns of %d", len(held.Lost), held.EvidenceTurns)
	}
}
