package defense

import (
	"encoding/base64"
	"strings"
)

// Validators run on the reported span after the regex matched. They exist
// because a regex alone cannot tell "sk-" + a real key from "sk-" + an
// English phrase in kebab-case, or a placeholder from a password.

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isAlnum(c byte) bool { return isDigit(c) || isUpper(c) || isLower(c) }
func isWord(c byte) bool  { return isAlnum(c) || c == '_' }

// notLowEntropy rejects documentation placeholders such as "ghp_xxxx…" or
// "sk-proj-0000…": real tokens are random, and a span with very few
// distinct bytes or a long run of one byte is someone's "insert key here".
func notLowEntropy(s string) bool {
	var seen [256]bool
	distinct, run, maxRun := 0, 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !seen[c] {
			seen[c] = true
			distinct++
		}
		if i > 0 && s[i-1] == c {
			run++
		} else {
			run = 1
		}
		maxRun = max(maxRun, run)
	}
	if maxRun >= 8 {
		return false
	}
	return len(s) < 16 || distinct >= 6
}

// mixedToken guards the loosest vendor shapes (bare "sk-", "xai-"): a real
// key mixes letters and digits, while slugs like "sk-learn-pipeline-…" or
// "task-…" prose do not.
func mixedToken(s string) bool {
	var d, l bool
	for i := 0; i < len(s); i++ {
		d = d || isDigit(s[i])
		l = l || isUpper(s[i]) || isLower(s[i])
	}
	return d && l && notLowEntropy(s)
}

var placeholderWords = []string{
	"xxxx", "****", "...", "<", ">", "{{", "${", "your", "example", "placeholder",
	"redacted", "changeme", "change_me", "change-me", "changeit", "dummy", "sample",
}

var placeholderExact = map[string]bool{
	"password": true, "passwd": true, "pass": true, "secret": true, "pwd": true,
	"pw": true, "token": true, "none": true, "null": true, "nil": true, "true": true,
	"false": true, "undefined": true, "required": true, "optional": true,
	"string": true, "boolean": true, "hidden": true, "empty": true, "invalid": true,
	"incorrect": true, "protected": true, "encrypted": true, "hashed": true,
	"unknown": true, "provided": true, "password123": true, "12345678": true,
	"123456789": true, "1234567890": true, "abcdefgh": true, "qwertyui": true,
}

// notPlaceholder rejects values that are clearly not secrets: env-var
// references, templating, masks and stock words. A pasted config full of
// "${DB_PASSWORD}" is exactly what we want to keep readable.
func notPlaceholder(v string) bool {
	if v == "" {
		return false
	}
	lv := strings.ToLower(v)
	if placeholderExact[lv] {
		return false
	}
	for _, w := range placeholderWords {
		if strings.Contains(lv, w) {
			return false
		}
	}
	if v[0] == '$' || v[0] == '%' {
		return false // $DB_PASS, %(password)s
	}
	return strings.Trim(v, v[:1]) != "" // all one repeated byte
}

// codeRef reports dotted identifiers such as "config.password" or
// "os.environ": the right-hand side of an assignment in code, not a value.
func codeRef(v string) bool {
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if p == "" || isDigit(p[0]) {
			return false
		}
		for i := 0; i < len(p); i++ {
			if !isWord(p[i]) {
				return false
			}
		}
	}
	return true
}

// genericSecret validates the value of a password= style assignment.
func genericSecret(v string) bool {
	if len(v) < 8 || !notPlaceholder(v) || codeRef(v) {
		return false
	}
	if strings.ContainsAny(v, "([{") {
		return false // function call or index: password=request.form['pw']
	}
	if v[0] == '/' || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "~/") || strings.HasPrefix(v, "../") {
		return false // a path: PWD=/home/ada in a pasted env dump
	}
	return true
}

// genericKeyValue validates the value of an api_key=/secret=/token=
// assignment. These words are common in prose and code about LLMs
// ("token: 4096"), so the value must also look random: letters and digits.
func genericKeyValue(v string) bool {
	return genericSecret(v) && mixedToken(v)
}

// validJWT decodes the header and requires a JSON object naming an
// algorithm or type; random "eyJ…" base64 fragments do not pass.
func validJWT(s string) bool {
	dot := strings.IndexByte(s, '.')
	if dot < 0 {
		return false
	}
	hdr, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s[:dot], "="))
	if err != nil || len(hdr) == 0 || hdr[0] != '{' {
		return false
	}
	h := string(hdr)
	return strings.Contains(h, `"alg"`) || strings.Contains(h, `"typ"`) || strings.Contains(h, `"kid"`)
}

