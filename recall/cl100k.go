package recall

import (
	"math"
	"sync"
	"unicode"
	"unicode/utf8"
)

// cl100kPattern is the cl100k_base pre-tokenizer as tiktoken-go runs it,
// with regexp2 (a backtracking engine with .NET semantics). The production
// path does not use it: cl100kCounter.next splits text into the same pieces
// by hand, several times faster. The tests compare the two.
const cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// cl100kCounter counts cl100k_base tokens exactly as
// len(tiktoken-go's EncodeOrdinary(s)) does, without the regexp and without
// allocating for valid UTF-8 (the usual case). It encodes ordinarily: fact
// text that happens to contain "<|endoftext|>" is counted as the plain text
// the model will see.
type cl100kCounter struct {
	ranks map[string]int
	bmp   *[0x10000]runeClass
}

func newCL100KCounter(ranks map[string]int) cl100kCounter {
	return cl100kCounter{ranks: ranks, bmp: bmpClasses()}
}

func (cl100kCounter) name() string { return "cl100k_base" }

func (c cl100kCounter) count(s string) int {
	if !utf8.ValidString(s) {
		s = replaceInvalidUTF8(s)
	}
	n := 0
	for i := 0; i < len(s); {
		j := c.next(s, i)
		n += c.pieceTokens(s[i:j])
		i = j
	}
	return n
}

// replaceInvalidUTF8 replaces every byte that is not part of a valid UTF-8
// sequence with U+FFFD, one per byte. That is what tiktoken-go encodes: it
// hands the regexp []rune(text) and cuts the pieces out of that slice, and
// the conversion to runes turns each such byte into utf8.RuneError.
// (strings.ToValidUTF8 would replace a whole run of them with one.)
func replaceInvalidUTF8(s string) string {
	out := make([]byte, 0, len(s)+16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, s[i:i+n]...)
		}
		i += n
	}
	return string(out)
}

// runeClass is what the pattern can tell apart about a rune, with regexp2's
// definitions: \s is unicode.IsSpace, \p{L} is unicode.L, \p{N} is
// unicode.N (disjoint sets), and the only runes whose unicode.ToLower is one
// of the contraction letters are ASCII, so (?i) only matters for ASCII.
type runeClass uint8

const (
	classOther   runeClass = iota // [^\s\p{L}\p{N}]
	classLetter                   // \p{L}
	classNumber                   // \p{N}
	classSpace                    // \s except \r and \n
	classNewline                  // \r or \n
)

func classify(r rune) runeClass {
	switch {
	case r == '\r' || r == '\n':
		return classNewline
	case unicode.IsSpace(r):
		return classSpace
	case unicode.Is(unicode.L, r):
		return classLetter
	case unicode.Is(unicode.N, r):
		return classNumber
	}
	return classOther
}

// bmpClasses tabulates classify over the Basic Multilingual Plane (64 KB,
// a few milliseconds to build once, next to the ~100 ms the ranks take).
var bmpClasses = sync.OnceValue(func() *[0x10000]runeClass {
	var t [0x10000]runeClass
	for r := range t {
		t[r] = classify(rune(r))
	}
	return &t
})

