package resolve

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/memstream/memstream/internal/unionfind"
)

// Candidate is an existing entity of the bank that a mention might refer to,
// as loaded by the pipeline (typically the rows whose alias keys share a
// [Keys] value with the mention, or whose name passes the trigram
// prefilter).
type Candidate struct {
	ID      int64
	Name    string // canonical name
	Kind    string // person, place, organization, …; empty if unknown
	Aliases []string
	// Embedding is the entity's vector (for example of its name and recent
	// context); compared with Mention.Embedding when both are set.
	Embedding []float32
	LastSeen  time.Time
	Mentions  int
	// CoMentioned reports that this entity has appeared in earlier messages
	// together with the entities named in Mention.CoMentions. People who
	// show up with the same company are more likely the same person.
	CoMentioned bool
}

// Mention is a name found in one message.
type Mention struct {
	Name      string
	Kind      string
	Embedding []float32
	At        time.Time
	// CoMentions are the other entity names in the same message. The
	// pipeline uses them to set Candidate.CoMentioned, and [GroupAliases]
	// to link aliases used side by side.
	CoMentions []string
}

// Match is the resolver's decision for one mention.
type Match struct {
	ID    int64
	Score float64
	// Reason names the strongest name evidence: exact, alias, pinyin,
	// reordered, nickname, surname, given_name or trigram. It is logged and
	// shown in traces so that a wrong merge can be explained.
	Reason string
	// Name is the candidate's name or alias that matched.
	Name string
}

// Config sets the weights and threshold of the resolver. Zero fields take
// the defaults of WithDefaults.
type Config struct {
	// Threshold is the least score that merges a mention into a candidate.
	// Default 0.7: an exact name alone passes, a fuzzy one needs support.
	Threshold float64
	// MinNameSimilarity is the least name evidence considered at all.
	// Context can tip a close name over the threshold but never merges
	// two different names: "Alice" and "Alicia" have trigram similarity
	// 0.44 and stay apart. Default 0.5.
	MinNameSimilarity float64
	// EmbeddingWeight is the share of the gap between the name evidence
	// and certainty that embedding similarity can fill, when mention and
	// candidate both have a vector. Context only supports a name: an
	// unrelated context does not lower an exact match, because one short
	// message says too little to veto it. Default 0.5.
	EmbeddingWeight float64
	// CoOccurrenceWeight and RecencyWeight are the parts of the score given
	// to co-occurrence (Candidate.CoMentioned) and to recency, which is 1
	// for a candidate seen at the moment of the mention and halves every
	// RecencyHalfLife: the entity talked about yesterday is a better guess
	// than one last seen a year ago. The rest of the score is name and
	// embedding evidence. Defaults 0.1, 0.05 and 30 days.
	CoOccurrenceWeight float64
	RecencyWeight      float64
	RecencyHalfLife    time.Duration
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Threshold, 0.7)
	def(&c.MinNameSimilarity, 0.5)
	def(&c.EmbeddingWeight, 0.5)
	def(&c.CoOccurrenceWeight, 0.1)
	def(&c.RecencyWeight, 0.05)
	if c.RecencyHalfLife == 0 {
		c.RecencyHalfLife = 30 * 24 * time.Hour
	}
	return c
}

func (c Config) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"resolve.threshold", c.Threshold},
		{"resolve.min_name_similarity", c.MinNameSimilarity},
		{"resolve.embedding_weight", c.EmbeddingWeight},
		{"resolve.co_occurrence_weight", c.CoOccurrenceWeight},
		{"resolve.recency_weight", c.RecencyWeight},
	} {
		if f.v < 0 || f.v > 1 || math.IsNaN(f.v) {
			return fmt.Errorf("%s: must be in [0, 1], got %v", f.name, f.v)
		}
	}
	if c.CoOccurrenceWeight+c.RecencyWeight >= 1 {
		return fmt.Errorf("resolve.co_occurrence_weight + resolve.recency_weight: must be below 1, got %v", c.CoOccurrenceWeight+c.RecencyWeight)
	}
	if c.RecencyHalfLife < 0 {
		return fmt.Errorf("resolve.recency_half_life: must be positive, got %v", c.RecencyHalfLife)
	}
	return nil
}

// Resolver decides which existing entity, if any, a mention refers to. It
// holds only configuration and is safe for concurrent use.
type Resolver struct {
	cfg Config
}

// New returns a resolver for cfg after filling defaults and validating it.
func New(cfg Config) (*Resolver, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Resolver{cfg: cfg}, nil
}

// Name evidence strengths. A partial match (surname or first name only) is
// as strong as a nickname, but only counts when it is unambiguous.
const (
	strengthExact    = 1.0
	strengthPinyin   = 0.95
	strengthNickname = 0.9
	strengthPartial  = 0.9
	strengthLoneSur  = 0.85 // a bare Latin "Zhang", which might be a given name
)

type nameMatch struct {
	score   float64
	reason  string
	partial bool
	name    string
}

