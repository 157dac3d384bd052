package eval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDefaultPartsAreUnchanged pins the files of the default parts: the
// recorded numbers in docs/EVALUATION.md were measured on them, so adding
// a part (or touching shared generator code) must not move a byte.
func TestDefaultPartsAreUnchanged(t *testing.T) {
	t.Parallel()
	want := map[string][3]string{
		"full":  {"1bc44599f4fccbb4aecb1a141d9619ea4874cc464587c21d627c9be5cfa47658", "1f9cca683f6839dfe37634175a605f5d5af856daef598d0909a76c301f925541", "a39ddb216522e29df635149902ba2f39d9cff4e88a5a190c94586bdaa81094c6"},
		"small": {"b9252a3c624af34bd44cf6b2de12055ac7bf396b43503d98a8f8d47f760e55fb", "e98a9b09ad97a579d9b17a5eee9abfc67c9bfbbcd490180d939b24592f635939", "6eaa0d2ce907d993d7f5fdfb14394a64501dc849bfa9c68c473ee8d111a3749c"},
		"gate":  {"16e42331ec027ebf76d008d94503c0285faee4fdd2a0e1b84a7dcd4959afbc00", "af898617eb438f7a1f7419fb5eaa2e69b9b3e1e6b76153fa4891feec9ef4f7e1", "31aa1f89909004cd96e84ee1fb97fb975739c47b1da292aade2de37fceaf13c1"},
	}
	for size, sums := range want {
		cfg, err := Preset(size, "both")
		if size == "gate" {
			cfg, err = Preset(size, PartHeldOut)
		}
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := generate(t, cfg).Write(dir); err != nil {
			t.Fatal(err)
		}
		for i, name := range []string{EventsFile, QuestionsFile, ManifestFile} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			if got := hex.EncodeToString(sum[:]); got != sums[i] {
				t.Errorf("%s %s: sha256 %s, want %s (the default parts' files changed)", size, name, got, sums[i])
			}
		}
	}
}

// TestAllPartsKeepTheDefaultOnes checks that generating the dialogue part
// along with the others leaves their events and questions as they are.
func TestAllPartsKeepTheDefaultOnes(t *testing.T) {
	t.Parallel()
	both, err := Preset("small", "both")
	if err != nil {
		t.Fatal(err)
	}
	all, err := Preset("small", "all")
	if err != nil {
		t.Fatal(err)
	}
	a, b := generate(t, both), generate(t, all)
	if len(b.Events) <= len(a.Events) || !reflect.DeepEqual(a.Events, b.Events[:len(a.Events)]) {
		t.Error("the default parts' events differ when the dialogue part is generated too")
	}
	if !reflect.DeepEqual(a.Questions, b.Questions[:len(a.Questions)]) {
		t.Error("the default parts' questions differ when the dialogue part is generated too")
	}
	for _, p := range []string{PartDialogue, PartDialogueTuning} {
		if len(b.Part(p)) == 0 {
			t.Errorf("--part all has no %s questions", p)
		}
	}
	// The dialogue part comes out the same alone and with the others, so
	// adding its tuning counterpart to `all` moved none of its turns.
	alone := dialogueSmall(t, PartDialogue, 1)
	var inAll []Event
	for _, e := range b.Events {
		if strings.HasPrefix(e.BankID, "dlg-") {
			inAll = append(inAll, e)
		}
	}
	if !reflect.DeepEqual(alone.Events, inAll) {
		t.Error("the dialogue part's events differ between --part dialogue and --part all")
	}
}

func dialogueSmall(t *testing.T, part string, seed int64) *Dataset {
	t.Helper()
	cfg, err := Preset("small", part)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Seed = seed
	return generate(t, cfg)
}

func TestDialogueIsDeterministic(t *testing.T) {
	t.Parallel()
	for _, part := range []string{PartDialogue, PartDialogueTuning} {
		a, b, c := dialogueSmall(t, part, 7), dialogueSmall(t, part, 7), dialogueSmall(t, part, 8)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("two %s datasets with seed 7 differ", part)
		}
		if reflect.DeepEqual(a.Events, c.Events) {
			t.Errorf("the %s datasets of seeds 7 and 8 are the same", part)
		}
		if _, err := Preset("gate", part); err == nil {
			t.Errorf("the gate preset accepted the %s part", part)
		}
	}
}

