package defense

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// assignLookahead bounds how far after a context keyword the ':' or '='
// of an assignment may appear (room for "_api_key\"  :" and the like).
const assignLookahead = 48

// Finding is one detected secret or piece of personal data. Offsets are
// byte offsets into the scanned text, always on UTF-8 boundaries, so the
// pipeline can cut the text without decoding it again.
type Finding struct {
	Label    string `json:"label"`
	Category string `json:"category"`
	Start    int    `json:"start"`
	End      int    `json:"end"`
	// Action is what the policy decided; Scan leaves it empty, Apply fills it.
	Action Action `json:"action,omitempty"`
}

// ScannerConfig selects optional detectors. Email and phone are off by
// default: chat logs are full of both, and redacting them changes what an
// agent can remember, so a bank must ask for it.
type ScannerConfig struct {
	EnableEmail bool `json:"enable_email"`
	EnablePhone bool `json:"enable_phone"`
}

// Scanner finds secrets in text. It is immutable after construction and
// safe for concurrent use; build one per process and share it.
type Scanner struct {
	cfg      ScannerConfig
	patterns []Pattern
	pf       *prefilter
	kwRefs   [][]kwRef // prefilter keyword id -> patterns it gates
	digits   digitPatterns
	fullScan []int // opt-in patterns without keywords
	email    int
	phone    int
	pool     sync.Pool // *scratch
}

type kwRef struct {
	pat   int
	exact string // original spelling, compared when caseSensitive
	cs    bool
}

type candidate struct {
	start, end int
	pat        int
}

type window struct{ start, end int }

// scratch holds per-call buffers so a steady stream of scans does not
// allocate for clean text.
type scratch struct {
	hits    []hit
	windows [][]window
	touched []int
	cands   []candidate
}

// NewScanner compiles the pattern library into a scanner.
func NewScanner(cfg ScannerConfig) (*Scanner, error) {
	s := &Scanner{cfg: cfg, patterns: compiledPatterns(), digits: digitPatterns{-1, -1, -1}, email: -1, phone: -1}
	var keywords []string
	for i, p := range s.patterns {
		switch p.Label {
		case "credit_card":
			s.digits.card = i
		case "us_ssn":
			s.digits.ssn = i
		case "iban":
			s.digits.iban = i
		case "email":
			s.email = i
		case "phone":
			s.phone = i
		}
		if p.kind == kindFullScan {
			if !p.OptIn {
				return nil, fmt.Errorf("defense: pattern %s scans the full text but is not opt-in", p.Label)
			}
			s.fullScan = append(s.fullScan, i)
		}
		if p.kind == kindRegex && len(p.Keywords) == 0 {
			return nil, fmt.Errorf("defense: pattern %s has no keywords", p.Label)
		}
		for _, kw := range p.Keywords {
			keywords = append(keywords, kw)
			s.kwRefs = append(s.kwRefs, []kwRef{{pat: i, exact: kw, cs: p.caseSensitive}})
		}
	}
	s.pf = newPrefilter(keywords)
	s.pool.New = func() any { return &scratch{windows: make([][]window, len(s.patterns))} }
	return s, nil
}

// Patterns returns the scanner's ordered pattern library.
func (s *Scanner) Patterns() []Pattern { return slices.Clone(s.patterns) }

// Scan returns the findings in text, sorted by Start and non-overlapping.
// When two candidates overlap, the pattern earlier in the library wins,
// then the longer span. Opt-in detectors follow the ScannerConfig.
func (s *Scanner) Scan(text string) []Finding {
	return s.scan(text, s.cfg.EnableEmail, s.cfg.EnablePhone)
}

func (s *Scanner) enabled(i int, email, phone bool) bool {
	switch i {
	case s.email:
		return email
	case s.phone:
		return phone
	}
	return true
}

func (s *Scanner) scan(text string, email, phone bool) []Finding {
	if len(text) == 0 {
		return nil
	}
	sc := s.pool.Get().(*scratch)
	defer s.pool.Put(sc)
	sc.hits = s.pf.find(text, sc.hits[:0])
	sc.cands = sc.cands[:0]
	sc.touched = sc.touched[:0]

	n := len(text)
	for _, h := range sc.hits {
		for _, ref := range s.kwRefs[h.kw] {
			if ref.cs && text[h.start:h.start+len(ref.exact)] != ref.exact {
				continue
			}
			if !s.enabled(ref.pat, email, phone) {
				continue
			}
			p := &s.patterns[ref.pat]
			if p.before == 0 {
				sc.cands = s.matchAt(text, ref.pat, h.start, sc.cands)
				continue
			}
			w := window{start: max(0, h.start-p.before), end: min(n, h.start+p.maxLen)}
			if len(sc.windows[ref.pat]) == 0 {
				sc.touched = append(sc.touched, ref.pat)
			}
			sc.windows[ref.pat] = append(sc.windows[ref.pat], w)
		}
	}
	// Patterns run in library order so the output does not depend on hit
	// order; overlap resolution below uses the order as priority anyway.
	slices.Sort(sc.touched)
	for _, pi := range sc.touched {
		ws := mergeWindows(sc.windows[pi])
		sc.cands = s.runPattern(text, pi, ws, sc.cands)
		sc.windows[pi] = sc.windows[pi][:0]
	}
	sc.cands = s.scanDigits(text, s.digits, sc.cands)
	for _, pi := range s.fullScan {
		if s.enabled(pi, email, phone) {
			sc.cands = s.runPattern(text, pi, []window{{0, n}}, sc.cands)
		}
	}
	return s.resolve(sc.cands)
}

