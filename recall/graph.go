package recall

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/memstream/memstream/resolve"
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

const (
	qGraphAliasSeeds = `SELECT coalesce(e.merged_into, e.id), a.alias_key
	FROM entity_aliases a JOIN entities e ON e.id = a.entity_id
	WHERE a.bank_id = $1 AND a.alias_key = ANY($2::text[]) AND e.bank_id = $1`

	// Trigram similarity catches misspellings and forms the alias table
	// lacks ("Jon Smith" for "John Smith"); % uses pg_trgm's threshold
	// and the GIN index on lower(canonical_name).
	qGraphNameSeeds = `SELECT coalesce(e.merged_into, e.id), max(similarity(lower(e.canonical_name), p.p))
	FROM unnest($2::text[]) AS p(p) JOIN entities e ON lower(e.canonical_name) % p.p
	WHERE e.bank_id = $1
	GROUP BY 1`

	// qGraphGivenSeeds finds the people whose full Han name is a
	// one-character surname and the given name a query nickname stands
	// for (阿洋 → 刘洋): a few rows of the bank's persons, read through
	// the (bank_id, kind) index.
	qGraphGivenSeeds = `SELECT coalesce(e.merged_into, e.id)
	FROM entities e
	WHERE e.bank_id = $1 AND e.kind = 'person' AND e.canonical_name LIKE ANY($2::text[])`

	// qGraphExpand walks two hops. Seed entities are the named ones
	// ($5/$6) and those of the facts nearest to the query ($7 ids, $8
	// similarities: the semantic arm's best, see nearestFacts), weighted
	// by $10 times their similarity, that are mentioned at most $12
	// times (counting the mentions not yet folded into mention_count):
	// that a similar fact mentions Seattle, named in a thousand
	// facts, says nothing about which of them matter, the way a common
	// word says nothing in full-text search. An entity seeded both ways
	// keeps its best weight.
	//
	// Hop 1: facts that mention a seed entity, scored by the summed
	// weights of the seeds they mention (a fact naming both people asked
	// about beats one naming either). Each entity lends a bounded number
	// of facts, so that a city or a spouse mentioned by thousands of
	// facts cannot make every recall aggregate all of them. An entity the
	// query names in full (weight 1) lends its $11 most recently stored
	// facts: unit_entities rows are only ever inserted, so ctid order is
	// ingest order, and sorting by it reads no memory_units row, though
	// it reads every unit_entities row of the entity. Weaker seeds (a
	// given name alone that fits forty people, a trigram match, the
	// entities of the nearest facts, at most $12 mentions) lend the first
	// $13 rows of the index, which costs $13 reads however big the entity
	// is; $13 shrinks as they multiply. The ctid (t) also breaks ties
	// between equal scores later, newest first.
	//
	// Hop 2: facts linked to the best $9/2 hop-1 facts or to the nearest
	// facts, scored by the parent's score times the link weight, damped
	// by link type: causal links carry the most meaning, entity and
	// temporal links the least (entity links repeat hop 1, temporal ones
	// are only nearness).
	//
	// Only the best 1.5·$9 facts of both hops are looked up in memory_units
	// for the request's filters: each lookup is a random read, and they
	// were most of the arm's time. Seed entities belong to the bank, so
	// both hops stay inside it; the final filter drops invalidated facts.
	qGraphExpand = `WITH useeds AS (
		SELECT u.id, u.score FROM unnest($7::uuid[], $8::float8[]) AS u(id, score)),
	seeds AS (
		SELECT x.entity_id, max(x.w) AS w, bool_or(x.named) AS named FROM (
			SELECT s.entity_id, s.w, s.w >= 1 AS named FROM unnest($5::uuid[], $6::float8[]) AS s(entity_id, w)
			UNION ALL
			SELECT ue.entity_id, $10 * u.score, false FROM useeds u JOIN unit_entities ue ON ue.unit_id = u.id
			JOIN entities e ON e.id = ue.entity_id
			WHERE e.mention_count + COALESCE((SELECT sum(d.mentions) FROM entity_mention_deltas d WHERE d.entity_id = e.id), 0) <= $12) x
		GROUP BY x.entity_id),
	hop1 AS (
		SELECT f.unit_id AS id, sum(s.w) AS score, max(f.t) AS t
		FROM seeds s CROSS JOIN LATERAL (
			(SELECT ue.unit_id, ue.ctid AS t FROM unit_entities ue
			 WHERE s.named AND ue.entity_id = s.entity_id ORDER BY ue.ctid DESC LIMIT $11)
			UNION ALL
			(SELECT ue.unit_id, ue.ctid FROM unit_entities ue
			 WHERE NOT s.named AND ue.entity_id = s.entity_id LIMIT $13)) f
		GROUP BY f.unit_id),
	starts AS (
		(SELECT h.id, h.score FROM hop1 h ORDER BY h.score DESC, h.t DESC LIMIT $9 / 2)
		UNION ALL
		SELECT * FROM useeds),
	hop2 AS (
		SELECT n.id, max(st.score * n.weight * CASE n.link_type
			WHEN 'entity' THEN 0.3 WHEN 'temporal' THEN 0.3 WHEN 'semantic' THEN 0.5 ELSE 0.7 END) AS score
		FROM starts st
		CROSS JOIN LATERAL (
			SELECT l.to_id AS id, l.weight, l.link_type FROM memory_links l WHERE l.from_id = st.id
			UNION ALL
			SELECT l.from_id, l.weight, l.link_type FROM memory_links l WHERE l.to_id = st.id) n
		GROUP BY n.id),
	scored AS (
		SELECT id, sum(score) AS score, max(t) AS t
		FROM (SELECT * FROM hop1 UNION ALL SELECT id, score, NULL FROM hop2) x
		GROUP BY id
		ORDER BY 2 DESC, 3 DESC NULLS LAST
		LIMIT $9 + $9 / 2)
	SELECT m.id, sc.score
	FROM scored sc JOIN memory_units m ON m.id = sc.id
	WHERE ` + unitFilter + ` AND sc.score > 0
	ORDER BY sc.score DESC, m.mentioned_at DESC
	LIMIT $9`
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
		// All look-ups in one round trip, on generic plans (see
		// qSetGeneric).
		var b pgx.Batch
		b.Queue(qSetGeneric)
		b.Queue(qGraphAliasSeeds, q.BankID, keys)
		if len(phrases) > 0 {
			b.Queue(qGraphNameSeeds, q.BankID, phrases)
		}
		if len(givenLike) > 0 {
			b.Queue(qGraphGivenSeeds, q.BankID, givenLike)
		}
		br := r.pool.SendBatch(ctx, &b)
		byKey := map[string][]uuid.UUID{}
		trigram := map[uuid.UUID]float64{}
		var givenIDs []uuid.UUID
		err := func() error {
			defer br.Close()
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("graph seeds: set query options: %w", err)
			}
			rows, err := br.Query()
			if err != nil {
				return fmt.Errorf("graph alias seeds: %w", err)
			}
			var id uuid.UUID
			var key string
			if _, err := pgx.ForEachRow(rows, []any{&id, &key}, func() error {
				byKey[key] = append(byKey[key], id)
				return nil
			}); err != nil {
				return fmt.Errorf("graph alias seeds: %w", err)
			}
			if len(phrases) > 0 {
				if rows, err = br.Query(); err != nil {
					return fmt.Errorf("graph name seeds: %w", err)
				}
				var sim float64
				if _, err := pgx.ForEachRow(rows, []any{&id, &sim}, func() error {
					trigram[id] = max(trigram[id], sim)
					return nil
				}); err != nil {
					return fmt.Errorf("graph name seeds: %w", err)
				}
			}
			if len(givenLike) > 0 {
				if rows, err = br.Query(); err != nil {
					return fmt.Errorf("graph given-name seeds: %w", err)
				}
				if _, err := pgx.ForEachRow(rows, []any{&id}, func() error {
					givenIDs = append(givenIDs, id)
					return nil
				}); err != nil {
					return fmt.Errorf("graph given-name seeds: %w", err)
				}
			}
			return br.Close()
		}()
		if err != nil {
			return nil, "", err
		}
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
	args := append(q.filterArgs(), entIDs, entW, nearIDs, nearSims, q.pool, seedSemantic,
		hop1PerEntity(q.pool), seedMentionCap(q.pool, n), hop1PerWeakEntity(q.pool, weak))
	var out []Candidate
	err = r.genericQuery(ctx, qGraphExpand, args, func(rows pgx.Rows) error {
		var c Candidate
		if err := rows.Scan(&c.ID, &c.Score); err != nil {
			return err
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("graph expand: %w", err)
	}
	return out, "", nil
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
