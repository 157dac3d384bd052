package defense

import (
	"regexp"
	"regexp/syntax"
	"strings"
)

// simpleMatcher is a regex-free matcher for the shape most vendor tokens
// have: literals and repeated ASCII character classes in sequence, such as
// `ghp_[A-Za-z0-9]{36,251}` or a JWT's three dotted base64url runs. It is
// derived from the pattern's own regex, so the regex stays the single
// source of truth, and it is only used when greedy matching without
// backtracking provably gives the same span: every class repeat must be
// followed by something that cannot start with a byte of its class.
// Go's regexp costs tens of nanoseconds per byte; this costs one table
// lookup per byte.
type simpleMatcher struct {
	segs []simpleSeg
}

type simpleSeg struct {
	lit      string // literal bytes; empty for a class repeat
	fold     bool   // literal is ASCII case-insensitive
	cls      *[256]bool
	min, max int // max < 0: unbounded
}

// compileSimple returns nil when expr is not of the supported shape.
func compileSimple(expr string) *simpleMatcher {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	m := &simpleMatcher{}
	for _, sub := range subs {
		seg, ok := simpleSegment(sub)
		if !ok {
			return nil
		}
		m.segs = append(m.segs, seg)
	}
	// Greedy without backtracking equals the regex only if no repeat can
	// swallow what the next segment needs.
	for i, s := range m.segs {
		if s.cls == nil {
			continue
		}
		if i+1 == len(m.segs) {
			break
		}
		nx := m.segs[i+1]
		if nx.cls != nil {
			if nx.min == 0 {
				return nil
			}
			for b := 0; b < 256; b++ {
				if s.cls[b] && nx.cls[b] {
					return nil
				}
			}
			continue
		}
		c := nx.lit[0]
		if s.cls[c] || (nx.fold && (s.cls[foldByte(c)] || s.cls[upperByte(c)])) {
			return nil
		}
	}
	if len(m.segs) == 0 || m.segs[0].lit == "" {
		return nil // must start with the keyword literal
	}
	return m
}

func upperByte(b byte) byte {
	if b >= 'a' && b <= 'z' {
		return b - ('a' - 'A')
	}
	return b
}

func simpleSegment(re *syntax.Regexp) (simpleSeg, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		b := make([]byte, 0, len(re.Rune))
		for _, r := range re.Rune {
			if r >= 0x80 {
				return simpleSeg{}, false
			}
			b = append(b, byte(r))
		}
		return simpleSeg{lit: string(b), fold: re.Flags&syntax.FoldCase != 0}, true
	case syntax.OpCharClass:
		cls, ok := asciiClass(re)
		return simpleSeg{cls: cls, min: 1, max: 1}, ok
	case syntax.OpRepeat, syntax.OpPlus, syntax.OpStar, syntax.OpQuest:
		if re.Sub[0].Op != syntax.OpCharClass || re.Flags&syntax.NonGreedy != 0 {
			return simpleSeg{}, false
		}
		cls, ok := asciiClass(re.Sub[0])
		s := simpleSeg{cls: cls}
		switch re.Op {
		case syntax.OpRepeat:
			s.min, s.max = re.Min, re.Max
		case syntax.OpPlus:
			s.min, s.max = 1, -1
		case syntax.OpStar:
			s.min, s.max = 0, -1
		case syntax.OpQuest:
			s.min, s.max = 0, 1
		}
		return s, ok
	}
	return simpleSeg{}, false
}

func asciiClass(re *syntax.Regexp) (*[256]bool, bool) {
	var cls [256]bool
	for i := 0; i+1 < len(re.Rune); i += 2 {
		lo, hi := re.Rune[i], re.Rune[i+1]
		if hi >= 0x80 {
			return nil, false
		}
		for r := lo; r <= hi; r++ {
			cls[r] = true
		}
	}
	return &cls, true
}

// match returns the length of the match anchored at text[0], or -1.
func (m *simpleMatcher) match(text string) int {
	pos := 0
	for _, s := range m.segs {
		if s.cls == nil {
			if len(text)-pos < len(s.lit) {
				return -1
			}
			if s.fold {
				for k := 0; k < len(s.lit); k++ {
					if foldByte(text[pos+k]) != foldByte(s.lit[k]) {
						return -1
					}
				}
			} else if text[pos:pos+len(s.lit)] != s.lit {
				return -1
			}
			pos += len(s.lit)
			continue
		}
		n := 0
		for pos+n < len(text) && (s.max < 0 || n < s.max) && s.cls[text[pos+n]] {
			n++
		}
		if n < s.min {
			return -1
		}
		pos += n
	}
	return pos
}

// PEM blocks are matched in code: the body is unbounded and the regex
// engine would otherwise walk kilobytes per key with a large program. The
// regexes below only check the short BEGIN and END lines.
var (
	pemBegin = regexpMustAnchored(`-----BEGIN[A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----`)
	pemEnd   = regexpMustAnchored(`-----END[A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----`)
	gcpStart = regexpMustAnchored(`"private_key"\s*:\s*"`)
)

func regexpMustAnchored(expr string) *regexp.Regexp { return regexp.MustCompile(`^(?:` + expr + `)`) }

// matchPEM matches a complete private key block at in[0]: BEGIN line, any
// body, and the first END line after it.
func matchPEM(in string) []int {
	h := pemBegin.FindStringIndex(in[:min(len(in), 80)])
	if h == nil {
		return nil
	}
	for off := h[1]; ; {
		i := strings.Index(in[off:], "-----END")
		if i < 0 {
			return nil
		}
		off += i
		if e := pemEnd.FindStringIndex(in[off:min(len(in), off+80)]); e != nil {
			return []int{0, off + e[1]}
		}
		off += len("-----END")
	}
}

// matchPEMTruncated matches a BEGIN line and the key lines after it when
// the END line is missing (a paste cut short still leaks the key).
func matchPEMTruncated(in string) []int {
	h := pemBegin.FindStringIndex(in[:min(len(in), 80)])
	if h == nil {
		return nil
	}
	end := h[1]
	for pos := end; ; {
		p := pos
		for p < len(in) && (in[p] == ' ' || in[p] == '\t') {
			p++
		}
		switch {
		case strings.HasPrefix(in[p:], "\r\n"):
			p += 2
		case strings.HasPrefix(in[p:], "\n"):
			p++
		case strings.HasPrefix(in[p:], `\n`):
			p += 2
		default:
			return []int{0, end}
		}
		for p < len(in) && (in[p] == ' ' || in[p] == '\t') {
			p++
		}
		n := 0
		for p+n < len(in) && n < 100 && pemLineByte(in[p+n]) {
			n++
		}
		if n == 0 {
			return []int{0, end}
		}
		end = p + n
		pos = end
	}
}

func pemLineByte(c byte) bool {
	return isAlnum(c) || c == '+' || c == '/' || c == '=' || c == ':' || c == ',' || c == ' ' || c == '-'
}

// matchGCPKey matches the "private_key" field of a service-account JSON and
// reports the key (submatch 1) including its trailing JSON "\n".
func matchGCPKey(in string) []int {
	h := gcpStart.FindStringIndex(in[:min(len(in), 64)])
	if h == nil {
		return nil
	}
	m := matchPEM(in[h[1]:])
	if m == nil {
		return nil
	}
	end := h[1] + m[1]
	if strings.HasPrefix(in[end:], `\n`) {
		end += 2
	}
	if !strings.HasPrefix(in[end:], `"`) {
		return nil
	}
	return []int{0, end + 1, h[1], end}
}