// TestDialogueShape checks what makes the part what it is: two named
// humans per bank, one event per message, dated sessions, third-person
// questions of every type whose evidence turns say the answer and were
// said by the person asked about.
func TestDialogueShape(t *testing.T) {
	t.Parallel()
	for _, part := range []string{PartDialogue, PartDialogueTuning} {
		t.Run(part, func(t *testing.T) {
			t.Parallel()
			checkDialogueShape(t, part)
		})
	}
}

func checkDialogueShape(t *testing.T, part string) {
	prefix := dialogueVocabulary.bankPrefix + "-en-"
	if part == PartDialogueTuning {
		prefix = dialogueTuningVocabulary.bankPrefix + "-en-"
	}
	for _, seed := range []int64{1, 2, 3} {
		d := dialogueSmall(t, part, seed)
		if d.Manifest.Banks != d.Manifest.PerMessageBanks || d.Manifest.Banks < 2 {
			t.Fatalf("seed %d: %d banks, %d per message", seed, d.Manifest.Banks, d.Manifest.PerMessageBanks)
		}
		speakers := map[string]map[string]int{}
		sessionsOf := map[string]map[string]time.Time{}
		turnsOf := map[string][]string{}
		for _, e := range d.Events {
			if len(e.Messages) != 1 {
				t.Fatalf("event %s has %d messages, want one", e.EventID, len(e.Messages))
			}
			m := e.Messages[0]
			if m.Role != "user" || m.Name == "" || m.Timestamp.IsZero() {
				t.Fatalf("event %s: role %q name %q at %v", e.EventID, m.Role, m.Name, m.Timestamp)
			}
			if _, ok := e.Metadata[TurnOffsetKey]; !ok || e.Metadata["session_id"] != e.DocumentID {
				t.Fatalf("event %s lacks turn_offset or session_id metadata: %v", e.EventID, e.Metadata)
			}
			if speakers[e.BankID] == nil {
				speakers[e.BankID], sessionsOf[e.BankID] = map[string]int{}, map[string]time.Time{}
			}
			if !strings.HasPrefix(e.BankID, prefix) {
				t.Fatalf("event %s is in bank %s, want prefix %s", e.EventID, e.BankID, prefix)
			}
			speakers[e.BankID][m.Name]++
			if _, ok := sessionsOf[e.BankID][e.DocumentID]; !ok {
				sessionsOf[e.BankID][e.DocumentID] = m.Timestamp
			}
			turnsOf[e.BankID] = append(turnsOf[e.BankID], strings.ToLower(m.Content))
		}
		last := map[string]time.Time{}
		for b, names := range speakers {
			if len(names) != 2 {
				t.Errorf("bank %s has speakers %v, want two", b, names)
			}
			if len(sessionsOf[b]) < 6 {
				t.Errorf("bank %s has %d sessions", b, len(sessionsOf[b]))
			}
			for _, ts := range sessionsOf[b] {
				if ts.After(last[b]) {
					last[b] = ts
				}
			}
		}
		sessions := d.Sessions()
		types := map[string]int{}
		for _, q := range d.Questions {
			types[q.Type]++
			if q.Part != part {
				t.Fatalf("question %s is in part %q", q.ID, q.Part)
			}
			if !q.QueryTimestamp.After(last[q.BankID]) {
				t.Errorf("question %s is asked at %v, before the bank's last session", q.ID, q.QueryTimestamp)
			}
			var about string
			for n := range speakers[q.BankID] {
				if strings.Contains(q.Question, n) {
					about = n
				}
			}
			if about == "" {
				t.Errorf("question %s names neither speaker: %q", q.ID, q.Question)
			}
			if q.Abstention {
				for _, turn := range turnsOf[q.BankID] {
					if strings.Contains(turn, strings.ToLower(q.AbsentTerm)) {
						t.Errorf("abstention %s: absent term %q is said: %q", q.ID, q.AbsentTerm, turn)
					}
				}
				continue
			}
			if len(q.Evidence) == 0 {
				t.Fatalf("question %s has no evidence", q.ID)
			}
			var evText string
			for _, ev := range q.Evidence {
				msg, ok := d.Turn(ev)
				if !ok || sessions[ev.SessionID][ev.TurnIndex].Content != msg.Content {
					t.Fatalf("question %s: evidence %v is not a turn", q.ID, ev)
				}
				if msg.Name != about {
					t.Errorf("question %s about %s: evidence turn said by %s: %q", q.ID, about, msg.Name, msg.Content)
				}
				evText += strings.ToLower(msg.Content) + "\n"
				if q.Type == TypeTemporalReasoning {
					day, err := time.Parse("2006-01-02", q.GoldAnswers[1])
					said := msg.Timestamp.UTC().Truncate(24 * time.Hour)
					if err != nil || day.After(said) || said.Sub(day) > 7*24*time.Hour {
						t.Errorf("temporal %s: gold day %v for a turn said on %v", q.ID, q.GoldAnswers, said)
					}
				}
			}
			if q.Type != TypeTemporalReasoning {
				for _, g := range q.GoldAnswers {
					if !strings.Contains(evText, strings.ToLower(g)) {
						t.Errorf("question %s: gold %q not in its evidence %q", q.ID, g, evText)
					}
				}
			}
			if q.Type == TypeMultiSession {
				seen := map[string]bool{}
				for _, ev := range q.Evidence {
					seen[ev.SessionID] = true
				}
				if len(seen) < 2 || len(seen) != len(q.Evidence) {
					t.Errorf("multi-session %s has evidence %v", q.ID, q.Evidence)
				}
			}
			if q.Type == TypeKnowledgeUpdate {
				found := false
				for _, turn := range turnsOf[q.BankID] {
					found = found || strings.Contains(turn, strings.ToLower(q.OldValue))
				}
				if q.OldValue == "" || !found || strings.Contains(evText, strings.ToLower(q.OldValue)) {
					t.Errorf("knowledge update %s: old value %q missing or in the new turn", q.ID, q.OldValue)
				}
			}
		}
		for _, typ := range []string{TypeSingleSessionUser, TypeTemporalReasoning, TypeMultiSession, TypeKnowledgeUpdate, TypeAbstention} {
			if types[typ] == 0 {
				t.Errorf("seed %d: no %s questions", seed, typ)
			}
		}
	}
}

