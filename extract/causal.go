package extract

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// clauseSplit is the outcome of looking for a causal cue in one sentence.
type clauseSplit struct {
	// cause and effect are set when the sentence was split in two.
	cause, effect string
	// causeFirst records the order of the clauses in the sentence, so
	// that facts keep the order of the text.
	causeFirst bool
	// fromPrevious is set when the sentence opens with a consequence cue
	// ("So", "Therefore", 所以): it is caused by the previous fact.
	fromPrevious bool
}

// Cues, matched on the lower-cased sentence. Effect-first cues put the
// effect before the cue ("X because Y"); cause-first ones put the cause
// before it ("X, so Y").
var (
	enEffectFirst = []string{" because of ", " because ", " due to ", " since "}
	enCauseFirst  = []string{", so ", "; so ", ", therefore ", "; therefore ", ", thus ", "; thus ", ", as a result, ", "; as a result, ", ", which is why ", ", hence "}
	enLeadCause   = []string{"because of ", "because ", "due to ", "since "}
	enLeadResult  = []string{"so", "therefore", "thus", "as a result", "consequently", "hence", "that's why", "that is why"}
	cnLeadResult  = []string{"所以", "因此", "因而", "于是", "结果"}
)

// sinceSubjects must follow a mid-sentence "since" for it to read as a
// cause: "since I had time" is causal, "since March" is temporal.
var sinceSubjects = map[string]bool{
	"i": true, "we": true, "you": true, "he": true, "she": true, "it": true, "they": true,
	"the": true, "my": true, "our": true, "his": true, "her": true, "their": true, "there": true,
	"this": true, "that": true,
}

// splitCausal looks for one causal cue in s and splits s into a cause and
// an effect clause. Sentences without a cue, or whose clauses would be too
// short to stand alone, are left whole.
func splitCausal(s string) clauseSplit {
	lower := asciiLower(s)
	for _, c := range enLeadResult {
		if strings.HasPrefix(lower, c) && boundaryAfter(lower, len(c)) {
			return clauseSplit{fromPrevious: true}
		}
	}
	for _, c := range cnLeadResult {
		if strings.HasPrefix(s, c) {
			return clauseSplit{fromPrevious: true}
		}
	}
	for _, c := range enLeadCause {
		if !strings.HasPrefix(lower, c) {
			continue
		}
		rest := s[len(c):]
		if c == "since " && !sinceSubjects[firstWord(strings.ToLower(rest))] {
			break
		}
		if k := strings.IndexAny(rest, ",;"); k > 0 {
			if sp, ok := pair(rest[:k], rest[k+1:], true); ok {
				return sp
			}
		}
		break
	}
	for _, c := range enEffectFirst {
		if k := strings.Index(lower, c); k > 0 {
			rest := s[k+len(c):]
			if c == " since " && !sinceSubjects[firstWord(strings.ToLower(rest))] {
				continue
			}
			if sp, ok := pair(rest, s[:k], false); ok {
				return sp
			}
		}
	}
	for _, c := range enCauseFirst {
		if k := strings.Index(lower, c); k > 0 {
			rest := s[k+len(c):]
			if c == ", so " && strings.HasPrefix(strings.ToLower(rest), "that ") {
				continue // purpose, not consequence
			}
			if sp, ok := pair(s[:k], rest, true); ok {
				return sp
			}
		}
	}
	return splitCausalCN(s)
}

func splitCausalCN(s string) clauseSplit {
	// 因为Y，(所以)X and 由于Y，X.
	for _, c := range []string{"因为", "由于"} {
		k := strings.Index(s, c)
		if k < 0 {
			continue
		}
		rest := s[k+len(c):]
		if k == 0 {
			if m := indexComma(rest); m > 0 {
				effect := trimLeadResult(rest[m:])
				if sp, ok := pair(rest[:m], effect, true); ok {
					return sp
				}
			}
			continue
		}
		// X，因为Y
		if prev, _ := utf8.DecodeLastRuneInString(s[:k]); isComma(prev) {
			if sp, ok := pair(rest, s[:k], false); ok {
				return sp
			}
		}
	}
	// Y，所以X / Y，因此X
	for _, c := range cnLeadResult[:3] {
		if k := strings.Index(s, c); k > 0 {
			if prev, _ := utf8.DecodeLastRuneInString(s[:k]); isComma(prev) {
				if sp, ok := pair(s[:k], s[k+len(c):], true); ok {
					return sp
				}
			}
		}
	}
	// Y导致(了)X
	if k := strings.Index(s, "导致"); k > 0 {
		rest := strings.TrimPrefix(s[k+len("导致"):], "了")
		if sp, ok := pair(s[:k], rest, true); ok {
			return sp
		}
	}
	return clauseSplit{}
}

func trimLeadResult(s string) string {
	s = strings.TrimLeft(s, "，,；; ")
	for _, c := range cnLeadResult[:3] {
		s = strings.TrimPrefix(s, c)
	}
	return s
}

func indexComma(s string) int {
	for i, r := range s {
		if isComma(r) {
			return i
		}
	}
	return -1
}

func isComma(r rune) bool { return r == '，' || r == ',' || r == '；' || r == ';' }

// pair trims both clauses and accepts the split only if each can stand as
// a fact on its own.
func pair(cause, effect string, causeFirst bool) (clauseSplit, bool) {
	cause, effect = trimClause(cause), trimClause(effect)
	if !substantial(cause) || !substantial(effect) {
		return clauseSplit{}, false
	}
	return clauseSplit{cause: cause, effect: effect, causeFirst: causeFirst}, true
}

func trimClause(s string) string {
	return strings.TrimFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || isComma(r) || r == '、'
	})
}

// substantial means at least two words of Latin text or two Han characters.
func substantial(s string) bool {
	han, words, inWord := 0, 0, false
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Han, r):
			han++
			inWord = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if !inWord {
				words++
			}
			inWord = true
		default:
			inWord = false
		}
	}
	return han >= 2 || words >= 2 || han >= 1 && words >= 1
}

func boundaryAfter(s string, i int) bool {
	return i >= len(s) || !isASCIILetter(s[i])
}

// asciiLower lower-cases ASCII letters only, so that byte offsets found in
// the result are valid in the original.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func firstWord(s string) string {
	i := 0
	for i < len(s) && isASCIILetter(s[i]) {
		i++
	}
	return s[:i]
}
