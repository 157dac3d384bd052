package reflect

import (
	"strings"
	"testing"
	"time"
)

// newSession builds a session over hand-made sources, as the tools would
// have gathered them.
func newSession(disp Disposition, query string, now time.Time, models, obs, facts []*source) *session {
	s := &session{r: &Reflector{tok: testTokens()}, req: Request{Query: query}, disp: disp, now: now, sources: map[string]*source{}}
	for _, group := range [][]*source{models, obs, facts} {
		for _, src := range group {
			s.remember(src)
		}
	}
	s.models, s.obs, s.facts = models, obs, facts
	return s
}

func TestExtractivePrefersCurrentEvidence(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	ago := func(d int) time.Time { return now.AddDate(0, 0, -d) }
	alice := map[string]bool{"alice": true}
	q := "Where does Alice live now?"
	for _, c := range []struct {
		name            string
		models, obs     []*source
		facts           []*source
		disp            Disposition
		wantLead        string // id cited on the first line
		wantIn, wantOut []string
	}{
		{
			name: "stale observation loses to a newer fact",
			obs:  []*source{{Kind: kindObservation, ID: "o-bj", Text: "Alice lives in Beijing", Trend: "STALE", When: ago(300), Score: 1}},
			facts: []*source{
				{Kind: kindMemory, ID: "f-sh", Text: "Alice: I live in Shanghai now", When: ago(3), Score: 0.9, Names: alice},
				{Kind: kindMemory, ID: "f-bj", Text: "Alice: I live in Beijing", When: ago(300), Score: 1, Names: alice},
			},
			disp:     Disposition{Skepticism: 5, Literalism: 3, Empathy: 3},
			wantLead: "f-sh",
			wantIn:   []string{"Older observation (stale): Alice lives in Beijing [o-bj]", "Earlier"},
		},
		{
			name: "non-stale observation beats a stale one with a higher score",
			obs: []*source{
				{Kind: kindObservation, ID: "o-bj", Text: "Alice lives in Beijing", Trend: "STALE", When: ago(300), Score: 1},
				{Kind: kindObservation, ID: "o-sh", Text: "Alice lives in Shanghai", Trend: "STRENGTHENING", When: ago(5), Score: 0.85},
			},
			disp:     DefaultDisposition,
			wantLead: "o-sh",
			wantOut:  []string{"o-bj", "Caution"},
		},
		{
			name:     "mental model refreshed after the evidence leads",
			models:   []*source{{Kind: kindMentalModel, ID: "m-home", Text: "Alice lives in Shanghai. She moved in 2026.", When: ago(1), Score: 0.8}},
			obs:      []*source{{Kind: kindObservation, ID: "o-sh", Text: "Alice lives in Shanghai", Trend: "NEW", When: ago(5), Score: 1}},
			disp:     DefaultDisposition,
			wantLead: "m-home",
			wantIn:   []string{"[o-sh]"},
		},
		{
			name:     "observation newer than the mental model leads",
			models:   []*source{{Kind: kindMentalModel, ID: "m-home", Text: "Alice lives in Beijing.", When: ago(30), Score: 0.8}},
			obs:      []*source{{Kind: kindObservation, ID: "o-sh", Text: "Alice lives in Shanghai", Trend: "NEW", When: ago(5), Score: 1}},
			disp:     DefaultDisposition,
			wantLead: "o-sh",
			wantOut:  []string{"m-home"},
		},
		{
			name:     "weak mental model match is ignored",
			models:   []*source{{Kind: kindMentalModel, ID: "m-pets", Text: "Alice has a dog.", When: ago(1), Score: 0.2}},
			facts:    []*source{{Kind: kindMemory, ID: "f-sh", Text: "I live in Shanghai", When: ago(3), Score: 1, Names: alice}},
			disp:     DefaultDisposition,
			wantLead: "f-sh",
			wantOut:  []string{"m-pets"},
		},
		{
			name:     "skeptical bank flags a weakening single-evidence observation",
			obs:      []*source{{Kind: kindObservation, ID: "o-sh", Text: "Alice lives in Shanghai", Trend: "WEAKENING", Proof: 1, When: ago(40), Score: 1}},
			disp:     Disposition{Skepticism: 4, Literalism: 3, Empathy: 3},
			wantLead: "o-sh",
			wantIn:   []string{"Caution: the observation is weakening; it rests on a single piece of evidence."},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSession(c.disp, q, now, c.models, c.obs, c.facts)
			resp := s.extractive()
			first := strings.SplitN(resp.Text, "\n", 2)[0]
			if !strings.HasSuffix(first, "["+c.wantLead+"]") {
				t.Errorf("lead %q, want it to cite %s; answer:\n%s", first, c.wantLead, resp.Text)
			}
			for _, w := range c.wantIn {
				if !strings.Contains(resp.Text, w) {
					t.Errorf("answer lacks %q:\n%s", w, resp.Text)
				}
			}
			for _, w := range c.wantOut {
				if strings.Contains(resp.Text, w) {
					t.Errorf("answer has %q:\n%s", w, resp.Text)
				}
			}
			if !resp.Extractive {
				t.Error("not marked extractive")
			}
		})
	}
	empty := newSession(DefaultDisposition, q, now, nil, nil, nil).extractive()
	if !strings.HasPrefix(empty.Text, "I don't know") || len(empty.BasedOn.Memories)+len(empty.BasedOn.Observations) != 0 {
		t.Errorf("empty bank answer = %+v", empty)
	}
}

func TestFirstSentences(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"Short.", 100, "Short."},
		{"One.  Two is longer. Three goes past the limit for sure.", 25, "One. Two is longer."},
		{"她住在上海。她以前住在北京，后来搬家了。", 30, "她住在上海。"},
	} {
		if got := firstSentences(testTokens(), c.in, c.n); got != c.want {
			t.Errorf("firstSentences(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
