package embed

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// spTokenizer is a SentencePiece unigram tokenizer read from a .model file
// (a serialized ModelProto). It reproduces SentencePiece's own encoder: the
// nmt_nfkc normalizer from the model's precompiled character map, the
// whitespace rules (dummy prefix, U+2581 for spaces, runs of spaces folded)
// and the Viterbi segmentation over piece scores, with unknown characters
// scored min(score)-10 as SentencePiece does. The test checks its ids
// against SentencePiece's.
type spTokenizer struct {
	trie     pieceTrie
	scores   []float32
	unkID    int32
	unkScore float32

	norm          charsMap
	addDummy      bool
	removeExtraWS bool
	escapeWS      bool
}

// Piece types of sentencepiece_model.proto.
const (
	spNormal      = 1
	spUnknown     = 2
	spControl     = 3
	spUserDefined = 4
	spUnused      = 5
)

// spaceSymbol is what SentencePiece writes for a space (U+2581).
const spaceSymbol = "\u2581"

// parseSentencePiece reads a ModelProto: pieces (field 1: piece, score,
// type), trainer_spec (field 2: model_type must be unigram) and
// normalizer_spec (field 3: precompiled_charsmap, add_dummy_prefix,
// remove_extra_whitespaces, escape_whitespaces).
func parseSentencePiece(b []byte) (*spTokenizer, error) {
	t := &spTokenizer{unkID: -1, addDummy: true, removeExtraWS: true, escapeWS: true}
	var pieces []string
	var types []int
	modelType := 1 // unigram is the default
	err := forFields(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			var p string
			var score float32
			kind := spNormal
			if err := forFields(v, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
				switch {
				case num == 1 && typ == protowire.BytesType:
					p = string(v)
				case num == 2 && typ == protowire.Fixed32Type:
					score = math.Float32frombits(uint32(n))
				case num == 3 && typ == protowire.VarintType:
					kind = int(n)
				}
				return nil
			}); err != nil {
				return err
			}
			pieces = append(pieces, p)
			t.scores = append(t.scores, score)
			types = append(types, kind)
		case num == 2 && typ == protowire.BytesType:
			return forFields(v, func(num protowire.Number, typ protowire.Type, _ []byte, n uint64) error {
				if num == 3 && typ == protowire.VarintType {
					modelType = int(n)
				}
				return nil
			})
		case num == 3 && typ == protowire.BytesType:
			return forFields(v, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
				switch {
				case num == 2 && typ == protowire.BytesType:
					cm, err := parseCharsMap(v)
					if err != nil {
						return err
					}
					t.norm = cm
				case num == 3 && typ == protowire.VarintType:
					t.addDummy = n != 0
				case num == 4 && typ == protowire.VarintType:
					t.removeExtraWS = n != 0
				case num == 5 && typ == protowire.VarintType:
					t.escapeWS = n != 0
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sentencepiece model: %w", err)
	}
	if modelType != 1 {
		return nil, fmt.Errorf("sentencepiece model: type %d is not unigram", modelType)
	}
	if len(pieces) == 0 {
		return nil, errors.New("sentencepiece model: no pieces")
	}
	minScore := float32(math.Inf(1))
	var trie trieBuilder
	for i, p := range pieces {
		switch types[i] {
		case spUnknown:
			t.unkID = int32(i)
		case spNormal, spUserDefined, spUnused:
			trie.add(p, int32(i))
			if types[i] == spNormal {
				minScore = min(minScore, t.scores[i])
			}
		}
		if types[i] == spUnused || types[i] == spUserDefined {
			// Unused pieces are never emitted; user-defined ones are not
			// in the models memstream ships, and SentencePiece scores them
			// by length, which this encoder does not do.
			t.scores[i] = float32(math.Inf(-1))
		}
	}
	if t.unkID < 0 {
		return nil, errors.New("sentencepiece model: no unknown piece")
	}
	t.unkScore = minScore - 10
	t.trie = trie.build()
	return t, nil
}

// forFields calls fn for each field of a protobuf message. v is the payload
// of length-delimited fields; n the value of varint and fixed fields.
func forFields(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error) error {
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		var v []byte
		var n uint64
		switch typ {
		case protowire.VarintType:
			n, l = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var x uint32
			x, l = protowire.ConsumeFixed32(b)
			n = uint64(x)
		case protowire.Fixed64Type:
			n, l = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v, l = protowire.ConsumeBytes(b)
		default:
			l = protowire.ConsumeFieldValue(num, typ, b)
		}
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		if err := fn(num, typ, v, n); err != nil {
			return err
		}
	}
	return nil
}

