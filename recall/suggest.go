package recall

import (
	"strings"
	"unicode"
)

// A request for a suggestion ("What should I cook tonight?", "Any film
// ideas?", 推荐一本书) is answered by the asker's tastes and habits, which
// were said in passing and rarely share words or embedding direction with
// the request ("My go-to order is…" vs "What should I order?"). So the
// query is embedded behind a generic first-person statement of taste and
// habit: the vector then leans towards the asker's statements of what they
// like, avoid and usually do, whatever the topic. The frames are the
// common English (and Chinese) verbs of liking and disliking and the
// adverbs of frequency, not any one conversation's phrasing.
const (
	suggestionFrame   = "I like, love, enjoy, prefer, hate and avoid; I always, usually, only, never: "
	suggestionFrameZh = "我喜欢、爱、偏爱、讨厌、不吃；我总是、一般、只、从不："
)

// suggestionQuery returns the text to embed for query: framed when it asks
// for a suggestion, else query itself.
func suggestionQuery(query string) string {
	if !suggestionRequest(query) {
		return query
	}
	for _, r := range query {
		if unicode.Is(unicode.Han, r) {
			return suggestionFrameZh + query
		}
	}
	return suggestionFrame + query
}

// suggestionRequest reports a question that asks for advice about what to
// do, have or choose next, by its grammar: a noun or verb of suggesting
// (suggest, recommend, idea, advice, tip), or a modal question that
// concerns the asker ("What should I…", "What would keep me…", "Could you
// … for my …"). A question about
// advice given before ("What did you recommend?") is a question about the
// past, not a request, and is left alone.
func suggestionRequest(query string) bool {
	q := strings.TrimSpace(query)
	if q == "" {
		return false
	}
	if strings.ContainsFunc(q, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
		return suggestionRequestZh(q)
	}
	var ws []string
	for _, w := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !unicode.IsLetter(r) && r != '\''
	}) {
		ws = append(ws, strings.ReplaceAll(strings.ReplaceAll(w, "’", "'"), "'", ""))
	}
	modal, asker := false, false
	for _, w := range ws {
		switch w {
		case "did", "suggested", "recommended", "told", "said", "gave":
			return false // about advice already given
		case "suggest", "suggestion", "suggestions", "recommend", "recommendation", "recommendations",
			"idea", "ideas", "advice", "advise", "tip", "tips":
			return true
		case "id": // I'd
			return true
		case "should", "shall", "would", "could":
			modal = true
		case "i", "me", "my", "we", "us", "our":
			asker = true
		}
	}
	return modal && asker
}

// suggestionRequestZh is suggestionRequest for a Chinese question: 推荐,
// 建议, or 我该/我应该 (should I), not about advice already given (…了).
func suggestionRequestZh(q string) bool {
	if strings.Contains(q, "推荐了") || strings.Contains(q, "建议了") || strings.Contains(q, "说过") {
		return false
	}
	for _, c := range []string{"推荐", "建议", "我该", "我应该", "我们该"} {
		if strings.Contains(q, c) {
			return true
		}
	}
	return false
}