// at returns the class and UTF-8 length of the rune at s[i]. s is valid
// UTF-8.
func (c cl100kCounter) at(s string, i int) (runeClass, int) {
	if b := s[i]; b < utf8.RuneSelf {
		return c.bmp[b], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	if r < 0x10000 {
		return c.bmp[r], n
	}
	return classify(r), n
}

// next returns the end of the piece that starts at s[i], i < len(s): the
// match that the regexp's first alternative able to match at i gives, each
// quantifier greedy and backtracking as in Perl or .NET.
func (c cl100kCounter) next(s string, i int) int {
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if s[i] == '\'' && i+1 < len(s) {
		switch s[i+1] | 0x20 {
		case 's', 't', 'm', 'd':
			return i + 2
		case 'r', 'v':
			if i+2 < len(s) && s[i+2]|0x20 == 'e' {
				return i + 3
			}
		case 'l':
			if i+2 < len(s) && s[i+2]|0x20 == 'l' {
				return i + 3
			}
		}
	}
	c0, n0 := c.at(s, i)
	switch c0 {
	case classLetter:
		// [^\r\n\p{L}\p{N}]?\p{L}+ with the option empty.
		return c.runEnd(s, i+n0, classLetter)
	case classNumber:
		// \p{N}{1,3}
		j := i + n0
		for k := 1; k < 3 && j < len(s); k++ {
			ck, nk := c.at(s, j)
			if ck != classNumber {
				break
			}
			j += nk
		}
		return j
	case classOther, classSpace:
		// [^\r\n\p{L}\p{N}]?\p{L}+ with the option taken.
		if j := i + n0; j < len(s) {
			if c1, n1 := c.at(s, j); c1 == classLetter {
				return c.runEnd(s, j+n1, classLetter)
			}
		}
		//  ?[^\s\p{L}\p{N}]+[\r\n]*
		start := -1
		if c0 == classOther {
			start = i + n0
		} else if s[i] == ' ' && i+1 < len(s) {
			if c1, n1 := c.at(s, i+1); c1 == classOther {
				start = i + 1 + n1
			}
		}
		if start >= 0 {
			j := c.runEnd(s, start, classOther)
			for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
				j++
			}
			return j
		}
	}
	// A whitespace run [i, end). \s*[\r\n]+ backtracks from the end of the
	// run to its last newline; failing that, \s+(?!\S) takes the whole run
	// at the end of the text and else gives back its last rune, unless that
	// leaves it empty; then \s+ takes the one rune.
	end, lastNL, last := i, -1, i
	for end < len(s) {
		ck, nk := c.at(s, end)
		if ck != classSpace && ck != classNewline {
			break
		}
		if ck == classNewline {
			lastNL = end + nk
		}
		last = end
		end += nk
	}
	switch {
	case lastNL >= 0:
		return lastNL
	case end == len(s) || last == i:
		return end
	}
	return last
}

// runEnd returns the end of the run of runes of class cl that starts at j.
func (c cl100kCounter) runEnd(s string, j int, cl runeClass) int {
	for j < len(s) {
		cj, nj := c.at(s, j)
		if cj != cl {
			break
		}
		j += nj
	}
	return j
}

// pieceTokens is how many tokens the byte-pair encoding of a piece has.
func (c cl100kCounter) pieceTokens(p string) int {
	if len(p) <= 1 {
		return len(p) // every single byte is a token
	}
	if _, ok := c.ranks[p]; ok {
		return 1
	}
	return bpeMergeCount(p, c.ranks)
}

// bpeMergeCount merges the piece's bytes as tiktoken does: repeatedly join
// the adjacent pair of parts whose concatenation has the lowest rank (the
// leftmost on a tie) until no adjacent pair is a token, and returns the
// number of parts. part[k] starts at start[k]; rank[k] is the rank of part
// k joined with part k+1. Pieces are short, so the quadratic scan is cheaper
// than a heap, and the slices live on the stack.
func bpeMergeCount(p string, ranks map[string]int) int {
	const none = math.MaxInt
	var startBuf, rankBuf [48]int
	var start, rank []int
	if len(p)+1 <= len(startBuf) {
		start, rank = startBuf[:len(p)+1], rankBuf[:len(p)+1]
	} else {
		start, rank = make([]int, len(p)+1), make([]int, len(p)+1)
	}
	for k := range start {
		start[k] = k
		rank[k] = none
	}
	for k := 0; k+2 < len(start); k++ {
		if r, ok := ranks[p[k:k+2]]; ok {
			rank[k] = r
		}
	}
	// rankOf3 is the rank of parts k, k+1 and k+2 joined, as the rank of
	// part k with its right neighbour once k+1 is merged into k.
	rankOf3 := func(start []int, k int) int {
		if k+3 < len(start) {
			if r, ok := ranks[p[start[k]:start[k+3]]]; ok {
				return r
			}
		}
		return none
	}
	for len(start) > 2 {
		best, k := none, -1
		for m, r := range rank[:len(rank)-1] {
			if r < best {
				best, k = r, m
			}
		}
		if k < 0 {
			break
		}
		rank[k] = rankOf3(start, k)
		if k > 0 {
			rank[k-1] = rankOf3(start, k-1)
		}
		start = append(start[:k+1], start[k+2:]...)
		rank = append(rank[:k+1], rank[k+2:]...)
	}
	return len(start) - 1
}
