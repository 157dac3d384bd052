package eval

import (
	"context"
	"testing"
)

func TestMissesListExactlyTheTurnLevelFailures(t *testing.T) {
	d, err := Generate(Small())
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder(keywordRecaller{turnsByBank(d)})
	rep, err := Run(context.Background(), d, rec, RunOptions{Name: "keyword", Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	want, fresh := 0, 0
	for _, q := range rep.Questions {
		if !q.Abstention && q.Turn.RecallAny10 == 0 {
			want++
		} else if !q.Abstention && q.Type == TypeKnowledgeUpdate && !q.UpdateCorrect {
			fresh++
		}
	}
	if want == 0 {
		t.Fatal("the keyword stand-in missed nothing; the test needs misses to check")
	}
	ms := Misses(d, rep, rec, 3)
	if len(ms) != want+fresh {
		t.Fatalf("%d misses, want %d at turn level and %d fresh-first", len(ms), want, fresh)
	}
	for _, m := range ms {
		if m.Kind == MissFreshFirst {
			if m.Type != TypeKnowledgeUpdate {
				t.Errorf("fresh-first miss %s has type %s", m.ID, m.Type)
			}
			continue
		}
		if m.Kind != MissTurnLevel {
			t.Errorf("miss %s has kind %q", m.ID, m.Kind)
		}
		if len(m.Evidence) == 0 || m.Evidence[0].Text == "" {
			t.Errorf("miss %s has no evidence text: %+v", m.ID, m.Evidence)
		}
		if len(m.Top) > 3 {
			t.Errorf("miss %s has %d results, want at most 3", m.ID, len(m.Top))
		}
		for _, r := range m.Top[:min(len(m.Top), 10)] {
			for _, ev := range m.Evidence {
				if r.SessionID == ev.SessionID && r.TurnIndex == ev.TurnIndex {
					t.Errorf("miss %s lists an evidence turn among its top results", m.ID)
				}
			}
		}
	}
}
