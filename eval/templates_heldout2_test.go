package eval

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// vocabularyStrings are a vocabulary's names, values and lines, lower
// cased, with the temporal phrase pools its plant function draws from.
// keys are the names and values alone.
func vocabularyStrings(v *vocabulary, temporal ...[]string) (all map[string]bool, keys []string) {
	all = map[string]bool{strings.ToLower(v.bankPrefix): true}
	add := func(isKey bool, xs ...string) {
		for _, x := range xs {
			k, text := splitKey(x)
			all[strings.ToLower(k)], all[strings.ToLower(text)] = true, true
			if isKey {
				keys = append(keys, strings.ToLower(k))
			}
		}
	}
	add(true, v.userNames...)
	add(true, v.otherPeople...)
	add(true, v.zhUserNames...)
	for _, p := range v.zhPeople {
		add(true, p.full, p.pinyin, p.nick)
	}
	for _, set := range [][]factTemplate{v.ssu, v.ssa, v.ssp, v.multi, v.update, v.abstention} {
		for _, t := range set {
			add(true, t.pool...)
			add(true, t.absent...)
			for _, lines := range [][]string{t.say, t.req, t.neg, t.negReq, t.update, t.ask} {
				add(false, lines...)
			}
		}
	}
	for _, t := range v.crossLingual {
		add(true, t.pool...)
		for _, lines := range [][]string{t.say, t.askEn, t.askZh} {
			add(false, lines...)
		}
	}
	for _, pool := range temporal {
		add(true, pool...)
	}
	for _, vs := range v.fillerSlots {
		add(true, vs...)
	}
	for _, f := range append(append([][2]string{}, v.fillerEN...), v.fillerZH...) {
		add(false, f[0], f[1])
	}
	add(false, v.acksEN...)
	add(false, v.acksZH...)
	return all, keys
}

// commonWords are values of the held-out part's abstention templates
// ("car insurance", "home insurance") that no sentence can do without.
var commonWords = map[string]bool{"car": true, "home": true}

// sharedVocabulary is a part's names, values and lines (all) and its names
// and values alone (keys), as TestHeldOut2SharesNothing and
// TestHeldOut3SharesNothing compare them. A dialogue part's lines are of
// another shape, so it is compared by its names and values only.
type sharedVocabulary struct {
	name     string
	all      map[string]bool
	keys     []string
	dialogue bool
}

// partVocabularies are every part's vocabulary strings, by part.
func partVocabularies() map[string]sharedVocabulary {
	dialogue := func(name string, v *dialogueVocab) sharedVocabulary {
		keys := dialogueKeys(v)
		all := map[string]bool{}
		for _, k := range keys {
			all[k] = true
		}
		return sharedVocabulary{name, all, keys, true}
	}
	lem := func(name string, v *vocabulary, temporal ...[]string) sharedVocabulary {
		all, keys := vocabularyStrings(v, temporal...)
		return sharedVocabulary{name: name, all: all, keys: keys}
	}
	return map[string]sharedVocabulary{
		PartTuning:         lem(PartTuning, &tuningVocabulary, saturdayActivities, monthClasses, errands, tripCities, fillerWeather, fillerTasks, fillerFood, fillerShows),
		PartHeldOut:        lem(PartHeldOut, &heldOutVocabulary, heldOutChores, heldOutWeekends, heldOutMornings, heldOutMilestones),
		PartHeldOut2:       lem(PartHeldOut2, &heldOut2Vocabulary, heldOut2Evenings, heldOut2Errands, heldOut2Tomorrows, heldOut2Ahead),
		PartHeldOut3:       lem(PartHeldOut3, &heldOut3Vocabulary, heldOut3Mornings, heldOut3Weekdays, heldOut3LastMonths, heldOut3Plans),
		PartDialogue:       dialogue(PartDialogue, &dialogueVocabulary),
		PartDialogueTuning: dialogue(PartDialogueTuning, &dialogueTuningVocabulary),
	}
}

