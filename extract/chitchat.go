package extract

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// reactionOpeners begin an assistant's short reaction to what the user
// said ("That's rough.", "Good choice for a weeknight.", "Sounds fun!",
// "Hope it's fixed soon."). Such a reply evaluates the user's news
// without adding any: the news is in the user's own turn.
var reactionOpeners = map[string]bool{
	"good": true, "nice": true, "great": true, "that": true, "thats": true, "sounds": true,
	"sorry": true, "ugh": true, "oh": true, "wow": true, "cool": true, "awesome": true,
	"noted": true, "glad": true, "hope": true, "hopefully": true, "fair": true, "congrats": true,
	"congratulations": true, "thanks": true, "thank": true, "understood": true, "ah": true,
	"lovely": true, "perfect": true, "what": true, "how": true, "ouch": true, "yikes": true,
}

// maxReactionWords bounds a reaction: past it a sentence that opens with
// "That" or "Good" usually says something ("That restaurant on 5th closed
// last month because the landlord doubled the rent").
const maxReactionWords = 9

// hanAck are acknowledgement phrases of Chinese assistant replies (好的,
// 记住了, 原来如此, 不错…): a short reply that holds one and names nobody
// confirms the user's news without adding any.
var hanAck = []string{"好的", "记住", "原来如此", "谢谢", "不错", "明白", "知道了", "收到", "哦", "真好", "太好了", "挺意外"}

// maxHanAck bounds such a reply in Han characters.
const maxHanAck = 12

// assistantChitChat reports an assistant sentence that records nothing
// about the user or the world: a question back to the user ("Anything
// planned?", "Did you make it in on time?", "好看吗？") or a short
// reaction or acknowledgement ("That's rough.", "Good to know!", "好的，我
// 记住了。"), provided it names no one and holds no number. Such replies
// recur in every conversation, and stored as facts their few common words
// and character n-grams match many queries and crowd out the facts that
// answer them. An assistant's recommendations and answers are statements
// and are kept: users ask what the assistant suggested.
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
	question := strings.HasSuffix(s, "?") || strings.HasSuffix(s, "？")
	if han > 0 {
		if len(words) > 0 {
			return false
		}
		if question {
			return han <= 2*maxHanAck
		}
		if han > maxHanAck {
			return false
		}
		for _, a := range hanAck {
			if strings.Contains(s, a) {
				return true
			}
		}
		return false
	}
	if len(words) == 0 {
		return false
	}
	if len(words) > maxReactionWords {
		return false
	}
	if question {
		return !suggestion(words)
	}
	return reactionOpeners[words[0]]
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
