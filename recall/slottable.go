package recall

import (
	"strings"
	"unicode"

	"github.com/memstream/memstream/text"
)

// slot is a personal attribute that holds one value at a time and changes
// over the years: where someone lives, who employs them, how they commute.
// A question about it ("Where do I live at the moment?") rarely shares
// words with the sentence that changed it ("We finally moved into the new
// place in Fremont."), so neither full-text search nor an embedding that
// knows no synonyms connects them; the slot does.
type slot struct {
	// Name identifies the attribute (residence, employer, …).
	Name string
	// cues are query words that ask about the attribute.
	cues []string
	// phrases are lower-cased word sequences with which facts state or
	// change its value.
	phrases []string
	// terms are the informative words of phrases, for keyword search.
	terms []string
}

// slots lists the attributes memstream recognises. Each is a common,
// changing fact about a person; cues are matched as whole query words,
// phrases as whole-word sequences of a fact's text.
var slots = []*slot{
	{Name: "residence",
		cues:    []string{"live", "living", "home", "neighborhood", "neighbourhood", "reside", "address", "flat", "apartment"},
		phrases: []string{"live in", "living in", "moved into", "moved to", "move to", "moving day", "settled in", "new place", "new apartment", "new flat", "new house", "our flat", "our apartment", "relocated"}},
	{Name: "employer",
		cues:    []string{"employer", "company", "job", "employed", "workplace"},
		phrases: []string{"work at", "working at", "work for", "working for", "job at", "new job", "offer from", "first week at", "been at", "joined", "hired", "started at", "handed in my notice", "quit"}},
	{Name: "manager",
		cues:    []string{"boss", "manager", "supervisor", "report"},
		phrases: []string{"manager", "boss", "report to", "reporting to", "supervisor", "reorganised", "reorganized", "new team"}},
	{Name: "commute",
		cues:    []string{"commute", "commuting", "office"},
		phrases: []string{"commute", "to work", "to the office", "gets me to", "drive to", "ride to"}},
	{Name: "gym",
		cues:    []string{"gym", "fitness", "membership"},
		phrases: []string{"gym", "membership", "train at", "work out at", "fitness"}},
	{Name: "car",
		cues:    []string{"car", "vehicle"},
		phrases: []string{"my car", "new car", "bought a", "traded in", "owner of"}},
	{Name: "phone",
		cues:    []string{"phone"},
		phrases: []string{"my phone", "new phone", "switched to"}},
	{Name: "partner",
		cues:    []string{"partner", "boyfriend", "girlfriend", "husband", "wife", "dating"},
		phrases: []string{"partner", "boyfriend", "girlfriend", "husband", "wife", "dating", "broke up", "engaged", "married"}},
	{Name: "school",
		cues:    []string{"school", "university", "college", "studying"},
		phrases: []string{"school", "university", "college", "enrolled", "transferred to", "studying at"}},
	{Name: "diet",
		cues:    []string{"diet", "eat", "vegetarian", "vegan"},
		phrases: []string{"vegetarian", "vegan", "pescatarian", "gave up", "stopped eating", "diet"}},
}

func init() {
	for _, s := range slots {
		seen := map[string]bool{}
		for _, p := range s.phrases {
			for _, w := range strings.Fields(p) {
				if !text.IsStopword(w) && len(w) > 2 && !seen[w] {
					seen[w] = true
					s.terms = append(s.terms, w)
				}
			}
		}
	}
}

// Terms are the informative words with which facts state the slot's
// value: extra keyword-search terms for a query that asks about it.
func (s *slot) Terms() []string { return s.terms }

// Matches reports whether text states or changes the slot's value: it
// holds one of the slot's phrases as whole words.
func (s *slot) Matches(text string) bool {
	norm := " " + strings.Join(words(text), " ") + " "
	for _, p := range s.phrases {
		if strings.Contains(norm, " "+p+" ") {
			return true
		}
	}
	return false
}

// slotsOf returns the slots a query asks about, in table order.
func slotsOf(q string) []*slot {
	ws := map[string]bool{}
	for _, w := range words(q) {
		ws[w] = true
	}
	var out []*slot
	for _, s := range slots {
		for _, c := range s.cues {
			if ws[c] {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// currentCues mark a question about the present value of something ("Where
// do I live now?"), as opposed to its history.
var currentCues = []string{"now", "currently", "current", "nowadays", "these days", "at the moment", "right now", "at present", "latest", "still", "anymore", "today"}

// asksCurrent reports whether a query asks for the present value.
func asksCurrent(q string) bool {
	norm := " " + strings.Join(words(q), " ") + " "
	for _, c := range currentCues {
		if strings.Contains(norm, " "+c+" ") {
			return true
		}
	}
	return false
}

// words splits text into lower-cased words of letters and digits; an
// apostrophe joins ("I've" → "ive") rather than splits.
func words(text string) []string {
	text = strings.NewReplacer("'", "", "’", "").Replace(text)
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}