// Encode returns the piece ids of text, without BOS or EOS.
func (t *spTokenizer) Encode(text string, dst []int32) []int32 {
	s := t.normalize(text)
	if len(s) == 0 {
		return dst
	}
	// Viterbi over byte positions; paths start only at character
	// boundaries, as in SentencePiece.
	type node struct {
		score float32
		start int32
		id    int32
	}
	best := make([]node, len(s)+1)
	for i := range best {
		best[i].start = -1
	}
	best[0].start = 0
	for start := 0; start < len(s); {
		_, clen := utf8.DecodeRuneInString(s[start:])
		if best[start].start < 0 {
			start += clen
			continue
		}
		base := best[start].score
		single := false
		t.trie.prefixes(s[start:], func(id int32, n int) {
			sc := t.scores[id]
			if math.IsInf(float64(sc), -1) {
				return
			}
			end := start + n
			if nd := &best[end]; nd.start < 0 || base+sc > nd.score {
				*nd = node{score: base + sc, start: int32(start), id: id}
			}
			if n == clen {
				single = true
			}
		})
		if !single {
			end := start + clen
			if nd := &best[end]; nd.start < 0 || base+t.unkScore > nd.score {
				*nd = node{score: base + t.unkScore, start: int32(start), id: t.unkID}
			}
		}
		start += clen
	}
	from := len(dst)
	for end := len(s); end > 0; end = int(best[end].start) {
		id := best[end].id
		// A run of unknown characters is one unknown piece, as in
		// SentencePiece.
		if id == t.unkID && len(dst) > from && dst[len(dst)-1] == t.unkID {
			continue
		}
		dst = append(dst, id)
	}
	slices.Reverse(dst[from:])
	return dst
}

// normalize applies the character map and SentencePiece's whitespace rules.
func (t *spTokenizer) normalize(text string) string {
	out := make([]byte, 0, len(text)+8)
	in := text
	space := " "
	if t.escapeWS {
		space = spaceSymbol
	}
	if t.removeExtraWS {
		for len(in) > 0 {
			rep, n := t.norm.prefix(in)
			if rep != " " {
				break
			}
			in = in[n:]
		}
	}
	if len(in) == 0 {
		return ""
	}
	if t.addDummy {
		out = append(out, space...)
	}
	prevSpace := t.removeExtraWS
	for len(in) > 0 {
		rep, n := t.norm.prefix(in)
		in = in[n:]
		if prevSpace && t.removeExtraWS {
			for len(rep) > 0 && rep[0] == ' ' {
				rep = rep[1:]
			}
		}
		if len(rep) == 0 {
			continue
		}
		for i := 0; i < len(rep); i++ {
			if rep[i] == ' ' {
				out = append(out, space...)
			} else {
				out = append(out, rep[i])
			}
		}
		prevSpace = rep[len(rep)-1] == ' '
	}
	if t.removeExtraWS {
		for len(out) >= len(space) && string(out[len(out)-len(space):]) == space {
			out = out[:len(out)-len(space)]
		}
	}
	return string(out)
}

// charsMap is SentencePiece's precompiled normalization map: a darts-clone
// double-array trie from input byte strings to offsets of NUL-terminated
// replacements.
type charsMap struct {
	units []uint32
	repl  []byte
}

