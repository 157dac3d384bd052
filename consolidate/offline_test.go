package consolidate

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/simscale"
	"github.com/memstream/memstream/store"
)

func TestParseSlot(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text      string
		key, val  string
		recognize bool
	}{
		{"I live in Beijing", "user|residence", "beijing", true},
		{"Alice lives in Beijing.", "alice|residence", "beijing", true},
		{"Last year Alice lived in New York, near the park", "alice|residence", "new york", true},
		{"Alice moved to Shanghai", "alice|residence", "shanghai", true},
		{"Alice has moved from Beijing to Shanghai last month", "alice|residence", "shanghai", true},
		{"I moved to Shanghai in 2026", "user|residence", "shanghai", true},
		{"我住在北京", "user|residence", "北京", true},
		{"我搬到上海了", "user|residence", "上海", true},
		{"Bob works at Acme Corp", "bob|employer", "acme corp", true},
		{"My favorite color is blue", "user|favorite color", "blue", true},
		{"Alice's favourite drink is green tea", "alice|favorite drink", "green tea", true},
		// Extracted facts carry their speaker; the first person is the speaker.
		{"Alice: I live in Beijing, in Haidian, close to the office.", "alice|residence", "beijing", true},
		{"Alice: Big news: I just moved to Shanghai last weekend!", "alice|residence", "shanghai", true},
		{"User: I live in Paris", "user|residence", "paris", true},
		{"张伟: 我住在北京", "张伟|residence", "北京", true},
		{"Alice hates passive voice", "", "", false},
		{"The weather was nice", "", "", false},
	}
	for _, c := range cases {
		s, ok := parseSlot(c.text)
		if ok != c.recognize || (ok && (s.key() != c.key || s.Value != c.val)) {
			t.Errorf("parseSlot(%q) = %+v %v, want %s=%s %v", c.text, s, ok, c.key, c.val, c.recognize)
		}
	}
}

func TestIsRetraction(t *testing.T) {
	t.Parallel()
	yes := []string{"I no longer drink coffee", "Bob doesn't smoke anymore", "Actually, I don't like jazz",
		"She stopped running", "我不再喝咖啡了", "我再也不吃肉", "我不喜欢咖啡了"}
	no := []string{"I drink coffee", "Actually, I love jazz", "I like longer walks", "我喜欢咖啡"}
	for _, s := range yes {
		if !isRetraction(s) {
			t.Errorf("isRetraction(%q) = false", s)
		}
	}
	for _, s := range no {
		if isRetraction(s) {
			t.Errorf("isRetraction(%q) = true", s)
		}
	}
}

func TestOfflineDecisions(t *testing.T) {
	t.Parallel()
	o, err := NewOffline(OfflineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	// Cosines as the hashed embedder gives them, placed on its scale.
	scale := simscale.Scale{Unrelated: 0.05, Related: 0.38}
	obs := func(text string, sim float64, meta map[string]string, last time.Time) Candidate {
		return Candidate{ObservationCandidate: store.ObservationCandidate{ID: uuid.New(), Text: text, Similarity: sim, Metadata: meta, LastEvidence: last},
			Level: scale.Level(sim)}
	}
	fact := func(text string) store.PendingFact {
		return store.PendingFact{ID: uuid.New(), Text: text, MentionedAt: at, State: "valid"}
	}
	beijing := obs("Alice lives in Beijing", 0.2, map[string]string{"slot": "alice|residence", "value": "beijing"}, at.AddDate(-1, 0, 0))
	coffee := obs("Alice drinks coffee every morning", 0.6, nil, at)
	cases := []struct {
		name  string
		fc    FactCandidates
		check func(Decision) bool
	}{
		{"knowledge update", FactCandidates{Fact: fact("Alice moved to Shanghai"), Candidates: []Candidate{beijing}}, func(d Decision) bool {
			return len(d.Updates) == 1 && d.Updates[0].ObservationID == beijing.ID && d.Updates[0].Text == "Alice moved to Shanghai" &&
				d.Updates[0].Metadata["value"] == "shanghai" && strings.Contains(d.Updates[0].Reason, `from "beijing" to "shanghai"`)
		}},
		{"same value folds", FactCandidates{Fact: fact("Alice still lives in Beijing"), Candidates: []Candidate{beijing}}, func(d Decision) bool {
			return len(d.Updates) == 1 && d.Updates[0].Text == "" && len(d.Creates) == 0
		}},
		{"older value is weak evidence", FactCandidates{Fact: store.PendingFact{ID: uuid.New(), Text: "Alice lived in Paris", State: "valid",
			MentionedAt: at.AddDate(-2, 0, 0)}, Candidates: []Candidate{beijing}}, func(d Decision) bool {
			return len(d.Updates) == 1 && d.Updates[0].Text == "" && d.Updates[0].Relevance == 0.5
		}},
		{"retraction", FactCandidates{Fact: fact("Alice no longer drinks coffee"), Candidates: []Candidate{coffee}}, func(d Decision) bool {
			return len(d.Deletes) == 1 && d.Deletes[0].ObservationID == coffee.ID && len(d.Creates) == 1
		}},
		{"restatement folds", FactCandidates{Fact: fact("Alice drinks coffee each morning"), Candidates: []Candidate{coffee}}, func(d Decision) bool {
			return len(d.Updates) == 1 && d.Updates[0].ObservationID == coffee.ID && d.Updates[0].Text == ""
		}},
		{"unrelated creates", FactCandidates{Fact: fact("Alice plays the violin"), Candidates: []Candidate{obs("Alice drinks coffee", 0.1, nil, at)}}, func(d Decision) bool {
			return len(d.Creates) == 1 && len(d.Updates) == 0 && d.Creates[0].Text == "Alice plays the violin"
		}},
		{"never folds into a retraction", FactCandidates{Fact: fact("Alice drinks coffee"), Candidates: []Candidate{obs("Alice no longer drinks coffee", 0.7, nil, at)}}, func(d Decision) bool {
			return len(d.Creates) == 1 && len(d.Updates) == 0
		}},
	}
	for _, c := range cases {
		d, err := o.Adjudicate(context.Background(), []FactCandidates{c.fc})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.validate([]FactCandidates{c.fc}); err != nil {
			t.Errorf("%s: invalid decision: %v", c.name, err)
		}
		if !c.check(d) {
			t.Errorf("%s: decision %+v", c.name, d)
		}
	}
}

func TestDecisionValidate(t *testing.T) {
	t.Parallel()
	f1 := store.PendingFact{ID: uuid.New(), Tags: []string{"a"}}
	f2 := store.PendingFact{ID: uuid.New(), Tags: []string{"b"}}
	o1 := Candidate{ObservationCandidate: store.ObservationCandidate{ID: uuid.New()}}
	batch := []FactCandidates{{Fact: f1, Candidates: []Candidate{o1}}, {Fact: f2}}
	bad := map[string]Decision{
		"text is empty":            {Creates: []Create{{SourceFactIDs: []uuid.UUID{f1.ID}}}},
		"source_fact_ids is empty": {Creates: []Create{{Text: "x"}}},
		"not in the batch":         {Creates: []Create{{Text: "x", SourceFactIDs: []uuid.UUID{uuid.New()}}}},
		"different tag scopes":     {Creates: []Create{{Text: "x", SourceFactIDs: []uuid.UUID{f1.ID, f2.ID}}}},
		"not a candidate":          {Updates: []Update{{ObservationID: uuid.New(), SourceFactIDs: []uuid.UUID{f1.ID}}}},
		"outside the scope":        {Updates: []Update{{ObservationID: o1.ID, SourceFactIDs: []uuid.UUID{f2.ID}}}},
		"reason is empty":          {Deletes: []Delete{{ObservationID: o1.ID}}},
	}
	for want, d := range bad {
		if err := d.validate(batch); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate: %v, want %q", err, want)
		}
	}
	ok := Decision{Creates: []Create{{Text: "x", SourceFactIDs: []uuid.UUID{f2.ID}}},
		Updates: []Update{{ObservationID: o1.ID, SourceFactIDs: []uuid.UUID{f1.ID}}}, Deletes: []Delete{{ObservationID: o1.ID, Reason: "r"}}}
	if err := ok.validate(batch); err != nil {
		t.Errorf("valid decision rejected: %v", err)
	}
}

