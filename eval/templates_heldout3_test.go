package eval

import (
	"reflect"
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
