package recall

import (
	"strings"
	"unicode"

	"github.com/google/uuid"
)

// A request for a suggestion is answered by what the asker said about
// their tastes and habits, and the embedder rarely brings those near the
// request even behind the suggestion frame ("I'm pescatarian." for "What
// should I cook for a dinner party?"). So for such a request the loaded
// results that state a taste or habit in the first person, told by their
// grammar, form one more ranked list for fusion (listFuse): a statement of
// taste that an arm found deep in its list is lifted as if a second arm
// agreed with it.

// tasteStatement reports whether text says, in the first person, what the
// speaker likes, avoids or habitually does: a first-person subject (I, we)
// followed within two words by an adverb of frequency (always, usually,
// never, only …), a verb of liking or disliking (like, love, prefer,
// hate, avoid …), "rather", "can't stand", or a present-tense "don't"; or
// by a copula and a predicate that is neither a participle nor a function
// word ("I'm vegan", "I've been vegetarian for years", not "I'm thinking
// of…", "I'm on a roll"); or "my favourite". The Chinese form is 我 followed
// by one of the same classes (喜欢, 爱, 讨厌, 总是, 从不, 只 …).
func tasteStatement(text string) bool {
	if strings.ContainsFunc(text, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
		return tasteStatementZh(text)
	}
	var ws []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && r != '\'' && r != '’'
	}) {
		ws = append(ws, strings.ReplaceAll(w, "’", "'"))
	}
	for i, w := range ws {
		lw := strings.ToLower(w)
		if lw == "my" && i+1 < len(ws) && (strings.EqualFold(ws[i+1], "favourite") || strings.EqualFold(ws[i+1], "favorite")) {
			return true
		}
		subj, rest := firstPersonSubject(w)
		if !subj {
			continue
		}
		next := ws[i+1:]
		if rest != "" {
			next = append([]string{rest}, next...)
		}
		if tasteAfterSubject(next) {
			return true
		}
	}
	return false
}

// firstPersonSubject reports a first-person subject and what a contraction
// joined to it ("I'm" → "am", "I've" → "have", "I'd" → "would").
func firstPersonSubject(w string) (bool, string) {
	lw := strings.ToLower(w)
	if w != "I" && !strings.HasPrefix(w, "I'") && lw != "we" && !strings.HasPrefix(lw, "we'") {
		return false, ""
	}
	_, c, ok := strings.Cut(lw, "'")
	if !ok {
		return true, ""
	}
	switch c {
	case "m", "re":
		return true, "am"
	case "ve":
		return true, "have"
	case "d":
		return true, "would"
	case "ll":
		return true, "will"
	}
	return true, ""
}

// tasteAfterSubject looks at the words after a first-person subject,
// past at most two auxiliaries or adverbs ("I'd much rather", "I really
// love").
func tasteAfterSubject(ws []string) bool {
	for j := 0; j < len(ws) && j < 3; j++ {
		w := strings.ToLower(ws[j])
		switch {
		case frequencyAdverbs[w], likingVerbs[w], w == "rather":
			return true
		case (w == "can't" || w == "cannot") && j+1 < len(ws) && strings.EqualFold(ws[j+1], "stand"):
			return true
		case w == "don't" || w == "do" && j+1 < len(ws) && strings.EqualFold(ws[j+1], "not"):
			return true
		case w == "am" || w == "are":
			return copularTrait(ws[j+1:])
		case w == "have" && j+1 < len(ws) && strings.EqualFold(ws[j+1], "been"):
			return copularTrait(ws[j+2:])
		case j < 2 && preVerb[w]:
			continue
		default:
			return false
		}
	}
	return false
}

// preVerb are auxiliaries and adverbs that stand between a subject and
// its verb.
var preVerb = wordSet("would", "have", "do", "really", "just", "also", "still", "much", "truly", "totally", "absolutely", "definitely", "honestly", "genuinely")

// copularTrait reports a predicate after "am"/"have been" that states what
// the speaker is (an adjective or noun), not an ongoing action (-ing), a
// passive or past state (-ed), or a place or phrase (a function word).
func copularTrait(ws []string) bool {
	if len(ws) == 0 {
		return false
	}
	w := strings.ToLower(ws[0])
	if len(w) < 3 || functionWords[w] || strings.HasSuffix(w, "ing") || strings.HasSuffix(w, "ed") || strings.Contains(w, "'") {
		return false
	}
	return true
}

// frequencyAdverbs are the English adverbs of frequency and restriction,
// which make a statement habitual ("I always…", "I only…").
var frequencyAdverbs = wordSet("always", "usually", "normally", "generally", "typically", "often", "never",
	"rarely", "seldom", "only", "mostly", "mainly", "hardly", "sometimes")

