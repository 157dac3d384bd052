package extract

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxQuestionWords and maxHanQuestion bound a question back to the user:
// past them a question usually carries content of its own.
const (
	maxQuestionWords = 9
	maxHanQuestion   = 24
)

// assistantChitChat reports an assistant sentence that records nothing
// about the user or the world: a short question back to the user
// ("Anything planned?", "Did you make it in on time?", "好看吗？") that
// names no one, holds no number and proposes nothing. Such questions
// recur in every conversation, and stored as facts their few common words
// and character n-grams match many queries and crowd out the facts that
// answer them. The rule is grammatical, not a word list: statements are
// kept (an assistant's recommendations and answers are what users ask
// about), and so are suggestions phrased as questions ("How about a
// hostel?"), told apart by the standard English suggestion forms.
func assistantChitChat(s string, finder *entityFinder) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	var words []string
	han := 0
	for i := 0; i < len(s); {
		r, sz := utf8.DecodeRuneInString(s[i:])
		switch {
		case r < 0x80 && isASCIILetter(byte(r)):
			j := i
			for j < len(s) && (isASCIILetter(s[j]) || s[j] == '\'') {
				j++
			}
			w := s[i:j]
			if len(words) > 0 && capitalised(w) && w != "I" && !strings.HasPrefix(w, "I'") {
				return false // a name, a title, a place
			}
			words = append(words, strings.ToLower(strings.ReplaceAll(w, "'", "")))
			i = j
			continue
		case unicode.IsDigit(r):
			return false
		case unicode.Is(unicode.Han, r):
			han++
		case unicode.IsLetter(r):
			return false // another script: not judged here
		}
		i += sz
	}
	if len(finder.find(s, nil)) > 0 {
		return false
	}
	if !strings.HasSuffix(s, "?") && !strings.HasSuffix(s, "？") {
		return false
	}
	if han > 0 {
		return len(words) == 0 && han <= maxHanQuestion
	}
	return len(words) > 0 && len(words) <= maxQuestionWords && !suggestion(words)
}

// suggestion reports a question that proposes something ("Have you tried
// the cobra stretch?", "How about a hostel?"): that is advice, and users
// ask what the assistant advised.
func suggestion(words []string) bool {
	if len(words) >= 2 {
		switch words[0] + " " + words[1] {
		case "how about", "what about", "why not", "have you", "would you", "could you", "maybe try", "shall we":
			return true
		}
	}
	return false
}