// Resolve returns the candidate the mention refers to, or false when none
// scores at least the threshold. Candidates of another kind are never
// chosen (a person named Paris is not the city). A surname-only or
// first-name-only mention ("老张", "Mr. Zhang", "Alice") matches only when
// exactly one candidate person fits it; with several, it matches the one
// that is co-mentioned if exactly one is, and otherwise nothing, because a
// wrong merge is much harder to undo than a missed one.
func (r *Resolver) Resolve(m Mention, cands []Candidate) (Match, bool) {
	pm := parse(m.Name)
	if pm.norm == "" {
		return Match{}, false
	}
	mk := normKind(m.Kind)

	type scored struct {
		c  *Candidate
		nm nameMatch
	}
	var full, partial []scored
	for i := range cands {
		c := &cands[i]
		ck := normKind(c.Kind)
		if mk != "" && ck != "" && mk != ck {
			continue
		}
		personish := (mk == "" || mk == "person") && (ck == "" || ck == "person")
		best := nameMatch{}
		for j, n := range append([]string{c.Name}, c.Aliases...) {
			nm := compareNames(pm, parse(n), personish)
			if nm.reason == "exact" && j > 0 {
				nm.reason = "alias"
			}
			nm.name = n
			if nm.score > best.score {
				best = nm
			}
		}
		if best.score < r.cfg.MinNameSimilarity {
			continue
		}
		if best.partial {
			partial = append(partial, scored{c, best})
		} else {
			full = append(full, scored{c, best})
		}
	}
	if len(partial) > 1 {
		var co []scored
		for _, s := range partial {
			if s.c.CoMentioned {
				co = append(co, s)
			}
		}
		partial = nil
		if len(co) == 1 {
			partial = co
		}
	}

	var best Match
	var bestC *Candidate
	for _, s := range append(full, partial...) {
		score := r.score(m, s.c, s.nm.score)
		if bestC == nil || score > best.Score ||
			score == best.Score && (s.c.Mentions > bestC.Mentions ||
				s.c.Mentions == bestC.Mentions && s.c.ID < bestC.ID) {
			best = Match{ID: s.c.ID, Score: score, Reason: s.nm.reason, Name: s.nm.name}
			bestC = s.c
		}
	}
	if bestC == nil || best.Score < r.cfg.Threshold {
		return Match{}, false
	}
	return best, true
}