// TestDialoguePartIsScoredOnItsOwn runs an oracle over all three parts:
// the dialogue part gets its own report, perfect for the oracle, and its
// section of the markdown has no quality bars (they are the held-out
// part's targets).
func TestDialoguePartIsScoredOnItsOwn(t *testing.T) {
	t.Parallel()
	cfg, err := Preset("small", "all")
	if err != nil {
		t.Fatal(err)
	}
	d := generate(t, cfg)
	reps, err := RunParts(context.Background(), d, newOracle(t, d), RunOptions{Name: "oracle", Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range AllParts {
		if _, ok := reps[p]; !ok {
			t.Fatalf("no report for part %s", p)
		}
	}
	dlg := reps[PartDialogue]
	if dlg.Overall.Questions != len(d.Part(PartDialogue)) || dlg.Overall.Turn.RecallAny10 != 1 || dlg.Overall.KnowledgeUpdateAccuracy != 1 {
		t.Errorf("dialogue oracle overall = %+v", dlg.Overall)
	}
	out := &Outcome{Parts: []*PartOutcome{{Part: PartDialogue, Main: dlg}}}
	md := out.Markdown()
	if !strings.Contains(md, partTitle(PartDialogue)) || strings.Contains(md, "Quality bars") {
		t.Errorf("dialogue markdown:\n%s", md)
	}
}

// TestDialogueVocabulariesShareNothing checks that the dialogue part and
// its tuning counterpart share no name, value, template or line, so that
// work fitted to the tuning part's phrasings cannot carry over for free.
func TestDialogueVocabulariesShareNothing(t *testing.T) {
	t.Parallel()
	strs := func(v *dialogueVocab) map[string]bool {
		out := map[string]bool{strings.ToLower(v.relay): true, strings.ToLower(v.bankPrefix): true}
		add := func(xs ...string) {
			for _, x := range xs {
				k, text := splitKey(x)
				out[strings.ToLower(k)], out[strings.ToLower(text)] = true, true
			}
		}
		add(v.speakers...)
		add(v.companions...)
		add(v.reactions...)
		add(v.prompts...)
		for _, set := range [][]dlgFact{v.single, v.events, v.multi, v.updates, v.absent} {
			for _, f := range set {
				add(f.pool...)
				add(f.say...)
				add(f.ask...)
				add(f.update...)
			}
		}
		for _, x := range append(slices.Clone(v.open), v.close...) {
			add(x[0], x[1])
		}
		for _, f := range v.filler {
			add(f...)
		}
		for _, w := range v.when {
			add(w.phrase)
		}
		for _, vs := range v.slots {
			add(vs...)
		}
		return out
	}
	a, b := strs(&dialogueVocabulary), strs(&dialogueTuningVocabulary)
	for s := range b {
		if a[s] {
			t.Errorf("both dialogue vocabularies hold %q", s)
		}
	}
	// No name or value of either part occurs as a word anywhere in the
	// other's vocabulary.
	for _, dir := range [][2]*dialogueVocab{{&dialogueVocabulary, &dialogueTuningVocabulary}, {&dialogueTuningVocabulary, &dialogueVocabulary}} {
		var text strings.Builder
		for s := range strs(dir[1]) {
			text.WriteString(s + "\n")
		}
		for _, k := range dialogueKeys(dir[0]) {
			if regexp.MustCompile(`\b` + regexp.QuoteMeta(k) + `\b`).MatchString(text.String()) {
				t.Errorf("%s's %q occurs in %s's vocabulary", dir[0].part, k, dir[1].part)
			}
		}
	}
	// Both parts' absent terms are absent from every turn of the part,
	// not only of the bank that asks.
	d := dialogueSmall(t, PartDialogueTuning, 1)
	for _, f := range dialogueTuningVocabulary.absent {
		for _, term := range f.pool {
			for _, e := range d.Events {
				if strings.Contains(strings.ToLower(e.Messages[0].Content), strings.ToLower(term)) {
					t.Errorf("absent term %q is said in %s: %q", term, e.EventID, e.Messages[0].Content)
				}
			}
		}
	}
}

type noRecall struct{}

func (noRecall) Recall(context.Context, string, string, time.Time) ([]Retrieved, time.Duration, error) {
	return nil, 0, nil
}

// TestDialogueTuningMissesAreWritten checks that a run lists the misses
// and lost evidence turns of the tuning and dialogue-tuning parts, and
// none of the held-out or dialogue parts, which are never tuned against;
// and that only the LongMemEval-shaped parts are held to quality bars.
func TestDialogueTuningMissesAreWritten(t *testing.T) {
	t.Parallel()
	cfg, err := Preset("small", "all")
	if err != nil {
		t.Fatal(err)
	}
	d := generate(t, cfg)
	rec := NewRecorder(noRecall{})
	reps, err := RunParts(context.Background(), d, rec, RunOptions{Name: "none", Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	var parts []*PartOutcome
	for _, p := range AllParts {
		parts = append(parts, &PartOutcome{Part: p, Main: reps[p]})
	}
	misses, counts := tunableMisses(d, parts, rec)
	partOf := map[string]string{}
	for _, q := range d.Questions {
		partOf[q.ID] = q.Part
	}
	byPart := map[string]int{}
	for _, m := range misses {
		byPart[partOf[m.ID]]++
	}
	if byPart[PartDialogueTuning] == 0 || byPart[PartTuning] == 0 || byPart[PartHeldOut] != 0 || byPart[PartHeldOut2] != 0 || byPart[PartHeldOut3] != 0 || byPart[PartDialogue] != 0 {
		t.Errorf("misses by part %v (%v), want tuning and dialogue-tuning only", byPart, counts)
	}
	for _, p := range AllParts {
		cov := EvidenceCoverage(d, map[Evidence]bool{}, p)
		if (len(cov.Lost) > 0) != Tunable(p) {
			t.Errorf("part %s: %d lost turns listed, tunable %v", p, len(cov.Lost), Tunable(p))
		}
	}
	out := &Outcome{Parts: []*PartOutcome{{Part: PartDialogueTuning, Main: reps[PartDialogueTuning]}}}
	if md := out.Markdown(); !strings.Contains(md, partTitle(PartDialogueTuning)) || strings.Contains(md, "Quality bars") {
		t.Errorf("dialogue-tuning markdown:\n%s", md)
	}
}

// dialogueKeys are a vocabulary's names and values, lower-cased.
func dialogueKeys(v *dialogueVocab) []string {
	var out []string
	add := func(xs ...string) {
		for _, x := range xs {
			k, _ := splitKey(x)
			out = append(out, strings.ToLower(k))
		}
	}
	add(v.speakers...)
	add(v.companions...)
	for _, set := range [][]dlgFact{v.single, v.multi, v.updates, v.absent} {
		for _, f := range set {
			add(f.pool...)
		}
	}
	return out
}
