package recall

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/memstream/memstream/resolve"
	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/text"
)

// Seed weights. A name the query spells out (any alias key of the entity)
// is the strongest evidence; a surname or given name alone ("老张", "Mr.
// Zhang", "Alice") may mean several people, and an entity of a merely
// similar fact is weaker still.
const (
	seedExact    = 1.0
	seedPartial  = 0.4
	seedTrigram  = 0.8 // times the trigram similarity
	seedSemantic = 0.5 // times the cosine similarity
	// semanticSeedFacts is how many top semantic facts lend their
	// entities and links to the graph.
	semanticSeedFacts = 5
)

// hop1PerEntity is how many facts one seed entity lends to hop 1: twice
// the arm's pool, so that facts naming two seeds can still meet.
func hop1PerEntity(pool int) int { return 2 * pool }

// hop1PerWeakEntity shares hop 1 among n weak seed entities: together
// they lend about as much as one named entity, and each at least a few.
func hop1PerWeakEntity(pool, n int) int { return max(hop1PerEntity(pool)/max(n, 1), 5) }

// maxSeedMentions is the most facts an entity of a semantic seed fact may
// be mentioned by and still seed the walk: a few times what hop 1 takes
// from it, so its facts are a meaningful sample and not noise.
func maxSeedMentions(pool int) int { return 4 * pool }

// hubFraction is the share of a bank's facts above which an entity is a
// hub: in a chat bank the user's own entity is linked to most of their
// facts, so that a similar fact mentions it says as little as a stop word,
// and its facts, all linked with one weight, would flood hop 1 with ties.
const hubFraction = 0.2

// seedMentionCap is the most facts an entity of a semantic seed fact may
// be mentioned by: maxSeedMentions, and less than hubFraction of a bank of
// n facts. Very small banks (under 50 facts) have no hubs to speak of.
func seedMentionCap(pool int, n int64) int {
	c := maxSeedMentions(pool)
	if n >= 50 {
		c = min(c, max(int(hubFraction*float64(n)), 1))
	}
	return c
}

// nameCandidate is a span of the query that may name an entity, with its
// alias-table keys.
type nameCandidate struct {
	text  string
	exact []string // full-name keys
	part  []string // surname:/given: keys
}

