package consolidate

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/text"
)

// A batch's candidates are read in one statement, before any of its facts
// is decided, but each fact must be decided as if the facts before it had
// already been applied: the fact that restates what the previous one
// said must find the observation that one created. The view is that
// knowledge. It holds every observation the batch has seen, as the
// batch's earlier decisions left it, and corrects each fact's candidate
// lists with it before the fact is adjudicated:
//
//   - observations invalidated or merged away earlier in the batch leave
//     the lists;
//   - observations created or re-worded earlier in the batch enter the
//     rankings they would have entered in the database: the semantic one
//     by cosine similarity (computed here on the stored half precision),
//     the slot one by their subject|attribute, the keyword one by a shared
//     word or entity (ranked first among the keyword candidates, by how
//     many words they share, as the freshest knowledge of the bank);
//   - evidence added earlier in the batch shows in proof counts and in
//     the time of the newest evidence.
//
// A batch of one fact reads the database alone, as consolidation did fact
// by fact.
type view struct {
	obs map[uuid.UUID]*viewObs
	// changed lists, in order, the observations created or re-worded in
	// this batch; every later fact re-ranks them.
	changed []uuid.UUID
	seq     int
	merge   float64
}

type viewObs struct {
	c     store.ObservationCandidate
	scope string
	valid bool
	// dbProofs is proof_count as the database holds it during the apply,
	// before statistics are recounted: what the merge rule compares.
	dbProofs int
	// evidence are the facts this batch added (proof counts count each
	// once).
	evidence map[uuid.UUID]bool
	// seq orders changes within the batch (the slot ranking prefers the
	// observation updated last); 0 means unchanged.
	seq      int
	terms    map[string]bool
	entities []uuid.UUID
}

func newView(mergeThreshold float64) *view {
	return &view{obs: map[uuid.UUID]*viewObs{}, merge: mergeThreshold}
}

// see registers a candidate row read from the database. The first read
// wins: every row of a batch comes from the same snapshot, and the view's
// copy carries the batch's changes since.
func (v *view) see(c store.ObservationCandidate) *viewObs {
	if o, ok := v.obs[c.ID]; ok {
		return o
	}
	o := &viewObs{c: c, scope: scopeKey(c.Tags), valid: true, dbProofs: c.ProofCount, evidence: map[uuid.UUID]bool{}}
	o.c.Embedding = halfRound(c.Embedding)
	v.obs[c.ID] = o
	return o
}

// candidates returns a fact's fused candidates: its database rankings
// corrected by the view, interleaved as fuse does.
func (v *view) candidates(f store.PendingFact, slot string, lists store.CandidateLists, limit int) []Candidate {
	scope := scopeKey(f.Tags)
	terms := termSet(text.QueryTerms(f.Text))
	vec := halfRound(f.Embedding)
	current := func(c store.ObservationCandidate) (store.ObservationCandidate, *viewObs, bool) {
		o := v.see(c)
		if !o.valid {
			return c, o, false
		}
		out := o.c
		if o.seq > 0 {
			out.Similarity = cosine(vec, o.c.Embedding)
		} else {
			out.Similarity = c.Similarity
		}
		return out, o, true
	}
	var sem, kw, sl []store.ObservationCandidate
	inList := map[uuid.UUID]bool{}
	for _, c := range lists.Semantic {
		if cur, _, ok := current(c); ok {
			sem, inList[c.ID] = append(sem, cur), true
		}
	}
	inKw := map[uuid.UUID]bool{}
	for _, c := range lists.Keyword {
		cur, o, ok := current(c)
		if !ok || (o.seq > 0 && !o.matchesKeyword(terms, f.EntityIDs)) {
			continue
		}
		kw, inKw[c.ID] = append(kw, cur), true
	}
	inSlot := map[uuid.UUID]bool{}
	for _, c := range lists.Slot {
		cur, o, ok := current(c)
		if !ok || (o.seq > 0 && o.c.Metadata["slot"] != slot) {
			continue
		}
		sl, inSlot[c.ID] = append(sl, cur), true
	}
	// Observations changed earlier in this batch, newest change first.
	var freshKw, freshSlot []*viewObs
	for i := len(v.changed) - 1; i >= 0; i-- {
		o := v.obs[v.changed[i]]
		if !o.valid || o.scope != scope {
			continue
		}
		cur := o.c
		cur.Similarity = cosine(vec, o.c.Embedding)
		if !inList[cur.ID] {
			sem, inList[cur.ID] = append(sem, cur), true
		}
		if !inKw[cur.ID] && o.matchesKeyword(terms, f.EntityIDs) {
			freshKw, inKw[cur.ID] = append(freshKw, o), true
		}
		if !inSlot[cur.ID] && slot != "" && o.c.Metadata["slot"] == slot {
			freshSlot, inSlot[cur.ID] = append(freshSlot, o), true
		}
	}
	slices.SortStableFunc(sem, func(a, b store.ObservationCandidate) int {
		if c := cmp.Compare(b.Similarity, a.Similarity); c != 0 {
			return c
		}
		return slices.Compare(a.ID[:], b.ID[:])
	})
	slices.SortStableFunc(freshKw, func(a, b *viewObs) int { return cmp.Compare(b.shared(terms), a.shared(terms)) })
	withSim := func(os []*viewObs) []store.ObservationCandidate {
		out := make([]store.ObservationCandidate, len(os))
		for i, o := range os {
			out[i] = o.c
			out[i].Similarity = cosine(vec, o.c.Embedding)
		}
		return out
	}
	kw = append(withSim(freshKw), kw...)
	sl = append(withSim(freshSlot), sl...)
	cut := func(l []store.ObservationCandidate) []store.ObservationCandidate { return l[:min(len(l), limit)] }
	return interleave(limit, map[string][]store.ObservationCandidate{"slot": cut(sl), "semantic": cut(sem), "keyword": cut(kw)},
		"slot", "semantic", "keyword")
}

