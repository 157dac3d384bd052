package eval

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHeldOut3SharesNothing checks that the third held-out part shares no
// name, value or line with the tuning, held-out and second held-out parts,
// and no name or value with the dialogue parts; and that none of the
// LongMemEval-shaped parts' names or values occurs as a word in the
// other's vocabulary, either way round.
func TestHeldOut3SharesNothing(t *testing.T) {
	t.Parallel()
	v := partVocabularies()
	checkSharesNothing(t, v[PartHeldOut3], v[PartTuning], v[PartHeldOut], v[PartHeldOut2], v[PartDialogue], v[PartDialogueTuning])
}

// TestHeldOut3StartsBeforeEveryOtherPart checks that the part's sessions
// happen in a year of their own, before every other part's.
func TestHeldOut3StartsBeforeEveryOtherPart(t *testing.T) {
	t.Parallel()
	mine := heldOut3Vocabulary.start
	for _, start := range []struct {
		part string
		year int
	}{
		{PartTuning, tuningVocabulary.start.Year()}, {PartHeldOut, heldOutVocabulary.start.Year()}, {PartHeldOut2, heldOut2Vocabulary.start.Year()},
		{PartDialogue, dialogueVocabulary.start.Year()}, {PartDialogueTuning, dialogueTuningVocabulary.start.Year()},
	} {
		if start.year <= mine.Year() {
			t.Errorf("%s starts in %d, heldout-3 in %d", start.part, start.year, mine.Year())
		}
	}
	// Its last session, at the end of the span, is still before the next
	// part's first.
	if end := mine.Add(Full().Span + 30*24*time.Hour); end.Year() != mine.Year() {
		t.Errorf("heldout-3 sessions run into %d", end.Year())
	}
}

// TestHeldOut3IsGeneratedOnlyWhenAskedFor checks the part's plumbing as
// TestHeldOut2IsGeneratedOnlyWhenAskedFor does the second's.
func TestHeldOut3IsGeneratedOnlyWhenAskedFor(t *testing.T) {
	t.Parallel()
	if slices.Contains(Parts, PartHeldOut3) || !slices.Contains(AllParts, PartHeldOut3) || Tunable(PartHeldOut3) || !IsPart(PartHeldOut3) {
		t.Fatalf("Parts %v, AllParts %v, tunable %v", Parts, AllParts, Tunable(PartHeldOut3))
	}
	if _, err := Preset("gate", PartHeldOut3); err == nil {
		t.Error("the gate preset accepted the heldout-3 part")
	}
	alone, err := Preset("small", PartHeldOut3)
	if err != nil {
		t.Fatal(err)
	}
	all, err := Preset("small", "all")
	if err != nil {
		t.Fatal(err)
	}
	a, b := generate(t, alone), generate(t, all)
	if len(a.Questions) == 0 || a.Manifest.ByPart[PartHeldOut3] != len(a.Questions) || !a.Manifest.Start.Equal(heldOut3Vocabulary.start) {
		t.Fatalf("--part heldout-3: manifest %+v", a.Manifest)
	}
	var inAll []Event
	for _, e := range b.Events {
		if strings.HasPrefix(e.BankID, heldOut3Vocabulary.bankPrefix+"-") {
			inAll = append(inAll, e)
		}
	}
	if !reflect.DeepEqual(a.Events, inAll) || !reflect.DeepEqual(a.Questions, b.Part(PartHeldOut3)) {
		t.Error("the heldout-3 part differs between --part heldout-3 and --part all")
	}
	for _, e := range a.Events {
		if !strings.HasPrefix(e.BankID, "held3-") {
			t.Fatalf("bank %s of the heldout-3 part", e.BankID)
		}
	}
	for _, other := range []string{PartHeldOut, PartTuning, PartHeldOut2} {
		if partTitle(PartHeldOut3) == partTitle(other) {
			t.Errorf("heldout-3 report title %q is %s's", partTitle(PartHeldOut3), other)
		}
		if ChartName(PartHeldOut3) == ChartName(other) {
			t.Errorf("heldout-3 chart %q is %s's", ChartName(PartHeldOut3), other)
		}
	}
	if !barred(PartHeldOut3) {
		t.Error("heldout-3 is not held to the quality bars like the held-out parts")
	}
}

// TestHeldOut3HasTheSecondsShape checks that the part asks the same
// question types, as many per bank, as the second held-out part.
func TestHeldOut3HasTheSecondsShape(t *testing.T) {
	t.Parallel()
	count := func(part string) map[string]int {
		cfg, err := Preset("full", part)
		if err != nil {
			t.Fatal(err)
		}
		return generate(t, cfg).Manifest.ByType
	}
	if h2, h3 := count(PartHeldOut2), count(PartHeldOut3); !reflect.DeepEqual(h2, h3) {
		t.Errorf("questions by type: heldout-2 %v, heldout-3 %v", h2, h3)
	}
}
