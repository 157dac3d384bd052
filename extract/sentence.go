package extract

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// abbreviations end with a dot that does not end a sentence. Matched on
// the lower-cased word before the dot, internal dots included.
var abbreviations = map[string]bool{
	"dr": true, "mr": true, "mrs": true, "ms": true, "prof": true, "sr": true,
	"jr": true, "st": true, "vs": true, "e.g": true, "i.e": true,
	"no": true, "approx": true,
	"a.m": true, "p.m": true, "u.s": true, "u.k": true, "jan": true, "feb": true,
	"mar": true, "apr": true, "jun": true, "jul": true, "aug": true, "sep": true,
	"sept": true, "oct": true, "nov": true, "dec": true, "mt": true, "ave": true,
	"fig": true, "dept": true, "est": true,
}

// weakAbbreviations often end a sentence too ("works at Acme Inc."): they
// end one when the next word is capitalised.
var weakAbbreviations = map[string]bool{"inc": true, "ltd": true, "co": true, "corp": true, "etc": true, "llc": true}

func isClosing(r rune) bool {
	switch r {
	case '"', '\'', ')', ']', '”', '’', '」', '』', '）', '》':
		return true
	}
	return false
}

// segment splits text into sentences. A newline always ends one (chat
// messages use line breaks as sentence breaks); so do 。！？ and a run of
// . ! ? followed by whitespace, unless the dot ends an abbreviation or an
// initial, or the next word starts in lower case. Sentences are trimmed.
func segment(text string) []string {
	var out []string
	start := 0
	emit := func(end int) {
		if s := strings.TrimSpace(text[start:end]); s != "" {
			out = append(out, s)
		}
		start = end
	}
	for i := 0; i < len(text); {
		r, sz := utf8.DecodeRuneInString(text[i:])
		switch r {
		case '\n':
			emit(i + 1)
			i++
			continue
		case '。', '！', '？', '…':
			j := i + sz
			for j < len(text) {
				r2, sz2 := utf8.DecodeRuneInString(text[j:])
				if r2 != '。' && r2 != '！' && r2 != '？' && r2 != '…' && !isClosing(r2) {
					break
				}
				j += sz2
			}
			emit(j)
			i = j
			continue
		case '.', '!', '?':
			j := i + 1
			for j < len(text) && (text[j] == '.' || text[j] == '!' || text[j] == '?') {
				j++
			}
			single := r == '.' && j == i+1
			for j < len(text) {
				r2, sz2 := utf8.DecodeRuneInString(text[j:])
				if !isClosing(r2) {
					break
				}
				j += sz2
			}
			if j < len(text) && text[j] != ' ' && text[j] != '\t' && text[j] != '\n' && text[j] != '\r' {
				r2, _ := utf8.DecodeRuneInString(text[j:])
				if r2 < 0x2E80 { // a CJK character may follow with no space
					i = j
					continue
				}
			}
			if single && !sentenceDot(text, i, j) {
				i = j
				continue
			}
			emit(j)
			i = j
			continue
		}
		i += sz
	}
	emit(len(text))
	return out
}

