package embed

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// DefaultDim is the vector size of the hash embedder when the configuration
// does not name one. 384 matches common small sentence-embedding models, so a
// bank can switch between them and the hash embedder without a schema change.
const DefaultDim = 384

// MaxHashDim bounds the hash dimension. Beyond this the hashed vectors gain
// nothing (collisions are already rare) and the database index only grows.
const MaxHashDim = 16384

// Hash is the built-in deterministic embedder (provider "hash").
//
// It is a feature-hashing model: each text is broken into features (word
// unigrams and bigrams, character 3- and 4-grams inside words, and character
// unigrams and bigrams for scripts written without spaces such as Chinese and
// Japanese). Each feature is hashed to one of Dim buckets with a random sign,
// weighted by its type and by sublinear term frequency (1+ln tf), and the
// vector is L2-normalised, so cosine similarity is a weighted overlap of
// features. Paraphrases that share words, stems or word pieces score well
// above unrelated text; it does not know synonyms that share no characters.
//
// Every output vector has unit length. A text with no features (empty, only
// spaces or punctuation) maps to one fixed unit vector rather than the zero
// vector, because the cosine distance of a zero vector is undefined (pgvector
// returns NaN), which would poison ranking. All such texts are identical to
// each other and nearly orthogonal to everything else.
//
// The output depends only on the input text and Dim: no randomness, no map
// iteration order and no platform-dependent arithmetic in the hashing, so the
// same text gives the same vector on every run and machine. Changing the
// feature set or weights changes the vectors of stored facts; the golden
// test exists to make such a change deliberate.
//
// Queries and documents embed alike: the features carry no notion of
// either, and a prefix would only add the same feature to every vector.
//
// Hash is safe for concurrent use.
type Hash struct {
	dim  int
	pool sync.Pool
}

// NewHash returns a hash embedder producing vectors of dim dimensions.
// dim 0 means [DefaultDim].
func NewHash(dim int) (*Hash, error) {
	if dim == 0 {
		dim = DefaultDim
	}
	if dim < 8 || dim > MaxHashDim {
		return nil, fmt.Errorf("embed: hash dim %d out of range [8, %d]", dim, MaxHashDim)
	}
	l := &Hash{dim: dim}
	l.pool.New = func() any { return new(scratch) }
	return l, nil
}

// Dim reports the length of every vector it returns.
func (l *Hash) Dim() int { return l.dim }

// Name reports the provider name used in configuration and metrics.
func (l *Hash) Name() string { return "hash" }

// EmbedDocuments returns one unit vector per text, in order.
func (l *Hash) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	return l.embed(ctx, texts)
}

// EmbedQueries returns one unit vector per text, in order; the same vectors
// as EmbedDocuments.
func (l *Hash) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	return l.embed(ctx, texts)
}

// embed returns one unit vector per text. The vectors share one backing
// array per call (one allocation instead of len(texts)), each capped so that
// appending to one cannot overwrite its neighbour. It only fails when ctx is
// done.
func (l *Hash) embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	flat := make([]float32, len(texts)*l.dim)
	s := l.pool.Get().(*scratch)
	defer l.pool.Put(s)
	for i, t := range texts {
		// Checking every text would cost more than embedding a short one.
		if i > 0 && i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		v := flat[i*l.dim : (i+1)*l.dim : (i+1)*l.dim]
		s.embed(t, v)
		out[i] = v
	}
	return out, nil
}

// Feature types. They seed the hash so that, say, the word "ing" and the
// character trigram "ing" land in unrelated buckets.
const (
	ftWord uint64 = iota + 1
	ftBigram
	ftChar3
	ftChar4
	ftCJK1
	ftCJK2
	ftEmpty
)

