package tokens

import "unicode/utf8"

// estimate is the fallback when the model's tokenizer is unknown. It mimics the
// cl100k pre-tokenizer and charges each piece at least what cl100k can:
// a run of ASCII letters ceil(len/3) tokens; digits one token per three
// (cl100k splits them so); every other ASCII character, spaces included,
// one token (cl100k mostly merges a space into the next word, so this
// over-counts); a non-ASCII rune its UTF-8 length, a hard upper bound since
// a byte-level BPE token is at least one byte (Chinese costs 1-2 tokens a
// character in cl100k, so this over-counts it 1.5-3 times).
// English costs about 4 letters a token, so it over-counts prose by ~30%,
// which costs some results but keeps an agent's context from overflowing.
// Pathological strings of rare letter trigrams could still exceed it; the
// test compares it with cl100k on the fixture texts.
func estimate(s string) int {
	n, letters, digits := 0, 0, 0
	flush := func() {
		n += (letters+2)/3 + (digits+2)/3
		letters, digits = 0, 0
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			if digits > 0 {
				flush()
			}
			letters++
		case r >= '0' && r <= '9':
			if letters > 0 {
				flush()
			}
			digits++
		case r < utf8.RuneSelf:
			flush()
			n++
		default:
			flush()
			n += utf8.RuneLen(r)
		}
	}
	flush()
	return n
}
