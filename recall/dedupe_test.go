package recall

import (
	"slices"
	"testing"

	"github.com/google/uuid"
)

func TestDedupeKey(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"That's rough.", "that's rough"},
		{"Dmitri: We live in Capitol Hill, close to the park.", "We live in Capitol Hill, close to the park."},
		{"助手: 好的，我记住了。", "好的，我记住了"},
		{"Assistant: If you sit a lot, alternating can be good.", "If you sit a lot alternating can be good"},
	} {
		if ka, kb := dedupeKey(c.a), dedupeKey(c.b); ka != kb {
			t.Errorf("dedupeKey(%q) = %q, dedupeKey(%q) = %q, want equal", c.a, ka, c.b, kb)
		}
	}
	for _, c := range []struct{ a, b string }{
		{"We live in Ballard.", "We live in Mission Bay."},
		{"Note: the meeting is at 10", "the meeting is at 11"},
		// a colon late in the sentence is not a speaker label
		{"The one thing I learned this year: patience", "patience"},
	} {
		if ka, kb := dedupeKey(c.a), dedupeKey(c.b); ka == kb {
			t.Errorf("dedupeKey(%q) = dedupeKey(%q) = %q, want different", c.a, c.b, ka)
		}
	}
}

func TestCollapseDuplicatesKeepsBestFirst(t *testing.T) {
	mk := func(n byte, text string) hydrated {
		return hydrated{Result: Result{ID: uuid.UUID{n}, Text: text}}
	}
	hs := []hydrated{
		mk(1, "That's rough."),
		mk(2, "Dmitri: We live in Capitol Hill."),
		mk(3, "that's rough"),
		mk(4, "We live in Capitol Hill."), // the observation repeating fact 2
		mk(5, "I moved to Blink Fitness."),
		mk(6, "..."), // no letters: never collapsed with anything
		mk(7, "!!"),
	}
	got, n := collapseDuplicates(hs)
	var ids []byte
	for _, h := range got {
		ids = append(ids, h.ID[0])
	}
	if want := []byte{1, 2, 5, 6, 7}; !slices.Equal(ids, want) || n != 2 {
		t.Errorf("collapseDuplicates kept %v (collapsed %d), want %v (collapsed 2)", ids, n, want)
	}
}