// validPhone keeps the opt-in phone rule to plausible E.164 lengths.
func validPhone(s string) bool {
	n := 0
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			n++
		}
	}
	return n >= 7 && n <= 15
}

// Luhn reports whether a string of ASCII digits passes the Luhn checksum.
// Exported because the DB rescan command reuses it to explain findings.
func Luhn(digits string) bool {
	if len(digits) < 2 {
		return false
	}
	sum, double := 0, false
	for i := len(digits) - 1; i >= 0; i-- {
		c := digits[i]
		if !isDigit(c) {
			return false
		}
		d := int(c - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}

// cardBrandOK checks the issuer prefix (IIN) against the length that issuer
// uses, so a Luhn-valid 16-digit order number starting with 1 or 9 is not a
// card.
func cardBrandOK(d string) bool {
	n := len(d)
	p := func(k int) int { // first k digits as an int
		v := 0
		for i := 0; i < k && i < n; i++ {
			v = v*10 + int(d[i]-'0')
		}
		return v
	}
	in := func(v, lo, hi int) bool { return v >= lo && v <= hi }
	switch {
	case d[0] == '4': // Visa
		return n == 13 || n == 16 || n == 19
	case in(p(2), 51, 55) || in(p(4), 2221, 2720): // Mastercard
		return n == 16
	case p(2) == 34 || p(2) == 37: // American Express
		return n == 15
	case p(4) == 6011 || in(p(3), 644, 649) || p(2) == 65: // Discover
		return n >= 16 && n <= 19
	case in(p(4), 3528, 3589): // JCB
		return n >= 16 && n <= 19
	case in(p(3), 300, 305) || p(4) == 3095 || p(2) == 36 || p(2) == 38 || p(2) == 39: // Diners
		return n >= 14 && n <= 19
	case p(2) == 62: // UnionPay
		return n >= 16 && n <= 19
	case in(p(4), 2200, 2204): // Mir
		return n >= 16 && n <= 19
	case p(2) == 50 || in(p(2), 56, 58) || p(1) == 6: // Maestro and friends
		return n >= 13 && n <= 19
	}
	return false
}

// ValidCard reports whether digits (ASCII digits only) look like a real
// payment card number: 13–19 digits, a known issuer prefix and Luhn.
func ValidCard(digits string) bool {
	return len(digits) >= 13 && len(digits) <= 19 && cardBrandOK(digits) && Luhn(digits)
}

// ibanLengths is the SWIFT IBAN registry's length per country; a wrong
// length rejects a candidate before the checksum is computed.
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22,
	"BH": 22, "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24,
	"DE": 22, "DJ": 27, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
	"FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27,
	"GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27,
	"JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20,
	"LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27,
	"MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24, "PL": 28,
	"PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24, "SC": 31,
	"SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28,
	"TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}

// IBANMod97 reports whether a compact IBAN (no spaces, upper case) passes
// the ISO 13616 mod-97 check. It does not check the country length.
func IBANMod97(iban string) bool {
	if len(iban) < 5 {
		return false
	}
	rem := 0
	rotated := iban[4:] + iban[:4]
	for i := 0; i < len(rotated); i++ {
		c := rotated[i]
		switch {
		case isDigit(c):
			rem = (rem*10 + int(c-'0')) % 97
		case isUpper(c):
			v := int(c-'A') + 10
			rem = (rem*100 + v) % 97
		default:
			return false
		}
	}
	return rem == 1
}

// ValidIBAN checks country, registry length and mod-97 of a compact IBAN.
func ValidIBAN(iban string) bool {
	if len(iban) < 4 {
		return false
	}
	want, ok := ibanLengths[iban[:2]]
	return ok && len(iban) == want && isDigit(iban[2]) && isDigit(iban[3]) && IBANMod97(iban)
}

// validSSN applies the SSA's never-issued rules: area 000, 666 and 9xx,
// group 00 and serial 0000 do not exist.
func validSSN(area, group, serial string) bool {
	if area == "000" || area == "666" || area[0] == '9' {
		return false
	}
	return group != "00" && serial != "0000"
}
