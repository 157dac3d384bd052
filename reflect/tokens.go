package reflect

import "unicode"

// estimateTokens approximates what s costs in a model's context: about
// four bytes per token for alphabetic scripts, one token per Han, Kana or
// Hangul character. It errs high rather than low, because a budget that
// undercounts overflows the model's context and an exact BPE count would
// tie the budget to one model's tokenizer.
func estimateTokens(s string) int {
	var other, cjk int
	for _, r := range s {
		switch {
		case r < 0x80: // the common case first: the table lookups are slow
			other++
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul):
			cjk++
		default:
			other += 2
		}
	}
	return cjk + (other+3)/4
}

// truncateToTokens cuts s to at most n estimated tokens, marking the cut so
// the model knows the text goes on.
func truncateToTokens(s string, n int) string {
	if estimateTokens(s) <= n {
		return s
	}
	const mark = " …[truncated]"
	budget := n - estimateTokens(mark)
	if budget <= 0 {
		return ""
	}
	rs := []rune(s)
	lo, hi := 0, len(rs)
	for lo < hi { // longest prefix that fits
		mid := (lo + hi + 1) / 2
		if estimateTokens(string(rs[:mid])) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return string(rs[:lo]) + mark
}