// queryNames returns the query's word n-grams (1–3 words, not starting or
// ending with a stopword) and the 2–4 rune substrings of its CJK runs, with
// their resolve.Keys. CJK has no spaces, so any substring may be a name;
// the alias table decides which are.
func queryNames(query string) []nameCandidate {
	var out []nameCandidate
	seen := map[string]bool{}
	add := func(s string) {
		if seen[s] {
			return
		}
		seen[s] = true
		nc := nameCandidate{text: s}
		for _, k := range resolve.Keys(s) {
			if strings.HasPrefix(k, "surname:") || strings.HasPrefix(k, "given:") {
				nc.part = append(nc.part, k)
			} else {
				nc.exact = append(nc.exact, k)
			}
		}
		if len(nc.exact)+len(nc.part) > 0 {
			out = append(out, nc)
		}
	}
	var words []string
	flushWords := func() {
		for i := range words {
			for n := 1; n <= 3 && i+n <= len(words); n++ {
				first, last := words[i], words[i+n-1]
				if weak(first) || weak(last) {
					continue
				}
				add(strings.Join(words[i:i+n], " "))
			}
		}
		words = words[:0]
	}
	var cjk []rune
	flushCJK := func() {
		for i := range cjk {
			for n := 2; n <= 4 && i+n <= len(cjk); n++ {
				add(string(cjk[i : i+n]))
			}
		}
		cjk = cjk[:0]
	}
	var word []rune
	flushWord := func() {
		if len(word) > 0 {
			words = append(words, string(word))
			word = word[:0]
		}
	}
	for _, r := range query {
		switch {
		case text.IsCJK(r):
			flushWord()
			flushWords()
			cjk = append(cjk, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '-' || r == '.':
			flushCJK()
			word = append(word, r)
		case unicode.IsSpace(r):
			flushCJK()
			flushWord()
		default: // punctuation ends a name
			flushCJK()
			flushWord()
			flushWords()
		}
	}
	flushCJK()
	flushWord()
	flushWords()
	return out
}

// weak reports a word that cannot begin or end a name.
func weak(w string) bool {
	lw := strings.ToLower(strings.Trim(w, "'-."))
	lw = strings.TrimSuffix(lw, "'s")
	return len(lw) < 2 || text.IsStopword(lw)
}

// graph runs the entity/link arm.
func (r *Recaller) graph(ctx context.Context, q *query) ([]Candidate, string, error) {
	seeds := map[uuid.UUID]float64{}
	bump := func(id uuid.UUID, w float64) { seeds[id] = max(seeds[id], w) }

	names := queryNames(q.Query)
	if len(names) > 0 {
		var keys, phrases []string
		for _, n := range names {
			keys = append(keys, n.exact...)
			keys = append(keys, n.part...)
			if !hasCJKRune(n.text) && len(n.text) >= 4 {
				phrases = append(phrases, strings.ToLower(n.text))
			}
		}
		// Nicknames: a full name in the query also seeds the nicknames
		// its bearer is called by, and a nickname the full names.
		nickKeys := map[string]bool{}
		var givenLike []string
		for _, n := range names {
			for _, k := range nicknameKeys(n.text) {
				if !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
				nickKeys[k] = true
			}
			if g, ok := nicknameGiven(n.text); ok {
				givenLike = append(givenLike, "_"+g)
			}
		}
		// All look-ups in one round trip.
		found, err := r.st.RecallGraphSeeds(ctx, q.BankID, keys, phrases, givenLike)
		if err != nil {
			return nil, "", err
		}
		byKey, trigram, givenIDs := found.ByKey, found.Trigram, found.Given
		// A surname or given-name key counts only for a span that named
		// nobody in full: "Zhang Wei" must not also pull in every Zhang.
		// A full-name key that fits several entities ("Maria" for forty
		// Marias) identifies none of them: the weight is shared, down to
		// that of a partial key.
		for _, n := range names {
			exact := false
			for _, k := range n.exact {
				ids := byKey[k]
				for _, id := range ids {
					bump(id, max(seedExact/float64(len(ids)), seedPartial))
					exact = true
				}
			}
			if exact {
				continue
			}
			for _, k := range n.part {
				for _, id := range byKey[k] {
					bump(id, seedPartial)
				}
			}
		}
		for id, sim := range trigram {
			bump(id, seedTrigram*sim)
		}
		// A nickname may fit several people (阿洋 for 刘洋 and 杨洋): like
		// a given name alone, it is partial evidence.
		for k := range nickKeys {
			for _, id := range byKey[k] {
				bump(id, seedPartial)
			}
		}
		for _, id := range givenIDs {
			bump(id, seedPartial)
		}
	}

	// The facts nearest to the query lend their entities and links: the
	// query may describe someone without naming them. Without them (no
	// embedding, or the semantic arm failed) the graph goes on with the
	// named entities alone.
	near, err := r.nearestFacts(ctx, q, r.cfg.ArmTimeout/2)
	if err != nil {
		return nil, "", fmt.Errorf("graph: %w", err)
	}
	if len(seeds) == 0 && len(near) == 0 {
		return nil, "no entity named and no similar fact", nil
	}
	nearIDs := make([]uuid.UUID, len(near))
	nearSims := make([]float64, len(near))
	for i, c := range near {
		nearIDs[i], nearSims[i] = c.ID, r.cfg.Scale.Relevance(c.Score)
	}
	entIDs := make([]uuid.UUID, 0, len(seeds))
	entW := make([]float64, 0, len(seeds))
	for id, w := range seeds {
		entIDs, entW = append(entIDs, id), append(entW, w)
	}
	weak := semanticSeedFacts // about one entity per nearest fact
	for _, w := range entW {
		if w < seedExact {
			weak++
		}
	}
	n, err := r.bankSize(ctx, q.BankID, time.Now())
	if err != nil {
		return nil, "", fmt.Errorf("graph: %w", err)
	}
	rows, err := r.st.RecallGraph(ctx, q.filter(), store.GraphWalk{Entities: entIDs, Weights: entW, NearIDs: nearIDs, NearSims: nearSims,
		Limit: q.pool, SemanticWeight: seedSemantic, PerEntity: hop1PerEntity(q.pool), MentionCap: seedMentionCap(q.pool, n),
		PerWeakEntity: hop1PerWeakEntity(q.pool, weak)})
	if err != nil {
		return nil, "", err
	}
	return candidates(rows), "", nil
}

// nearestFacts returns the semanticSeedFacts facts nearest to the query
// embedding. When the semantic arm runs they are its best candidates,
// waited for at most d: one HNSW search serves both arms, where a second
// one cost the graph about a millisecond of server time per recall. Alone
// (an ablation), the graph searches with the same filters and beam, so it
// finds the same facts. None when there is no embedding, the semantic arm
// failed, or it took longer than d.
func (r *Recaller) nearestFacts(ctx context.Context, q *query, d time.Duration) ([]Candidate, error) {
	if q.semDone != nil {
		wctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		select {
		case <-q.semDone:
			return q.semTop[:min(len(q.semTop), semanticSeedFacts)], nil
		case <-wctx.Done():
			return nil, nil
		}
	}
	v, ok := q.optionalVector(ctx, d)
	if !ok {
		return nil, nil
	}
	cs, err := r.semanticSearch(ctx, q, v, semanticSeedFacts)
	if err != nil {
		return nil, fmt.Errorf("nearest facts: %w", err)
	}
	return cs, nil
}

func hasCJKRune(s string) bool {
	for _, r := range s {
		if text.IsCJK(r) {
			return true
		}
	}
	return false
}

// nicknameKeys returns the alias keys of the nicknames a full name's
// bearer is commonly called by: 阿 + given name, the given name doubled,
// given name + 姐/哥 (刘洋 → 阿洋, 洋洋, 洋姐, 洋哥), for a Han name of a
// one-character surname and a one-character given name, or a romanised
// one ("Liu Yang" → ayang, yangyang, yangjie, yangge, which are the keys
// resolve gives the Han nicknames). Friends write the nickname; the agent
// asks with the full name.
func nicknameKeys(name string) []string {
	rs := []rune(name)
	var out []string
	if len(rs) == 2 && text.IsCJK(rs[0]) && text.IsCJK(rs[1]) {
		if !slices.ContainsFunc(resolve.Keys(name), func(k string) bool { return strings.HasPrefix(k, "surname:") }) {
			return nil
		}
		g := string(rs[1])
		for _, n := range []string{"阿" + g, g + g, g + "姐", g + "哥"} {
			if n == name {
				continue
			}
			out = append(out, resolve.Keys(n)...)
		}
		return out
	}
	f := strings.Fields(strings.ToLower(name))
	if len(f) != 2 || hasCJKRune(name) {
		return nil
	}
	// Chinese order: the first word must be a surname.
	if !slices.Contains(resolve.Keys(name), "surname:"+f[0]) {
		return nil
	}
	g := f[1]
	return []string{"a" + g, g + g, g + "jie", g + "ge"}
}

// nicknameGiven returns the given-name character a Han nickname stands
// for (阿洋, 洋洋, 洋姐, 洋哥 → 洋).
func nicknameGiven(name string) (string, bool) {
	rs := []rune(name)
	if len(rs) != 2 || !text.IsCJK(rs[0]) || !text.IsCJK(rs[1]) {
		return "", false
	}
	switch {
	case rs[0] == '阿' && rs[1] != '姨':
		return string(rs[1]), true
	case rs[0] == rs[1]:
		return string(rs[0]), true
	case rs[1] == '姐' || rs[1] == '哥':
		return string(rs[0]), true
	}
	return "", false
}