// sentenceDot decides whether the single dot at i (followed by whitespace
// from j on) ends a sentence.
func sentenceDot(text string, i, j int) bool {
	k := i
	for k > 0 && (isASCIILetter(text[k-1]) || text[k-1] == '.') {
		k--
	}
	word := text[k:i]
	if len(word) == 1 && word[0] >= 'A' && word[0] <= 'Z' {
		return false // an initial: "J. K. Rowling"
	}
	if abbreviations[strings.ToLower(word)] {
		return false
	}
	for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
		j++
	}
	if weakAbbreviations[strings.ToLower(word)] {
		return j >= len(text) || !(text[j] >= 'a' && text[j] <= 'z')
	}
	if j < len(text) && text[j] >= 'a' && text[j] <= 'z' {
		return false // "approx. two", "vs. them"
	}
	return true
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// fillerWords carry no memory on their own. A sentence made only of them
// ("ok thanks so much", "hi there") is dropped.
var fillerWords = map[string]bool{
	"hi": true, "hello": true, "hey": true, "thanks": true, "thank": true, "you": true,
	"so": true, "much": true, "ok": true, "okay": true, "k": true, "sure": true,
	"yes": true, "yeah": true, "yep": true, "no": true, "nope": true, "cool": true,
	"great": true, "nice": true, "got": true, "it": true, "bye": true, "goodbye": true,
	"good": true, "morning": true, "night": true, "evening": true, "afternoon": true,
	"there": true, "lol": true, "haha": true, "hahaha": true, "hmm": true, "awesome": true,
	"alright": true, "sounds": true, "wow": true, "oh": true, "ah": true, "um": true,
	"uh": true, "please": true, "welcome": true, "a": true, "lot": true, "np": true,
	"thx": true, "ty": true, "see": true, "ya": true, "later": true, "perfect": true,
	"right": true, "indeed": true, "exactly": true, "agreed": true, "fine": true,
	"youre": true, "re": true, "all": true, "the": true, "best": true, "cheers": true,
	"noted": true, "understood": true, "will": true, "do": true, "that": true, "is": true,
	"s": true, "very": true, "really": true, "and": true, "too": true, "again": true,
	"exciting": true, "fun": true, "interesting": true, "lovely": true, "amazing": true,
	"wonderful": true, "glad": true, "hear": true, "to": true, "happy": true, "help": true,
}

var greetings = map[string]bool{"hi": true, "hello": true, "hey": true, "bye": true, "thanks": true, "dear": true, "good": true}

// fillerHan are the characters of content-free Chinese replies: 好的, 谢谢,
// 嗯嗯, 哈哈, 收到, 没问题, 再见.
const fillerHan = "好的谢嗯哈啊呀哦噢吧呢嘛了对是行可以收到明白您你早安再见拜没问题不客气多太棒赞晚上午下听起来很错真"

// contentFree reports whether a sentence carries nothing worth remembering.
func contentFree(s string) bool {
	var words []string
	capitalised := 0
	hanRunes, hanFiller, other := 0, 0, 0
	for i := 0; i < len(s); {
		r, sz := utf8.DecodeRuneInString(s[i:])
		switch {
		case r < 0x80 && isASCIILetter(byte(r)):
			j := i
			for j < len(s) && isASCIILetter(s[j]) {
				j++
			}
			if s[i] >= 'A' && s[i] <= 'Z' {
				capitalised++
			}
			words = append(words, strings.ToLower(s[i:j]))
			i = j
			continue
		case unicode.Is(unicode.Han, r):
			hanRunes++
			if strings.ContainsRune(fillerHan, r) {
				hanFiller++
			}
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			other++
		}
		i += sz
	}
	if other > 0 {
		return false
	}
	if hanRunes > 0 {
		return hanRunes == hanFiller && hanRunes <= 6 && allFiller(words)
	}
	if len(words) == 0 {
		return true // punctuation, emoji
	}
	if allFiller(words) {
		return true
	}
	// "Hi Alice!", "Thanks Bob" : a greeting and a name.
	if greetings[words[0]] && len(words) <= 2 {
		return true
	}
	// Letter sign-offs: "Thanks,\nAlice Chen", "Best regards, Bob".
	if signOffs[words[0]] && len(words) <= 4 && capitalised >= len(words)-1 {
		return true
	}
	// A bare name on its own line ("Alice", "Alice Chen") is a signature.
	return len(words) <= 2 && capitalised == len(words)
}

var signOffs = map[string]bool{"thanks": true, "best": true, "regards": true, "cheers": true, "sincerely": true, "love": true, "yours": true, "warmly": true}

func allFiller(words []string) bool {
	for _, w := range words {
		if !fillerWords[w] {
			return false
		}
	}
	return true
}