func parseCharsMap(b []byte) (charsMap, error) {
	if len(b) == 0 {
		return charsMap{}, nil
	}
	if len(b) < 4 {
		return charsMap{}, errors.New("precompiled charsmap: truncated")
	}
	size := binary.LittleEndian.Uint32(b)
	if size%4 != 0 || uint64(size)+4 > uint64(len(b)) {
		return charsMap{}, errors.New("precompiled charsmap: bad trie size")
	}
	units := make([]uint32, size/4)
	for i := range units {
		units[i] = binary.LittleEndian.Uint32(b[4+4*i:])
	}
	return charsMap{units: units, repl: b[4+size:]}, nil
}

// prefix returns the normalized form of the longest mapped prefix of s and
// the number of input bytes it replaces. Without a mapping it returns the
// first character unchanged, or U+FFFD for one byte of invalid UTF-8.
func (c charsMap) prefix(s string) (string, int) {
	if len(c.units) > 0 {
		longest, value := 0, uint32(0)
		u := c.units
		pos := dartsOffset(u[0])
		for i := 0; i < len(s); i++ {
			pos ^= uint32(s[i])
			if int(pos) >= len(u) {
				break
			}
			unit := u[pos]
			if unit&(1<<31|0xFF) != uint32(s[i]) { // label mismatch
				break
			}
			pos ^= dartsOffset(unit)
			if unit>>8&1 == 1 { // has a leaf: a key ends here
				if int(pos) >= len(u) {
					break
				}
				longest, value = i+1, u[pos]&(1<<31-1)
			}
		}
		if longest > 0 && int(value) < len(c.repl) {
			r := c.repl[value:]
			if end := slices.Index(r, 0); end >= 0 {
				r = r[:end]
			}
			return string(r), longest
		}
	}
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && n <= 1 {
		return "\uFFFD", 1
	}
	return s[:n], n
}

func dartsOffset(unit uint32) uint32 {
	return (unit >> 10) << ((unit & (1 << 9)) >> 6)
}

// pieceTrie maps byte strings to piece ids. Nodes are stored flat: node i's
// children are labels[first[i]:first[i+1]] (sorted) with their node indexes
// in next, so a vocabulary of 128 000 pieces costs a few megabytes.
type pieceTrie struct {
	first  []int32
	labels []byte
	next   []int32
	id     []int32 // piece id ending at the node, or -1
}

// prefixes calls fn for every piece that is a prefix of s, shortest first.
func (t *pieceTrie) prefixes(s string, fn func(id int32, n int)) {
	node := int32(0)
	for i := 0; i < len(s); i++ {
		lo, hi := t.first[node], t.first[node+1]
		c := s[i]
		j, found := slices.BinarySearch(t.labels[lo:hi], c)
		if !found {
			return
		}
		node = t.next[lo+int32(j)]
		if id := t.id[node]; id >= 0 {
			fn(id, i+1)
		}
	}
}

type trieBuilder struct {
	nodes []map[byte]int32
	ids   []int32
}

func (b *trieBuilder) add(s string, id int32) {
	if len(b.nodes) == 0 {
		b.nodes = append(b.nodes, map[byte]int32{})
		b.ids = append(b.ids, -1)
	}
	n := int32(0)
	for i := 0; i < len(s); i++ {
		nx, ok := b.nodes[n][s[i]]
		if !ok {
			nx = int32(len(b.nodes))
			b.nodes = append(b.nodes, map[byte]int32{})
			b.ids = append(b.ids, -1)
			b.nodes[n][s[i]] = nx
		}
		n = nx
	}
	if b.ids[n] < 0 { // the first of duplicate pieces wins, as in SentencePiece
		b.ids[n] = id
	}
}

func (b *trieBuilder) build() pieceTrie {
	if len(b.nodes) == 0 {
		return pieceTrie{first: []int32{0, 0}, id: []int32{-1}}
	}
	t := pieceTrie{first: make([]int32, len(b.nodes)+1), id: b.ids}
	for i, m := range b.nodes {
		t.first[i] = int32(len(t.labels))
		keys := make([]byte, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			t.labels = append(t.labels, k)
			t.next = append(t.next, m[k])
		}
	}
	t.first[len(b.nodes)] = int32(len(t.labels))
	return t
}
