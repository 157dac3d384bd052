package eval

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func generate(t *testing.T, cfg GenConfig) *Dataset {
	t.Helper()
	d, err := Generate(cfg)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return d
}

// withBlindParts is cfg, cfg restricted to the second held-out part and cfg
// restricted to the third, which are generated only when asked for: the
// generator's per-part tests run on all three, so every LongMemEval-shaped
// part passes them.
func withBlindParts(cfg GenConfig) []GenConfig {
	h2, h3 := cfg, cfg
	h2.Parts = []string{PartHeldOut2}
	h3.Parts = []string{PartHeldOut3}
	return []GenConfig{cfg, h2, h3}
}

func TestGenerateIsDeterministicForASeed(t *testing.T) {
	t.Parallel()
	for _, cfg := range withBlindParts(Small()) {
		checkDeterministic(t, cfg)
	}
}

func checkDeterministic(t *testing.T, cfg GenConfig) {
	t.Helper()
	write := func(seed int64) map[string][]byte {
		cfg.Seed = seed
		dir := t.TempDir()
		if err := generate(t, cfg).Write(dir); err != nil {
			t.Fatalf("Write: %v", err)
		}
		files := map[string][]byte{}
		for _, name := range []string{EventsFile, QuestionsFile, ManifestFile} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			files[name] = b
		}
		return files
	}
	a, b, other := write(7), write(7), write(8)
	for _, name := range []string{EventsFile, QuestionsFile, ManifestFile} {
		if !bytes.Equal(a[name], b[name]) {
			t.Errorf("%s differs between two runs with seed 7", name)
		}
		if bytes.Equal(a[name], other[name]) {
			t.Errorf("%s is the same for seeds 7 and 8", name)
		}
	}
}

func TestPresetSizes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		cfg      GenConfig
		min, max int
	}{
		{"small", Small(), 50, 75},
		{"full", Full(), 400, 2000},
	} {
		tc.cfg.Parts = append(slices.Clone(Parts), PartHeldOut2, PartHeldOut3)
		d := generate(t, tc.cfg)
		for _, part := range tc.cfg.Parts {
			qs := d.Part(part)
			if n := len(qs); n < tc.min || n > tc.max {
				t.Errorf("%s %s: %d questions, want %d..%d", tc.name, part, n, tc.min, tc.max)
			}
			byType := map[string]int{}
			for _, q := range qs {
				byType[q.Type]++
			}
			for _, typ := range Types {
				if byType[typ] == 0 {
					t.Errorf("%s %s: no %s questions", tc.name, part, typ)
				}
			}
			if d.Manifest.ByPart[part] != len(qs) {
				t.Errorf("%s: manifest says %d %s questions, the data has %d", tc.name, d.Manifest.ByPart[part], part, len(qs))
			}
		}
		if d.Manifest.Questions != len(d.Questions) || d.Manifest.Sessions != len(d.Sessions()) || d.Manifest.Events != len(d.Events) {
			t.Errorf("%s: manifest counts %+v do not match the data", tc.name, d.Manifest)
		}
		if d.Manifest.PerMessageBanks == 0 || d.Manifest.PerMessageBanks == d.Manifest.Banks {
			t.Errorf("%s: %d of %d banks per message, want some of each delivery", tc.name, d.Manifest.PerMessageBanks, d.Manifest.Banks)
		}
	}
}

func TestGenerateRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []GenConfig{
		{Banks: -1},
		{Banks: 1, SessionsPerBank: 3},
		{Banks: 1, PerType: 5},
		{Banks: 1, SessionsPerBank: 50, Span: 10 * 24 * time.Hour},
	} {
		if _, err := Generate(cfg); err == nil {
			t.Errorf("Generate(%+v) succeeded, want an error", cfg)
		}
	}
}

var bankIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// TestEventsFollowTheSpec checks the SPEC §3 rules that would send an
// event to the dead-letter topic.
func TestEventsFollowTheSpec(t *testing.T) {
	t.Parallel()
	cfg := Small()
	cfg.Parts = append(cfg.Parts, PartHeldOut2, PartHeldOut3)
	d := generate(t, cfg)
	ids := map[string]bool{}
	for _, e := range d.Events {
		if !bankIDPattern.MatchString(e.BankID) {
			t.Errorf("bank id %q does not match the spec pattern", e.BankID)
		}
		if ids[e.EventID] {
			t.Errorf("duplicate event id %s", e.EventID)
		}
		ids[e.EventID] = true
		if len(e.Messages) == 0 {
			t.Errorf("event %s has no messages", e.EventID)
		}
		b, err := json.Marshal(e)
		if err != nil || len(b) > 1<<20 {
			t.Errorf("event %s: %d bytes, err %v", e.EventID, len(b), err)
		}
		var prev time.Time
		for i, m := range e.Messages {
			if m.Role != "user" && m.Role != "assistant" {
				t.Errorf("%s turn %d: role %q", e.EventID, i, m.Role)
			}
			if m.Content == "" || m.Timestamp.Before(prev) {
				t.Errorf("%s turn %d: empty or out of order", e.EventID, i)
			}
			prev = m.Timestamp
		}
	}
}

func TestWriteLoadRoundTrip(t *testing.T) {
	t.Parallel()
	d := generate(t, Small())
	dir := t.TempDir()
	if err := d.Write(dir); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, d) {
		t.Error("Load(Write(d)) differs from d")
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("Load of an empty directory succeeded")
	}
}