func (o *viewObs) matchesKeyword(terms map[string]bool, entities []uuid.UUID) bool {
	if o.shared(terms) > 0 {
		return true
	}
	for _, e := range entities {
		if slices.Contains(o.entities, e) {
			return true
		}
	}
	return false
}

func (o *viewObs) shared(terms map[string]bool) int {
	n := 0
	for t := range terms {
		if o.terms[t] {
			n++
		}
	}
	return n
}

func termSet(ts []string) map[string]bool {
	out := make(map[string]bool, len(ts))
	for _, t := range ts {
		out[t] = true
	}
	return out
}

// apply records a group's edits as the apply will write them.
func (v *view) apply(facts map[uuid.UUID]store.PendingFact, edits []store.ObsEdit, now time.Time) {
	var reshaped []*viewObs
	for _, e := range edits {
		switch e.Kind {
		case store.EditCreate:
			if _, ok := v.obs[e.ObservationID]; ok {
				break
			}
			o := &viewObs{c: store.ObservationCandidate{ID: e.ObservationID, Text: e.Text, Tags: e.Tags, Metadata: e.Metadata,
				Embedding: halfRound(e.Embedding), CreatedAt: now}, scope: scopeKey(e.Tags), valid: true,
				evidence: map[uuid.UUID]bool{}, entities: e.EntityIDs}
			if o.c.Metadata == nil {
				o.c.Metadata = map[string]string{}
			}
			o.terms = termSet(text.QueryTerms(e.Text + " " + strings.Join(entityNames(facts, e.Evidence), " ")))
			v.obs[e.ObservationID] = o
			v.changed = append(v.changed, e.ObservationID)
			reshaped = append(reshaped, o)
		case store.EditUpdate:
			o := v.obs[e.ObservationID]
			if o == nil {
				continue
			}
			o.c.Text, o.c.Embedding, o.c.Metadata = e.Text, halfRound(e.Embedding), e.Metadata
			o.terms = termSet(text.QueryTerms(e.Text + " " + strings.Join(entityNames(facts, e.Evidence), " ")))
			if !slices.Contains(v.changed, e.ObservationID) {
				v.changed = append(v.changed, e.ObservationID)
			}
			reshaped = append(reshaped, o)
		case store.EditInvalidate:
			if o := v.obs[e.ObservationID]; o != nil {
				o.valid = false
			}
		}
		if o := v.obs[e.ObservationID]; o != nil {
			for _, ev := range e.Evidence {
				if !o.evidence[ev.MemoryID] {
					o.evidence[ev.MemoryID] = true
					o.c.ProofCount++
				}
				if ev.At.After(o.c.LastEvidence) {
					o.c.LastEvidence = ev.At
				}
			}
			if e.Kind == store.EditCreate || e.Kind == store.EditUpdate {
				v.seq++
				o.seq = v.seq
			}
		}
	}
	for _, o := range reshaped {
		v.mergeNearDuplicates(o)
	}
}

// mergeNearDuplicates predicts the apply's merge among the observations
// the view knows: the same survivor rule over the same proof counts.
func (v *view) mergeNearDuplicates(x *viewObs) {
	if v.merge <= 0 || !x.valid {
		return
	}
	group := []*viewObs{x}
	for _, o := range v.obs {
		if o != x && o.valid && o.scope == x.scope && cosine(x.c.Embedding, o.c.Embedding) >= v.merge {
			group = append(group, o)
		}
	}
	if len(group) == 1 {
		return
	}
	slices.SortFunc(group, func(a, b *viewObs) int {
		if c := cmp.Compare(b.dbProofs, a.dbProofs); c != 0 {
			return c
		}
		if c := a.c.CreatedAt.Compare(b.c.CreatedAt); c != 0 {
			return c
		}
		return slices.Compare(a.c.ID[:], b.c.ID[:])
	})
	s := group[0]
	for _, o := range group[1:] {
		o.valid = false
		s.c.ProofCount += o.c.ProofCount
		if o.c.LastEvidence.After(s.c.LastEvidence) {
			s.c.LastEvidence = o.c.LastEvidence
		}
	}
}

func entityNames(facts map[uuid.UUID]store.PendingFact, ev []store.ObsEvidence) []string {
	var out []string
	for _, e := range ev {
		out = append(out, facts[e.MemoryID].EntityNames...)
	}
	return out
}

// cosine is pgvector's halfvec cosine similarity: float accumulators,
// then a double division.
func cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float32
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 0
	}
	s := float64(dot) / math.Sqrt(float64(na)*float64(nb))
	return max(-1, min(1, s))
}

// halfRound rounds each component to IEEE half precision, as the
// database stores it, so that similarities computed here match its own.
func halfRound(v []float32) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = toHalf(x)
	}
	return out
}

func toHalf(f float32) float32 {
	if f == 0 || math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return f
	}
	a := math.Abs(float64(f))
	if a >= 65520 {
		return float32(math.Copysign(math.Inf(1), float64(f)))
	}
	// The spacing of half-precision values around a: 2^(e-10) for normal
	// numbers, 2^-24 below the normal range.
	e := math.Floor(math.Log2(a))
	if e < -14 {
		e = -14
	}
	q := math.Ldexp(1, int(e)-10)
	return float32(math.Copysign(math.RoundToEven(a/q)*q, float64(f)))
}