// mergeWindows sorts and coalesces overlapping windows in place, so dense
// text runs each regex once per cluster instead of once per keyword hit.
func mergeWindows(ws []window) []window {
	slices.SortFunc(ws, func(a, b window) int { return a.start - b.start })
	out := ws[:1]
	for _, w := range ws[1:] {
		last := &out[len(out)-1]
		if w.start <= last.end {
			last.end = max(last.end, w.end)
			continue
		}
		out = append(out, w)
	}
	return out
}

// matchAt runs a pattern whose match starts at the keyword as an anchored
// regex at that offset. Most hits in clean text ("task-1234", "token
// budget") fail the left boundary or the first few regex steps, so a hit
// costs well under a microsecond.
func (s *Scanner) matchAt(text string, pi, at int, out []candidate) []candidate {
	p := &s.patterns[pi]
	if p.leftBound && at > 0 && p.continuesLeft(text[at-1]) {
		return out
	}
	in := text[at:min(len(text), at+p.maxLen)]
	if p.needAssign && strings.IndexAny(in[:min(len(in), assignLookahead)], ":=") < 0 {
		return out // "token budget", "the secret is": prose, not an assignment
	}
	if p.custom != nil {
		if m := p.custom(in); m != nil {
			return s.accept(text, pi, at, m, out)
		}
		return out
	}
	if p.simple != nil {
		l := p.simple.match(in)
		if l < 0 {
			return out
		}
		m := [2]int{0, l}
		return s.accept(text, pi, at, m[:], out)
	}
	m := p.anchored.FindStringSubmatchIndex(in)
	if m == nil {
		return out
	}
	return s.accept(text, pi, at, m, out)
}

// accept applies the boundary checks and the validator to one regex match
// (indices relative to base) and records it as a candidate.
func (s *Scanner) accept(text string, pi, base int, m []int, out []candidate) []candidate {
	p := &s.patterns[pi]
	if m[2*p.group] < 0 {
		return out
	}
	ms, me := base+m[0], base+m[1]
	gs, ge := base+m[2*p.group], base+m[2*p.group+1]
	if gs == ge {
		return out
	}
	// Boundary checks live here because Go's regexp has no lookaround;
	// they use the full text, not the window.
	if p.leftBound && ms > 0 && p.continuesLeft(text[ms-1]) {
		return out
	}
	if p.rightBound && me < len(text) && p.continues(text[me]) {
		return out
	}
	if p.validate != nil && !p.validate(text[gs:ge]) {
		return out
	}
	return append(out, candidate{start: gs, end: ge, pat: pi})
}

func (s *Scanner) runPattern(text string, pi int, ws []window, out []candidate) []candidate {
	p := &s.patterns[pi]
	for _, w := range ws {
		for _, m := range p.re.FindAllStringSubmatchIndex(text[w.start:w.end], -1) {
			out = s.accept(text, pi, w.start, m, out)
		}
	}
	return out
}

// continues reports whether byte c would extend the pattern's token, in
// which case a match touching it is a fragment of something longer (a
// "sk-" inside "task-1234", a key id inside a longer base32 blob). Bytes of
// multi-byte UTF-8 runes never continue a token, which is what lets a key
// glued to CJK text match exactly.
func (p *Pattern) continues(c byte) bool {
	if isWord(c) {
		return true
	}
	for i := 0; i < len(p.tail); i++ {
		if p.tail[i] == c {
			return true
		}
	}
	return false
}

// continuesLeft is continues for the byte before a match. '=' only ever
// continues a token on the right (base64 padding); on the left it is an
// assignment. '-' on the left means the match is the tail of a kebab-case
// identifier ("cache-key-<md5>"), never a pasted credential.
func (p *Pattern) continuesLeft(c byte) bool {
	return c == '-' || (c != '=' && p.continues(c))
}

// resolve turns candidates into sorted, non-overlapping findings. Clusters
// of overlapping candidates are tiny, so greedy selection by priority
// inside each cluster costs nothing measurable.
func (s *Scanner) resolve(cands []candidate) []Finding {
	if len(cands) == 0 {
		return nil
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return b.end - a.end
	})
	var out []Finding
	var cluster []candidate
	flush := func() {
		slices.SortFunc(cluster, func(a, b candidate) int {
			if a.pat != b.pat {
				return a.pat - b.pat
			}
			return (b.end - b.start) - (a.end - a.start)
		})
		first := len(out)
		for _, c := range cluster {
			clash := false
			for _, f := range out[first:] {
				if c.start < f.End && f.Start < c.end {
					clash = true
					break
				}
			}
			if !clash {
				p := &s.patterns[c.pat]
				out = append(out, Finding{Label: p.Label, Category: p.Category, Start: c.start, End: c.end})
			}
		}
		slices.SortFunc(out[first:], func(a, b Finding) int { return a.Start - b.Start })
		cluster = cluster[:0]
	}
	end := -1
	for _, c := range cands {
		if len(cluster) > 0 && c.start >= end {
			flush()
		}
		cluster = append(cluster, c)
		end = max(end, c.end)
	}
	flush()
	return out
}