// Feature weights. Whole words carry most of the meaning; bigrams reward
// shared phrases; character n-grams catch inflections, typos and compounds
// the light stemmer misses, so they get less weight per word. In CJK text a
// character bigram is the nearest thing to a word, so it outweighs single
// characters. Stopwords still count a little: "to" versus "from" matters
// when nothing else differs.
const (
	wWord     = 1.0
	wStopWord = 0.15
	wBigram   = 0.6
	wChar3    = 0.5 // per word, spread over its trigrams
	wChar4    = 0.6 // per word, spread over its 4-grams
	wCJK1     = 0.5
	wCJKStop  = 0.15
	wCJK2     = 1.0
)

// Word boundary markers inside character n-grams, so that prefixes and
// suffixes ("^re", "ed$") are features of their own. They are control
// characters, which never survive tokenisation, so they cannot collide with
// text.
const (
	markStart = 0x02
	markEnd   = 0x03
)

type feature struct {
	h uint64
	w float32
}

// scratch holds the per-call buffers, reused through a sync.Pool so that
// steady-state embedding allocates nothing per token.
type scratch struct {
	it     norm.Iter
	nfkc   []byte
	word   []byte
	padded []byte
	offs   []int
	feats  []feature
	prev   uint64 // hash of the previous content word, 0 if none
	cjk    rune   // previous CJK rune if contiguous, 0 otherwise
}

func (s *scratch) embed(text string, v []float32) {
	s.feats = s.feats[:0]
	s.word = s.word[:0]
	s.prev = 0
	s.cjk = 0

	if !isASCII(text) {
		// NFKC folds full-width Latin and digits to ASCII, half-width
		// katakana to full-width, and ligatures and compatibility forms to
		// their plain letters, so visually equal text hashes equally.
		if !norm.NFKC.IsNormalString(text) {
			// A reused Iter keeps its buffers, unlike AppendString,
			// which allocates on every call.
			s.nfkc = s.nfkc[:0]
			s.it.InitString(norm.NFKC, text)
			for !s.it.Done() {
				s.nfkc = append(s.nfkc, s.it.Next()...)
			}
			s.tokenize(s.nfkc)
		} else {
			s.tokenizeString(text)
		}
	} else {
		s.tokenizeString(text)
	}
	s.flushWord()
	s.project(v)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// tokenizeString and tokenize are the same loop over a string or a byte
// slice; two copies avoid converting (and so copying) one into the other.
func (s *scratch) tokenizeString(text string) {
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			s.rune(rune(c))
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		s.rune(r)
		i += n
	}
}

func (s *scratch) tokenize(text []byte) {
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			s.rune(rune(c))
			i++
			continue
		}
		r, n := utf8.DecodeRune(text[i:])
		s.rune(r)
		i += n
	}
}

// rune feeds one character of normalised text to the tokenizer.
func (s *scratch) rune(r rune) {
	if r < utf8.RuneSelf {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9':
			s.word = append(s.word, byte(r))
		case 'A' <= r && r <= 'Z':
			s.word = append(s.word, byte(r+'a'-'A'))
		case r == '\'':
			// Drop apostrophes inside words: "don't" -> "dont", "Alice's"
			// -> "alices", which the stemmer takes back to "alice".
		case r == ' ' || r == '\t' || r == '-' || r == '_' || r == '/':
			s.flushWord()
			s.cjk = 0
		default:
			// Sentence punctuation ends a phrase: no bigram across it.
			s.flushWord()
			s.cjk = 0
			s.prev = 0
		}
		return
	}
	switch {
	case isCJK(r):
		s.flushWord()
		s.prev = 0
		s.cjkRune(r)
	case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
		s.word = utf8.AppendRune(s.word, unicode.ToLower(r))
		s.cjk = 0
	case r == '\u2019': // right single quotation mark used as apostrophe
	case unicode.IsSpace(r):
		s.flushWord()
		s.cjk = 0
	default:
		s.flushWord()
		s.cjk = 0
		s.prev = 0
	}
}

// isCJK reports scripts written without spaces between words, which are
// embedded by characters instead of words. Hangul is written with spaces and
// goes through the word path.
func isCJK(r rune) bool {
	switch {
	case r >= 0x4E00 && r <= 0x9FFF, // CJK unified ideographs
		r >= 0x3400 && r <= 0x4DBF,   // extension A
		r >= 0x3040 && r <= 0x30FF,   // hiragana, katakana
		r >= 0xF900 && r <= 0xFAFF,   // compatibility ideographs
		r >= 0x20000 && r <= 0x3134F: // extensions B-G
		return true
	}
	return false
}

