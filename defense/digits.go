package defense

// The digit scanner finds payment cards, US SSNs and IBANs in code rather
// than with regexes. Their real test is a checksum or a rule table, and a
// hand-written pass over the bytes skips non-digits at memory speed, which
// keeps clean text cheap even though these patterns have no keyword.

type digitPatterns struct{ card, ssn, iban int } // pattern indices, -1 if absent

func (s *Scanner) scanDigits(text string, dp digitPatterns, out []candidate) []candidate {
	n := len(text)
	i := 0
	for i < n {
		if !isDigit(text[i]) {
			i++
			continue
		}
		// i starts a digit run: the loop below always leaves i past a run.
		if dp.iban >= 0 && i >= 2 && isUpper(text[i-1]) && isUpper(text[i-2]) && (i == 2 || !isWord(text[i-3])) {
			if end, shaped, ok := matchIBAN(text, i-2); shaped {
				if ok {
					out = append(out, candidate{start: i - 2, end: end, pat: dp.iban})
				}
				i = end // a failed mod-97 IBAN is not re-read as a card
				continue
			}
		}
		if i > 0 && (isWord(text[i-1]) || (i >= 2 && isDigit(text[i-2]) && isNumGlue(text[i-1]))) {
			// Inside a longer token (hex id, SHA, version, decimal): skip it.
			for i < n && isWord(text[i]) {
				i++
			}
			continue
		}
		if dp.ssn >= 0 {
			if end, ok := matchSSN(text, i); ok {
				out = append(out, candidate{start: i, end: end, pat: dp.ssn})
				i = end
				continue
			}
		}
		if dp.card >= 0 {
			if end, ok := matchCard(text, i); ok {
				out = append(out, candidate{start: i, end: end, pat: dp.card})
				i = end
				continue
			}
		}
		for i < n && isDigit(text[i]) {
			i++
		}
	}
	return out
}

func isNumGlue(c byte) bool { return c == '-' || c == '.' || c == ',' || c == '/' || c == ':' }

// rightClear reports whether a numeric match ending at end is not glued to
// more of the same token (letters, digits, a decimal part, a dashed tail).
func rightClear(text string, end int) bool {
	if end >= len(text) {
		return true
	}
	if isWord(text[end]) {
		return false
	}
	return !(end+1 < len(text) && isNumGlue(text[end]) && isDigit(text[end+1]))
}

func matchSSN(text string, i int) (int, bool) {
	if i+11 > len(text) {
		return 0, false
	}
	s := text[i : i+11]
	for k := 0; k < 11; k++ {
		if k == 3 || k == 6 {
			if s[k] != '-' {
				return 0, false
			}
		} else if !isDigit(s[k]) {
			return 0, false
		}
	}
	if !rightClear(text, i+11) || !validSSN(s[0:3], s[4:6], s[7:11]) {
		return 0, false
	}
	return i + 11, true
}

// matchCard reads digit groups separated by single spaces or dashes and
// tries the longest prefix of whole groups with 13–19 digits that passes
// ValidCard, so "4111 1111 1111 1111 12/27" still yields the card.
func matchCard(text string, i int) (int, bool) {
	n := len(text)
	var digits [19]byte
	var ends [19]struct{ pos, nd int }
	nd, ng := 0, 0
	j := i
	for {
		k := j
		for k < n && isDigit(text[k]) {
			k++
		}
		glen := k - j
		if nd+glen > 19 || (ng > 0 && glen < 3) || (ng == 0 && glen < 3) {
			break
		}
		copy(digits[nd:], text[j:k])
		nd += glen
		ends[ng] = struct{ pos, nd int }{k, nd}
		ng++
		if k+1 < n && (text[k] == ' ' || text[k] == '-') && isDigit(text[k+1]) {
			j = k + 1
			continue
		}
		break
	}
	for g := ng - 1; g >= 0; g-- {
		e := ends[g]
		if e.nd < 13 {
			break
		}
		end := e.pos
		// A prefix may be followed by " 123" (more groups), but never by
		// letters or a decimal part.
		if end < n && isWord(text[end]) {
			continue
		}
		if end+1 < n && (text[end] == '.' || text[end] == ',') && isDigit(text[end+1]) {
			continue
		}
		if ValidCard(string(digits[:e.nd])) {
			return end, true
		}
	}
	return 0, false
}

// matchIBAN reads a country code, check digits and the registry length of
// upper-case alphanumerics, allowing the printed form's single spaces every
// four characters. shaped reports a complete IBAN-shaped token (so the
// caller can skip it); ok additionally requires mod-97.
func matchIBAN(text string, p int) (end int, shaped, ok bool) {
	want, known := ibanLengths[text[p:p+2]]
	if !known {
		return 0, false, false
	}
	var buf [34]byte
	n, cnt, j := len(text), 0, p
	for cnt < want && j < n {
		c := text[j]
		switch {
		case isDigit(c) || isUpper(c):
			buf[cnt] = c
			cnt++
			j++
		case c == ' ' && cnt > 0 && cnt%4 == 0 && j+1 < n && (isDigit(text[j+1]) || isUpper(text[j+1])):
			j++
		default:
			return 0, false, false
		}
	}
	if cnt < want || (j < n && isWord(text[j])) {
		return 0, false, false
	}
	return j, true, IBANMod97(string(buf[:cnt]))
}
