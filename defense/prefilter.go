package defense

// prefilter is an ASCII case-insensitive Aho-Corasick automaton compiled to a
// dense DFA over byte classes. It finds every occurrence of every keyword in
// one left-to-right pass, so clean text costs one table lookup per byte no
// matter how many patterns exist. Regexes then run only in small windows
// around keyword hits.
type prefilter struct {
	class    [256]uint8 // byte -> equivalence class; 0 means "in no keyword"
	nclass   int
	delta    []uint16  // state*nclass + class -> next state
	out      [][]int32 // state -> keyword ids ending here (suffix outputs merged)
	hasOut   []bool
	keywords []string // lower-cased keyword text, by id
}

// hit is one keyword occurrence: text[start:start+len(keyword)].
type hit struct {
	kw    int32
	start int
}

func foldByte(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + ('a' - 'A')
	}
	return b
}

func newPrefilter(keywords []string) *prefilter {
	pf := &prefilter{keywords: make([]string, len(keywords))}
	// Byte classes: each distinct folded byte used in a keyword gets its own
	// class, everything else shares class 0. Upper and lower case share one.
	next := 1
	for i, kw := range keywords {
		b := []byte(kw)
		for j := range b {
			b[j] = foldByte(b[j])
		}
		pf.keywords[i] = string(b)
		for _, c := range b {
			if pf.class[c] == 0 {
				pf.class[c] = uint8(next)
				next++
			}
		}
	}
	for c := 'A'; c <= 'Z'; c++ {
		pf.class[c] = pf.class[c+('a'-'A')]
	}
	pf.nclass = next

	// Build the trie.
	type node struct {
		child map[uint8]int
		fail  int
		out   []int32
	}
	nodes := []node{{child: map[uint8]int{}}}
	for id, kw := range pf.keywords {
		cur := 0
		for i := 0; i < len(kw); i++ {
			c := pf.class[kw[i]]
			nx, ok := nodes[cur].child[c]
			if !ok {
				nodes = append(nodes, node{child: map[uint8]int{}})
				nx = len(nodes) - 1
				nodes[cur].child[c] = nx
			}
			cur = nx
		}
		nodes[cur].out = append(nodes[cur].out, int32(id))
	}
	if len(nodes) > 1<<16 {
		panic("defense: prefilter too large") // unreachable with the built-in patterns
	}

	// BFS to fill failure links and the dense transition table.
	n := len(nodes)
	pf.delta = make([]uint16, n*pf.nclass)
	queue := make([]int, 0, n)
	for c := 0; c < pf.nclass; c++ {
		if nx, ok := nodes[0].child[uint8(c)]; ok {
			pf.delta[c] = uint16(nx)
			nodes[nx].fail = 0
			queue = append(queue, nx)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		nodes[s].out = append(nodes[s].out, nodes[nodes[s].fail].out...)
		for c := 0; c < pf.nclass; c++ {
			if nx, ok := nodes[s].child[uint8(c)]; ok {
				nodes[nx].fail = int(pf.delta[nodes[s].fail*pf.nclass+c])
				pf.delta[s*pf.nclass+c] = uint16(nx)
				queue = append(queue, nx)
			} else {
				pf.delta[s*pf.nclass+c] = pf.delta[nodes[s].fail*pf.nclass+c]
			}
		}
	}
	pf.out = make([][]int32, n)
	pf.hasOut = make([]bool, n)
	for i := range nodes {
		pf.out[i] = nodes[i].out
		pf.hasOut[i] = len(nodes[i].out) > 0
	}
	return pf
}

// find appends every keyword occurrence in text to dst.
func (pf *prefilter) find(text string, dst []hit) []hit {
	state := 0
	nc := pf.nclass
	delta := pf.delta
	class := &pf.class
	hasOut := pf.hasOut
	for i := 0; i < len(text); i++ {
		state = int(delta[state*nc+int(class[text[i]])])
		if hasOut[state] {
			for _, kw := range pf.out[state] {
				dst = append(dst, hit{kw: kw, start: i + 1 - len(pf.keywords[kw])})
			}
		}
	}
	return dst
}