func (s *scratch) cjkRune(r rune) {
	w := float32(wCJK1)
	if isCJKStop(r) {
		w = wCJKStop
	}
	s.feats = append(s.feats, feature{mix64(ftCJK1<<56 ^ uint64(r)), w})
	if s.cjk != 0 {
		s.feats = append(s.feats, feature{mix64(ftCJK2<<56 ^ uint64(s.cjk)<<21 ^ uint64(r)), wCJK2})
	}
	s.cjk = r
}

// flushWord turns the buffered word into word, bigram and character n-gram
// features.
func (s *scratch) flushWord() {
	w := s.word
	if len(w) == 0 {
		return
	}
	s.word = s.word[:0]
	stop := isStopword(w)
	if !stop && !allDigits(w) {
		s.charGrams(w)
	}
	w = stem(w)
	h := fnv1a(ftWord, w)
	if stop {
		s.feats = append(s.feats, feature{h, wStopWord})
		return
	}
	s.feats = append(s.feats, feature{h, wWord})
	if s.prev != 0 {
		s.feats = append(s.feats, feature{mix64(ftBigram<<56 ^ s.prev*0x9E3779B97F4A7C15 ^ h), wBigram})
	}
	s.prev = h
}

// charGrams adds the 3- and 4-grams of ^word$. Each word's n-grams share a
// fixed weight (divided by the square root of their number), so long words do
// not drown out short ones.
func (s *scratch) charGrams(w []byte) {
	p := append(s.padded[:0], markStart)
	p = append(p, w...)
	p = append(p, markEnd)
	s.padded = p
	offs := s.offs[:0]
	for i := range len(p) {
		if !utf8.RuneStart(p[i]) {
			continue
		}
		offs = append(offs, i)
	}
	offs = append(offs, len(p))
	s.offs = offs
	runes := len(offs) - 1
	if runes < 4 { // a one-letter word: its n-grams say nothing its unigram does not
		return
	}
	for _, g := range [...]struct {
		n  int
		ft uint64
		w  float64
	}{{3, ftChar3, wChar3}, {4, ftChar4, wChar4}} {
		count := runes - g.n + 1
		if count <= 0 {
			continue
		}
		wt := float32(g.w / math.Sqrt(float64(count)))
		for i := range count {
			s.feats = append(s.feats, feature{fnv1a(g.ft, p[offs[i]:offs[i+g.n]]), wt})
		}
	}
}

// project aggregates equal features, applies sublinear tf, hashes them into
// v with a sign and normalises v.
func (s *scratch) project(v []float32) {
	dim := uint64(len(v))
	f := s.feats
	if len(f) == 0 {
		setEmpty(v)
		return
	}
	// Sorting groups equal features without a map; the slices are short.
	slices.SortFunc(f, func(a, b feature) int { return cmp.Compare(a.h, b.h) })
	for i := 0; i < len(f); {
		j := i + 1
		sum := f[i].w
		for j < len(f) && f[j].h == f[i].h {
			sum += f[j].w
			j++
		}
		val := sum
		if n := j - i; n > 1 {
			// Mean weight times 1+ln(tf): repetition counts, but less and
			// less, so one repeated word cannot dominate a text.
			val = sum / float32(n) * float32(1+math.Log(float64(n)))
		}
		h := f[i].h
		b := (h & 0xFFFFFFFF) % dim
		if h>>63 != 0 {
			val = -val
		}
		v[b] += val
		i = j
	}
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 {
		setEmpty(v)
		return
	}
	inv := float32(1 / math.Sqrt(ss))
	for i := range v {
		v[i] *= inv
	}
}