func TestInterleaveKeepsEachRankingsBest(t *testing.T) {
	t.Parallel()
	mk := func(n int) []store.ObservationCandidate {
		var out []store.ObservationCandidate
		for range n {
			out = append(out, store.ObservationCandidate{ID: uuid.New()})
		}
		return out
	}
	sem, kw := mk(5), mk(5)
	kw[1] = sem[0] // shared
	got := interleave(3, map[string][]store.ObservationCandidate{"semantic": sem, "keyword": kw}, "slot", "semantic", "keyword")
	if len(got) != 3 || got[0].ID != sem[0].ID || got[1].ID != kw[0].ID || got[2].ID != sem[1].ID {
		t.Fatalf("interleave = %+v", got)
	}
	if fmt.Sprint(got[0].Via) != "[semantic keyword]" {
		t.Errorf("via = %v", got[0].Via)
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	a, b, c := uuid.New(), uuid.New(), uuid.New()
	content, used := Summarize("What does Alice like?", []store.RankedObservation{
		{ID: a, Text: "Alice likes tea", ProofCount: 3, Trend: TrendStable, Similarity: 0.6},
		{ID: b, Text: "Alice likes tea", ProofCount: 1, Similarity: 0.59},
		{ID: c, Text: "Alice lives in Paris", ProofCount: 1, Trend: TrendNew, Similarity: 0.1},
	}, 0)
	want := "What does Alice like?\n\n- Alice likes tea (STABLE, 3 pieces of evidence) [obs:" + a.String() + "]\n"
	if content != want || len(used) != 1 {
		t.Fatalf("content = %q, used %d", content, len(used))
	}
	if content, _ := Summarize("Q?", nil, 0); !strings.Contains(content, "No observations") {
		t.Errorf("empty summary = %q", content)
	}
	// With keyword scores, those far below the best keyword score need to
	// be nearly as similar as the best to stay.
	d, e, f := uuid.New(), uuid.New(), uuid.New()
	_, used = Summarize("How does Alice want her emails written?", []store.RankedObservation{
		{ID: d, Text: "Alice: I never start emails with Dear", ProofCount: 3, Similarity: 0.5, Keyword: 2.1},
		{ID: e, Text: "Alice: Help me pick a gift?", ProofCount: 1, Similarity: 0.47, Keyword: 0.3},
		{ID: f, Text: "Alice: Nice to meet you", ProofCount: 1, Similarity: 0.44, Keyword: 0.3},
		{ID: a, Text: "Alice: Write my weekly status email", ProofCount: 1, Similarity: 0.3, Keyword: 1.2},
	}, 0)
	var ids []uuid.UUID
	for _, o := range used {
		ids = append(ids, o.ID)
	}
	if want := []uuid.UUID{d, e, a}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("kept %v, want %v: the two with keyword evidence, and the one without at 0.94 of the best similarity, not the one at 0.88", ids, want)
	}
}