func containsFold(s, sub string) bool {
	return sub != "" && strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

func containsAny(s string, subs []string) bool {
	return slices.ContainsFunc(subs, func(x string) bool { return containsFold(s, x) })
}

// TestQuestionsMatchTheirEvidence is the generator's main contract: every
// label points at a real turn that holds the answer.
func TestQuestionsMatchTheirEvidence(t *testing.T) {
	t.Parallel()
	for _, cfg := range append(withBlindParts(Small()), withBlindParts(Full())...) {
		d := generate(t, cfg)
		bankOf := map[string]string{}
		sessionStart := map[string]time.Time{}
		for _, e := range d.Events {
			bankOf[e.DocumentID] = e.BankID
			if e.TurnOffset() == 0 {
				sessionStart[e.DocumentID] = e.Messages[0].Timestamp
			}
		}
		for _, q := range d.Questions {
			turns := make([]string, 0, len(q.Evidence))
			for _, ev := range q.Evidence {
				m, ok := d.Turn(ev)
				if !ok || bankOf[ev.SessionID] != q.BankID {
					t.Fatalf("%s: evidence %+v is not a turn of bank %s", q.ID, ev, q.BankID)
				}
				turns = append(turns, m.Content)
			}
			if q.Abstention != (q.Type == TypeAbstention) {
				t.Errorf("%s: abstention flag %v for type %s", q.ID, q.Abstention, q.Type)
			}
			if q.Abstention {
				if len(q.Evidence) != 0 || len(q.GoldAnswers) != 0 || q.AbsentTerm == "" || !containsFold(q.Question, q.AbsentTerm) {
					t.Errorf("%s: abstention question with evidence, gold or no absent term: %+v", q.ID, q)
				}
				continue
			}
			if len(q.Evidence) == 0 || len(q.GoldAnswers) == 0 {
				t.Fatalf("%s: answerable question without evidence or gold", q.ID)
			}
			if containsAny(q.Question, q.GoldAnswers) {
				t.Errorf("%s: question %q gives away the answer %v", q.ID, q.Question, q.GoldAnswers)
			}
			for _, turn := range turns {
				if containsFold(turn, q.Question) {
					t.Errorf("%s: question copies the evidence turn %q", q.ID, turn)
				}
			}
			switch q.Type {
			case TypeMultiSession:
				if n := len(q.Evidence); n < 2 || n > 4 || !q.RequireAll || len(q.GoldAnswers) != n {
					t.Errorf("%s: %d evidence turns, %d parts, require_all %v", q.ID, n, len(q.GoldAnswers), q.RequireAll)
				}
				sessions := map[string]bool{}
				for i, ev := range q.Evidence {
					sessions[ev.SessionID] = true
					if !containsFold(turns[i], q.GoldAnswers[i]) {
						t.Errorf("%s: evidence turn %q lacks part %q", q.ID, turns[i], q.GoldAnswers[i])
					}
				}
				if len(sessions) != len(q.Evidence) {
					t.Errorf("%s: multi-session evidence shares sessions: %+v", q.ID, q.Evidence)
				}
			default:
				if !containsAny(strings.Join(turns, "\n"), q.GoldAnswers) {
					t.Errorf("%s: evidence %q holds none of %v", q.ID, turns, q.GoldAnswers)
				}
			}
			switch q.Type {
			case TypeKnowledgeUpdate:
				checkUpdate(t, d, q, turns[0], sessionStart)
			case TypeCrossLingualAlias:
				if !containsAny(turns[0], q.EntityAliases) {
					t.Errorf("%s: evidence %q names none of %v", q.ID, turns[0], q.EntityAliases)
				}
				asked := slices.IndexFunc(q.EntityAliases, func(a string) bool { return containsFold(q.Question, a) })
				if asked < 0 || containsFold(turns[0], q.EntityAliases[asked]) {
					t.Errorf("%s: question %q must use an alias the evidence %q does not", q.ID, q.Question, turns[0])
				}
			case TypeTemporalReasoning:
				if strings.Contains(q.Question, "last weekend") {
					asked := lastSaturday(q.QueryTimestamp)
					said := lastSaturday(sessionStart[q.Evidence[0].SessionID])
					if !asked.Equal(said) {
						t.Errorf("%s: asked at %v (last weekend %v) about a session whose last weekend is %v", q.ID, q.QueryTimestamp, asked, said)
					}
				}
				if strings.Contains(q.Question, "last Saturday") {
					asked := lastSaturday(q.QueryTimestamp)
					said := lastSaturday(sessionStart[q.Evidence[0].SessionID])
					if !asked.Equal(said) {
						t.Errorf("%s: asked at %v (last Saturday %v) about a session whose last Saturday is %v", q.ID, q.QueryTimestamp, asked, said)
					}
				}
			}
		}
		checkAbsentTerms(t, d)
	}
}

func lastSaturday(t time.Time) time.Time {
	day := t.Truncate(24 * time.Hour)
	back := (int(day.Weekday()) - int(time.Saturday) + 7) % 7
	if back == 0 {
		back = 7
	}
	return day.AddDate(0, 0, -back)
}

func checkUpdate(t *testing.T, d *Dataset, q Question, evidence string, start map[string]time.Time) {
	t.Helper()
	// The update turn may name the value it replaces ("moved from X to
	// Y"), but only along with the new one.
	if q.OldValue == "" || containsFold(evidence, q.OldValue) && !containsFold(evidence, q.GoldAnswers[0]) {
		t.Errorf("%s: old value %q missing, or inside the update turn %q without the new one", q.ID, q.OldValue, evidence)
		return
	}
	updated := start[q.Evidence[0].SessionID]
	for _, e := range d.Events {
		if e.BankID != q.BankID {
			continue
		}
		for _, m := range e.Messages {
			if containsFold(m.Content, q.OldValue) && m.Timestamp.Before(updated) {
				return
			}
		}
	}
	t.Errorf("%s: old value %q is not said before the update", q.ID, q.OldValue)
}

// checkAbsentTerms makes abstention questions unanswerable in any bank of
// their part (the parts are separate benchmarks and share no bank).
func checkAbsentTerms(t *testing.T, d *Dataset) {
	t.Helper()
	partOf := map[string]string{}
	for _, q := range d.Questions {
		partOf[q.BankID] = q.Part
	}
	all := map[string]*strings.Builder{}
	for _, e := range d.Events {
		b := all[partOf[e.BankID]]
		if b == nil {
			b = &strings.Builder{}
			all[partOf[e.BankID]] = b
		}
		for _, m := range e.Messages {
			b.WriteString(strings.ToLower(m.Content))
			b.WriteByte('\n')
		}
	}
	for _, q := range d.Questions {
		if q.Abstention && strings.Contains(all[q.Part].String(), strings.ToLower(q.AbsentTerm)) {
			t.Errorf("%s: absent term %q occurs in a turn", q.ID, q.AbsentTerm)
		}
	}
}

// TestGoldOnlyInEvidence guards the hard negatives and the filler: inside a
// bank, a gold answer is said only in its evidence turns, so finding it in
// the context means the evidence (or a fact derived from it) was recalled.
func TestGoldOnlyInEvidence(t *testing.T) {
	t.Parallel()
	for _, cfg := range withBlindParts(Full()) {
		checkGoldOnlyInEvidence(t, generate(t, cfg))
	}
}

func checkGoldOnlyInEvidence(t *testing.T, d *Dataset) {
	t.Helper()
	sessions := d.Sessions()
	bankOf := map[string]string{}
	for _, e := range d.Events {
		bankOf[e.DocumentID] = e.BankID
	}
	for _, q := range d.Questions {
		evidence := map[Evidence]bool{}
		for _, ev := range q.Evidence {
			evidence[ev] = true
		}
		for sid, turns := range sessions {
			if bankOf[sid] != q.BankID {
				continue
			}
			for i, m := range turns {
				if evidence[Evidence{SessionID: sid, TurnIndex: i}] {
					continue
				}
				for _, g := range q.GoldAnswers {
					if containsFold(m.Content, g) {
						t.Errorf("%s: gold %q also in %s turn %d: %q", q.ID, g, sid, i, m.Content)
					}
				}
			}
		}
	}
}

// TestHardNegativesExist checks that every question has a distractor: a
// non-evidence turn in the same bank sharing a content word of at least
// five letters with the evidence.
func TestHardNegativesExist(t *testing.T) {
	t.Parallel()
	for _, cfg := range withBlindParts(Small()) {
		checkHardNegatives(t, generate(t, cfg))
	}
}

func checkHardNegatives(t *testing.T, d *Dataset) {
	t.Helper()
	sessions := d.Sessions()
	bankOf := map[string]string{}
	for _, e := range d.Events {
		bankOf[e.DocumentID] = e.BankID
	}
	with, total := 0, 0
	for _, q := range d.Questions {
		if q.Abstention || q.Type == TypeCrossLingualAlias || q.Type == TypeTemporalReasoning {
			continue
		}
		total++
		m, _ := d.Turn(q.Evidence[0])
		words := map[string]bool{}
		for _, w := range strings.Fields(strings.ToLower(m.Content)) {
			if w = strings.Trim(w, ".,!?:;'"); len(w) >= 5 {
				words[w] = true
			}
		}
		found := false
		for sid, turns := range sessions {
			for i, mm := range turns {
				if bankOf[sid] != q.BankID || (sid == q.Evidence[0].SessionID && i == q.Evidence[0].TurnIndex) || mm.Role != m.Role {
					continue
				}
				for _, w := range strings.Fields(strings.ToLower(mm.Content)) {
					if words[strings.Trim(w, ".,!?:;'")] && !slices.Contains(fillerWordsAllowed, strings.Trim(w, ".,!?:;'")) {
						found = true
					}
				}
			}
		}
		if found {
			with++
		} else {
			t.Logf("%s (%s): no distractor for %q", q.ID, q.Type, m.Content)
		}
	}
	if with != total {
		t.Errorf("only %d of %d questions have a hard negative", with, total)
	}
}

// fillerWordsAllowed are common words that do not make a turn a distractor.
var fillerWordsAllowed = []string{"about", "after", "again", "there", "these", "think", "today", "really", "still", "thanks"}