// score combines the evidence into [0, 1]:
//
//	base  = name + EmbeddingWeight·max(0, cos)·(1 − name)
//	score = (1 − Wco − Wrec)·base + Wco·co + Wrec·recency
//
// With the defaults an exact name scores at least 0.85, a unique surname or
// first name 0.765, and a fuzzy name (trigram 0.5–0.8) needs context to
// reach the threshold of 0.7.
func (r *Resolver) score(m Mention, c *Candidate, name float64) float64 {
	base := name
	if len(m.Embedding) > 0 && len(m.Embedding) == len(c.Embedding) {
		cos := max(0, cosine(m.Embedding, c.Embedding))
		base += r.cfg.EmbeddingWeight * cos * (1 - name)
	}
	s := (1 - r.cfg.CoOccurrenceWeight - r.cfg.RecencyWeight) * base
	if c.CoMentioned {
		s += r.cfg.CoOccurrenceWeight
	}
	if !m.At.IsZero() && !c.LastSeen.IsZero() && r.cfg.RecencyHalfLife > 0 {
		age := max(0, m.At.Sub(c.LastSeen))
		s += r.cfg.RecencyWeight * math.Exp2(-float64(age)/float64(r.cfg.RecencyHalfLife))
	}
	return min(1, s)
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// normKind folds case so "Person" and "person" agree; kinds outside the
// pipeline's vocabulary still compare by equality.
func normKind(k string) string {
	k = strings.ToLower(strings.TrimSpace(k))
	if k == "unknown" || k == "other" {
		return ""
	}
	return k
}

// compareNames returns the name evidence that a and b are one entity.
// Partial forms (surname only, first name only) are considered only for
// people.
func compareNames(a, b parsed, person bool) nameMatch {
	if a.norm == "" || b.norm == "" {
		return nameMatch{}
	}
	if a.norm == b.norm {
		return nameMatch{score: strengthExact, reason: "exact"}
	}
	// Two different Han spellings are different names even when they
	// sound alike (张伟, 章伟); the transliteration only bridges scripts.
	bothHan := a.han && b.han
	if !bothHan && !a.surnameOnly && !b.surnameOnly && intersects(a.full, b.full) {
		reason := "reordered"
		if a.han || b.han {
			reason = "pinyin"
		}
		return nameMatch{score: strengthPinyin, reason: reason}
	}
	if !a.han && !b.han && a.canon == b.canon {
		return nameMatch{score: strengthNickname, reason: "nickname"}
	}
	if person {
		if nm, ok := partialMatch(a, b); ok {
			return nm
		}
		if nm, ok := partialMatch(b, a); ok {
			return nm
		}
	}
	t := Trigram(a.norm, b.norm)
	if a.han != b.han {
		// Compare a Han name and a Latin one through the transliteration.
		t = max(t, Trigram(spacedPinyin(a), spacedPinyin(b)))
	}
	return nameMatch{score: t, reason: "trigram"}
}

// partialMatch reports whether short names a refer to full name b: a
// surname-only form to a name with that surname, or a lone first name to a
// Latin full name with that first name.
func partialMatch(a, b parsed) (nameMatch, bool) {
	if a.surnameOnly && !b.surnameOnly && len(b.surnames) > 0 {
		if a.hanSurname != "" && b.hanSurname != "" {
			if a.hanSurname == b.hanSurname {
				return nameMatch{score: strengthPartial, reason: "surname", partial: true}, true
			}
			return nameMatch{}, false
		}
		if intersects(a.surnames, b.surnames) {
			return nameMatch{score: strengthPartial, reason: "surname", partial: true}, true
		}
	}
	if a.surnameOnly && b.surnameOnly {
		// 老张 and 小张, or 张总 and Mr. Zhang: two surname-only forms.
		same := a.hanSurname != "" && a.hanSurname == b.hanSurname ||
			(a.hanSurname == "" || b.hanSurname == "") && intersects(a.surnames, b.surnames)
		if same {
			return nameMatch{score: strengthPartial, reason: "surname", partial: true}, true
		}
	}
	if !a.han && !a.surnameOnly && len(a.tokens) == 1 && !b.han && len(b.tokens) >= 2 {
		if a.given == b.given || canonName(a.given) == canonName(b.given) {
			return nameMatch{score: strengthPartial, reason: "given_name", partial: true}, true
		}
	}
	if !a.han && !a.surnameOnly && len(a.tokens) == 1 && pinyinSurnames[a.given] && b.han &&
		len(b.surnames) > 0 && b.surnames[0] == a.given {
		// A bare "Zhang" and 张伟: probably, if he is the only Zhang.
		return nameMatch{score: strengthLoneSur, reason: "surname", partial: true}, true
	}
	return nameMatch{}, false
}

func canonName(s string) string {
	if c, ok := nicknames[s]; ok {
		return c
	}
	return s
}

func spacedPinyin(p parsed) string {
	if p.han {
		return strings.Join(toPinyin(p.norm), " ")
	}
	return strings.Join(p.tokens, " ")
}

func intersects(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

// GroupAliases links the names of one message that refer to the same
// entity: "张伟 (Zhang Wei), whom we call 老张" gives one group of three. The
// pipeline records every name in a group as an alias of the entity the group
// resolves to, which is how 老张 becomes a plain alias of 张伟 for later
// messages. Each mention appears in exactly one group; groups and their
// members are in input order.
//
// Names are linked on exact, transliterated, reordered or nickname matches,
// and on a surname-only or first-name-only form when exactly one full name
// in the message fits it. Mentions of different kinds are never linked.
func GroupAliases(ms []Mention) [][]int {
	ps := make([]parsed, len(ms))
	for i, m := range ms {
		ps[i] = parse(m.Name)
	}
	sets := unionfind.New(len(ms))
	find, union := sets.Find, sets.Union
	compatible := func(i, j int) (bool, bool) {
		ki, kj := normKind(ms[i].Kind), normKind(ms[j].Kind)
		if ki != "" && kj != "" && ki != kj {
			return false, false
		}
		return true, (ki == "" || ki == "person") && (kj == "" || kj == "person")
	}
	// Full-name links first, so that a short form facing "张伟" and "Zhang
	// Wei" sees one entity, not two.
	var partials [][2]int
	for i := range ms {
		for j := i + 1; j < len(ms); j++ {
			ok, person := compatible(i, j)
			if !ok {
				continue
			}
			switch nm := compareNames(ps[i], ps[j], person); {
			case nm.partial:
				// Record short form -> full name. Two short forms are not
				// linked: 老张 and 小张 in one message are often two people.
				switch si, sj := ps[i].short(), ps[j].short(); {
				case si && !sj:
					partials = append(partials, [2]int{i, j})
				case sj && !si:
					partials = append(partials, [2]int{j, i})
				}
			case nm.score >= strengthNickname:
				union(i, j)
			}
		}
	}
	// A short form joins a full name only when it fits one entity of the
	// message: in "张伟和张强", 老张 could be either.
	for i := range ms {
		roots := map[int]bool{}
		for _, p := range partials {
			if p[0] == i {
				roots[find(p[1])] = true
			}
		}
		if len(roots) == 1 {
			for r := range roots {
				union(i, r)
			}
		}
	}
	var groups [][]int
	index := map[int]int{}
	for i := range ms {
		root := find(i)
		g, ok := index[root]
		if !ok {
			g = len(groups)
			index[root] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}
