package eval

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// loadHindsightSample reads a recall Hindsight 1.1.0 answered in its
// chunks mode (testdata/hindsight/recall.json) and the tuning events it
// was retained from as HindsightItemOf renders them (events.json): two
// session items of tune-en-000 and four per-message items of
// tune-en-001-s00; three of them came back.
func loadHindsightSample(t *testing.T) (*Dataset, apiRecallResponse) {
	t.Helper()
	var d Dataset
	var out apiRecallResponse
	for file, v := range map[string]any{"testdata/hindsight/events.json": &d.Events, "testdata/hindsight/recall.json": &out} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	return &d, out
}

func TestHindsightItemOfGivesPerMessageItemsTheirOwnDocument(t *testing.T) {
	d, _ := loadHindsightSample(t)
	var docs []string
	for _, e := range d.Events {
		it := HindsightItemOf(e)
		if it.Content != RetainItemOf(e).Content {
			t.Errorf("event %s: content differs from memstream's item", e.EventID)
		}
		docs = append(docs, it.DocumentID)
	}
	want := []string{"tune-en-000-s00", "tune-en-000-s01", "tune-en-001-s00#0", "tune-en-001-s00#1", "tune-en-001-s00#2", "tune-en-001-s00#3"}
	if !slices.Equal(docs, want) {
		t.Fatalf("document ids %v, want %v (Hindsight replaces a document named again)", docs, want)
	}
}

func TestHindsightRecallMapsChunksToTurns(t *testing.T) {
	d, out := loadHindsightSample(t)
	got := NewHindsightRecaller(nil, NewChunkTurns(d)).results(out)
	if len(got) != 3 {
		t.Fatalf("%d results, want the sample's 3", len(got))
	}
	// A session item's chunk holds all 16 turns of tune-en-000-s01.
	s := got[0]
	if s.SessionID != "tune-en-000-s01" || s.TurnIndex != UnknownTurn || len(s.Sources) != 16 {
		t.Fatalf("session chunk: session %q turn %d, %d sources; want tune-en-000-s01, unknown, 16", s.SessionID, s.TurnIndex, len(s.Sources))
	}
	for i, ev := range s.Sources {
		if ev != (Evidence{SessionID: "tune-en-000-s01", TurnIndex: i}) {
			t.Errorf("source %d is %+v", i, ev)
		}
	}
	if s.Score <= 0 || s.ID == "" {
		t.Errorf("session chunk lost its id or score: %+v", s)
	}
	// A per-message item is its one turn, read from "<session>#<turn>".
	m := got[1]
	if m.SessionID != "tune-en-001-s00" || m.TurnIndex != 1 || len(m.Sources) != 0 {
		t.Fatalf("per-message chunk: session %q turn %d sources %v; want tune-en-001-s00, 1, none", m.SessionID, m.TurnIndex, m.Sources)
	}
	if o := got[2]; o.SessionID != "tune-en-000-s00" || len(o.Sources) != 6 {
		t.Fatalf("third result: session %q, %d sources; want tune-en-000-s00's 6 turns", o.SessionID, len(o.Sources))
	}
	// Scored, the session chunk finds an evidence turn at rank 1.
	q := Question{ID: "q", Type: TypeSingleSessionUser, Evidence: []Evidence{{SessionID: "tune-en-000-s01", TurnIndex: 9}}}
	if r := scoreQuestion(q, &Answer{QuestionID: "q", Results: got}, 0); r.Turn.RecallAny1 != 1 {
		t.Errorf("turn recall_any@1 %v, want 1 for a chunk holding the evidence turn", r.Turn.RecallAny1)
	}
}

func TestChunkTurnsCreditsCutLinesOnlyWhenLongEnough(t *testing.T) {
	d, _ := loadHindsightSample(t)
	c := NewChunkTurns(d)
	lines := c.lines["tune-en-000-s01"]
	// A chunk boundary inside turn 4's line, and one leaving a short tail
	// of turn 5's ("[time] Assistant (assistant): Lowering …").
	l4, l5 := lines[4], lines[5]
	text := l4[len(l4)/2:] + "\n" + l5[:10]
	if _, turns := c.Turns("tune-en-000-s01", text); !slices.Equal(turns, []int{4}) {
		t.Fatalf("turns %v, want [4]: half of a line credits it, ten characters do not", turns)
	}
	if _, turns := c.Turns("tune-en-000-s01", strings.Join(lines[2:4], " ")); !slices.Equal(turns, []int{2, 3}) {
		t.Fatalf("turns %v, want [2 3] for two whole lines joined by a space", turns)
	}
	if s, turns := c.Turns("unknown-doc#3", "x"); s != "unknown-doc#3" || len(turns) != 0 {
		t.Fatalf("an unknown document maps to %q %v, want itself and no turn", s, turns)
	}
}

func TestBenchmarkConfigTargetHindsightNeedsRetainAndNoAblation(t *testing.T) {
	deps := BenchmarkDeps{Produce: func(context.Context, string) (int, error) { return 0, nil }}
	for _, tc := range []struct {
		name string
		cfg  BenchmarkConfig
		want string // part of the error; empty for none
	}{
		{"retain", BenchmarkConfig{Ingest: IngestRetain}, ""},
		{"kafka", BenchmarkConfig{Ingest: IngestKafka}, "--ingest retain"},
		{"ablation", BenchmarkConfig{Ingest: IngestRetain, Ablation: true}, "ablate"},
		{"arms", BenchmarkConfig{Ingest: IngestRetain, Arms: []string{"semantic"}}, "ablate"},
		{"unknown target", BenchmarkConfig{Ingest: IngestRetain, Target: "mem0"}, "mem0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.Dir, c.NoBaselines = "x", true
			if c.Target == "" {
				c.Target = TargetHindsight
			}
			err := c.WithDefaults().validate(deps)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
