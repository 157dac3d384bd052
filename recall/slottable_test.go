package recall

import (
	"slices"
	"testing"
)

func slotNames(ss []*slot) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

func TestSlotsOf(t *testing.T) {
	for _, c := range []struct {
		q    string
		want []string
	}{
		{"Where do I live at the moment?", []string{"residence"}},
		{"Which neighborhood is my home in now?", []string{"residence"}},
		{"Who is my employer at the moment?", []string{"employer"}},
		{"Who is my boss right now?", []string{"manager"}},
		{"Which gym am I a member of these days?", []string{"gym"}},
		{"What did you recommend for my flight?", nil},
		{"Homework tips?", nil}, // whole words only
	} {
		if got := slotNames(slotsOf(c.q)); !slices.Equal(got, c.want) {
			t.Errorf("slotsOf(%q) = %v, want %v", c.q, got, c.want)
		}
	}
}

func TestSlotMatches(t *testing.T) {
	res := slotsOf("where do I live")[0]
	for _, c := range []struct {
		text string
		want bool
	}{
		{"We finally moved into the new place in Fremont.", true},
		{"Moving day is over, we're settled in Kerrisdale now.", true},
		{"Hugo: We live in Ballard, close to the park.", true},
		{"We booked a table at the Italian place.", false},
		{"I delivered the livestock report.", false}, // "live" inside a word
	} {
		if got := res.Matches(c.text); got != c.want {
			t.Errorf("residence.Matches(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	if terms := res.Terms(); !slices.Contains(terms, "moved") || slices.Contains(terms, "in") {
		t.Errorf("residence terms = %v, want informative words such as moved and no stop words", terms)
	}
}

func TestAsksCurrent(t *testing.T) {
	for q, want := range map[string]bool{
		"Where do I live at the moment?":         true,
		"Which gym am I a member of these days?": true,
		"How do I get to the office nowadays?":   true,
		"Where did I live last year?":            false,
		"Which places have I lived in?":          false,
		"Did I know him?":                        false, // "now" inside a word
	} {
		if got := asksCurrent(q); got != want {
			t.Errorf("asksCurrent(%q) = %v, want %v", q, got, want)
		}
	}
}