// checkSharesNothing checks that mine shares no name, value or line with
// any of others, and, for the LongMemEval-shaped others, that none of
// either's names or values occurs as a word in the other's vocabulary.
func checkSharesNothing(t *testing.T, mine sharedVocabulary, others ...sharedVocabulary) {
	t.Helper()
	text := func(m map[string]bool) string {
		var b strings.Builder
		for s := range m {
			b.WriteString(s + "\n")
		}
		return b.String()
	}
	word := func(k string) *regexp.Regexp {
		if strings.ContainsFunc(k, func(r rune) bool { return r > 0x2e7f }) {
			return regexp.MustCompile(regexp.QuoteMeta(k))
		}
		return regexp.MustCompile(`\b` + regexp.QuoteMeta(k) + `\b`)
	}
	for _, other := range others {
		for s := range mine.all {
			if other.all[s] {
				t.Errorf("%s and %s both hold %q", mine.name, other.name, s)
			}
		}
		if other.dialogue {
			continue // another shape of data: no shared name or value is enough
		}
		otherText, mineText := text(other.all), text(mine.all)
		for _, k := range mine.keys {
			if word(k).MatchString(otherText) {
				t.Errorf("%s's %q occurs in the %s vocabulary", mine.name, k, other.name)
			}
		}
		for _, k := range other.keys {
			if commonWords[k] {
				continue
			}
			if word(k).MatchString(mineText) {
				t.Errorf("%s's %q occurs in the %s vocabulary", other.name, k, mine.name)
			}
		}
	}
}

// TestHeldOut2SharesNothing checks that the second held-out part shares no
// name, value or line with the tuning and held-out parts, and that none of
// their names or values occurs as a word in the other's vocabulary: a
// heuristic fitted to either cannot carry over to it for free.
// TestHeldOut3SharesNothing compares it with the third held-out part.
func TestHeldOut2SharesNothing(t *testing.T) {
	t.Parallel()
	v := partVocabularies()
	checkSharesNothing(t, v[PartHeldOut2], v[PartTuning], v[PartHeldOut], v[PartDialogue], v[PartDialogueTuning])
}

// TestBlindPartsAreGeneratedOnlyWhenAskedFor checks the part's plumbing: its
// presets, that it is left out of the default parts and out of the gate,
// that it comes out the same alone and with every other part, that its
// misses are never written out, and that its report section has its own
// title.
func TestBlindPartsAreGeneratedOnlyWhenAskedFor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		part   string
		vocab  *vocabulary
		others []string
	}{
		{PartHeldOut2, &heldOut2Vocabulary, []string{PartHeldOut, PartTuning}},
		{PartHeldOut3, &heldOut3Vocabulary, []string{PartHeldOut, PartTuning, PartHeldOut2}},
	} {
		t.Run(tc.part, func(t *testing.T) {
			t.Parallel()
			if slices.Contains(Parts, tc.part) || !slices.Contains(AllParts, tc.part) || Tunable(tc.part) || !IsPart(tc.part) {
				t.Fatalf("Parts %v, AllParts %v, tunable %v", Parts, AllParts, Tunable(tc.part))
			}
			if _, err := Preset("gate", tc.part); err == nil {
				t.Errorf("the gate preset accepted the %s part", tc.part)
			}
			alone, err := Preset("small", tc.part)
			if err != nil {
				t.Fatal(err)
			}
			all, err := Preset("small", "all")
			if err != nil {
				t.Fatal(err)
			}
			a, b := generate(t, alone), generate(t, all)
			if len(a.Questions) == 0 || a.Manifest.ByPart[tc.part] != len(a.Questions) || !a.Manifest.Start.Equal(tc.vocab.start) {
				t.Fatalf("--part %s: manifest %+v", tc.part, a.Manifest)
			}
			var inAll []Event
			for _, e := range b.Events {
				if strings.HasPrefix(e.BankID, tc.vocab.bankPrefix+"-") {
					inAll = append(inAll, e)
				}
			}
			if !reflect.DeepEqual(a.Events, inAll) || !reflect.DeepEqual(a.Questions, b.Part(tc.part)) {
				t.Errorf("the %s part differs between --part %s and --part all", tc.part, tc.part)
			}
			for _, e := range a.Events {
				if !strings.HasPrefix(e.BankID, tc.vocab.bankPrefix+"-") {
					t.Fatalf("bank %s of the %s part", e.BankID, tc.part)
				}
			}
			for _, other := range tc.others {
				if partTitle(tc.part) == partTitle(other) {
					t.Errorf("%s report title %q is %s's", tc.part, partTitle(tc.part), other)
				}
				if ChartName(tc.part) == ChartName(other) {
					t.Errorf("%s chart %q is %s's", tc.part, ChartName(tc.part), other)
				}
			}
			if !barred(tc.part) || barred(PartDialogue) || barred(PartDialogueTuning) {
				t.Errorf("%s is not held to the quality bars like the held-out part, or a dialogue part is", tc.part)
			}
		})
	}
}