// setEmpty writes the fixed vector for texts without features.
func setEmpty(v []float32) {
	clear(v)
	h := mix64(ftEmpty << 56)
	v[(h&0xFFFFFFFF)%uint64(len(v))] = 1
}

func fnv1a(seed uint64, b []byte) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037) ^ seed
	h *= prime
	for _, c := range b {
		h ^= uint64(c)
		h *= prime
	}
	// FNV's low bits mix poorly for short inputs; finish with an avalanche
	// so bucket = h mod dim is uniform.
	return mix64(h)
}

// mix64 is the splitmix64 finaliser, a cheap full avalanche.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	x ^= x >> 31
	return x
}

func allDigits(w []byte) bool {
	for _, c := range w {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// stem is a deliberately light English stemmer: it folds plurals, -ing and
// -ed, and a final e, so "move", "moves", "moved" and "moving" share a
// feature. Heavier stemmers merge unrelated words more often, and the
// character n-grams already catch most other inflections. Non-ASCII words
// are left alone. It may rewrite w in place.
func stem(w []byte) []byte {
	n := len(w)
	if n <= 3 {
		return w
	}
	for _, c := range w {
		if c < 'a' || c > 'z' {
			return w
		}
	}
	switch {
	case hasSuffix(w, "ies") && n > 4:
		w[n-3] = 'y'
		w = w[:n-2]
	case hasSuffix(w, "sses"):
		w = w[:n-2]
	case hasSuffix(w, "ss"), hasSuffix(w, "us"), hasSuffix(w, "is"):
	case w[n-1] == 's':
		w = w[:n-1]
	}
	n = len(w)
	switch {
	case hasSuffix(w, "ing") && n > 5:
		w = undouble(w[:n-3])
	case hasSuffix(w, "ed") && n > 4:
		w = undouble(w[:n-2])
	}
	if n = len(w); n > 3 && w[n-1] == 'e' {
		w = w[:n-1]
	}
	return w
}

func hasSuffix(w []byte, suf string) bool {
	return len(w) >= len(suf) && string(w[len(w)-len(suf):]) == suf
}

// undouble maps "runn" (from running) to "run", but keeps "fall", "miss"
// and "buzz", where the double letter belongs to the root.
func undouble(w []byte) []byte {
	n := len(w)
	if n >= 3 && w[n-1] == w[n-2] {
		switch w[n-1] {
		case 'l', 's', 'z', 'a', 'e', 'i', 'o', 'u':
			return w
		}
		return w[:n-1]
	}
	return w
}

// stopwords are frequent English function words. They are down-weighted, not
// dropped, and they take no part in bigrams, so "moved to Shanghai" yields
// the bigram (moved, shanghai).
var stopwords = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range []string{
		"a", "an", "the", "and", "or", "but", "if", "of", "to", "in", "on",
		"at", "by", "for", "with", "from", "as", "into", "about", "over",
		"is", "are", "was", "were", "be", "been", "being", "am",
		"i", "me", "my", "we", "us", "our", "you", "your", "he", "him",
		"his", "she", "her", "it", "its", "they", "them", "their",
		"this", "that", "these", "those", "there", "here",
		"do", "does", "did", "have", "has", "had", "so", "than", "then",
		"too", "very", "can", "will", "would", "should", "could", "just",
		"also", "what", "which", "who", "whom", "when", "where", "how",
		"all", "any", "some", "such", "only", "s", "t", "im", "ive",
		"its", "dont", "not", "no",
	} {
		m[w] = struct{}{}
	}
	return m
}()

func isStopword(w []byte) bool {
	_, ok := stopwords[string(w)] // does not allocate
	return ok
}

// isCJKStop reports very frequent Chinese function characters, which say
// little on their own.
func isCJKStop(r rune) bool {
	switch r {
	case '的', '了', '是', '在', '和', '也', '就', '都', '我', '你', '他', '她',
		'它', '们', '这', '那', '个', '着', '吗', '呢', '吧', '啊', '很', '有',
		'の', 'は', 'が', 'を', 'に', 'で', 'と', 'も', 'た', 'す':
		return true
	}
	return false
}