// likingVerbs are the English verbs of liking, disliking and preferring.
var likingVerbs = wordSet("like", "likes", "love", "loves", "enjoy", "enjoys", "prefer", "prefers", "hate", "hates",
	"dislike", "dislikes", "avoid", "avoids", "adore", "adores", "loathe", "loathes", "detest", "detests")

// functionWords are English determiners, prepositions, pronouns,
// conjunctions and degree adverbs: after a copula they start a phrase,
// not a trait.
var functionWords = wordSet("a", "an", "the", "this", "that", "these", "those", "some", "any", "no", "not",
	"on", "in", "at", "to", "of", "for", "from", "with", "by", "about", "into", "off", "out", "up", "down",
	"over", "back", "away", "here", "there", "home", "so", "very", "too", "quite", "really", "just", "still",
	"also", "all", "now", "then", "going", "gonna", "sure", "and", "but", "or", "it", "you", "him", "her",
	"them", "me", "us", "my", "your", "his", "its", "our", "their", "what", "how", "when", "where", "why",
	"who", "glad", "sorry", "happy", "afraid", "done", "ok", "okay", "fine", "good", "great", "well")

// tasteZh are the Chinese verbs of liking and disliking and adverbs of
// frequency that, after 我, state a taste or habit.
var tasteZh = []string{"喜欢", "爱", "偏爱", "讨厌", "不喜欢", "受不了", "总是", "一般", "通常", "只", "从不", "从来不", "不吃", "不喝", "吃素", "最爱"}

func tasteStatementZh(text string) bool {
	for rest := text; ; {
		i := strings.Index(rest, "我")
		if i < 0 {
			return false
		}
		rest = rest[i+len("我"):]
		head := []rune(rest)
		head = head[:min(len(head), 4)]
		for _, c := range tasteZh {
			if strings.Contains(string(head), c) {
				return true
			}
		}
	}
}

func wordSet(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// listFuse fuses again with one more ranked list: the loaded results that
// keep selects, in their fused order, as one arm of the default weight. Only
// RRF has ranks to add to.
func listFuse(q *query, traces []ArmTrace, hs []hydrated, fs []fused, k float64, weights map[string]float64, keep func(*hydrated) bool) []fused {
	if q.Fusion != FusionRRF {
		return fs
	}
	sel := make(map[uuid.UUID]bool)
	for i := range hs {
		if keep(&hs[i]) {
			sel[hs[i].ID] = true
		}
	}
	if len(sel) == 0 {
		return fs
	}
	list := ArmTrace{Arm: armExtra}
	for _, f := range fs {
		if sel[f.ID] {
			list.Candidates = append(list.Candidates, Candidate{ID: f.ID, Score: float64(len(sel) - len(list.Candidates))})
		}
	}
	all := append(append(make([]ArmTrace, 0, len(traces)+1), traces...), list)
	return fuse(FusionRRF, all, k, weights)
}

// armExtra names listFuse's list in fusion; it is not an arm a request can
// select.
const armExtra = "extra"

// tasteResult selects the first-person statements of taste or habit.
func tasteResult(h *hydrated) bool { return h.Type == "experience" && tasteStatement(h.Text) }

// A question about the present state of something that asks for a name
// (who, where, which: "Who is my manager now?", "Where do I live these
// days?") is answered by the asker's own statement that names it ("…we're
// settled in Kerrisdale now"), and loses to statements of the same speaker
// that share its words but name nothing ("My manager asked me to…"). So
// such a question gets one more fused list: the loaded first-person
// statements that name someone or something besides their speaker.

// nameQuestion reports a question whose answer is a name, by its
// interrogative: who, whom, whose, where, which (谁, 哪, 哪里, 哪儿, 哪家, 哪个).
func nameQuestion(query string) bool {
	if strings.ContainsFunc(query, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
		return strings.Contains(query, "谁") || strings.Contains(query, "哪")
	}
	for _, w := range strings.FieldsFunc(strings.ToLower(query), func(r rune) bool { return !unicode.IsLetter(r) }) {
		switch w {
		case "who", "whom", "whose", "where", "which":
			return true
		}
	}
	return false
}

// namingResult selects a first-person statement that names an entity other
// than its speaker (the "Name: " its text starts with).
func namingResult(h *hydrated) bool {
	if h.Type != "experience" {
		return false
	}
	speaker, _, _ := strings.Cut(h.Text, ": ")
	for _, e := range h.ents {
		if e.Name != speaker {
			return true
		}
	}
	return false
}
