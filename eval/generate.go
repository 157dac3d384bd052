package eval

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// generatorVersion is recorded in the manifest; bump it whenever the same
// seed starts producing different files, so old results are not compared
// with new data by mistake.
const generatorVersion = "memstream-eval/v2"

// GenConfig sizes a generated dataset. Zero fields take the defaults of
// WithDefaults, so a caller can override just the seed of a preset.
type GenConfig struct {
	// Seed makes the dataset reproducible: the same config and seed give
	// byte-identical files.
	Seed int64
	// Banks is the number of English banks, each one user with every
	// LongMemEval question type.
	Banks int
	// CrossLingualBanks is the number of additional Chinese banks that hold
	// the cross-lingual-alias questions.
	CrossLingualBanks int
	// SessionsPerBank is the number of chat sessions (events) per bank.
	SessionsPerBank int
	// Start is when the first session may begin. Zero means the part's own
	// start (the held-out part happens a year before the tuning part, so
	// both are backfills of history, as replayed Kafka topics are).
	Start time.Time
	// Span is the period the sessions of a bank are spread over. Several
	// months are needed for "in March"-style temporal questions.
	Span time.Duration
	// PerType is the number of questions of each type in an English bank.
	// Each one uses a different template, so it is at most 4.
	PerType int
	// FillerExchanges is the minimum number of small-talk user/assistant
	// exchanges per session; up to two more are added at random.
	FillerExchanges int
	// Parts are the benchmark parts to generate (PartHeldOut, PartTuning,
	// PartHeldOut2, PartHeldOut3, PartDialogue, PartDialogueTuning); empty
	// means the held-out and the tuning part. Each of the LongMemEval-shaped
	// parts has Banks + CrossLingualBanks banks; each dialogue part has half
	// of Banks.
	Parts []string
	// PerMessageEvery delivers every n-th bank of a part (the second, the
	// fourth, … for 2) as one event per message, the way most chat logs
	// reach Kafka, instead of one event per session. Default 2; negative
	// means never.
	PerMessageEvery int
}

// Small is the preset for tests and `make demo`: about 60 questions in five
// banks, small enough to ingest in seconds.
func Small() GenConfig {
	return GenConfig{Seed: 1, Banks: 4, CrossLingualBanks: 1, SessionsPerBank: 10, PerType: 2, FillerExchanges: 3}.WithDefaults()
}

// Gate is the preset of the `make test` regression gate: the held-out
// part only, sized to finish in well under a minute of a shared 2-core
// machine with the default embedder (see gate.go).
func Gate() GenConfig {
	c := Small()
	c.Seed = GateSeed
	c.Parts = []string{PartHeldOut}
	return c
}

// Full is the preset for reported numbers: several hundred questions in 36
// banks, enough that one question moves a per-type metric by little.
func Full() GenConfig {
	return GenConfig{Seed: 1, Banks: 30, CrossLingualBanks: 6, SessionsPerBank: 16, PerType: 2, FillerExchanges: 5}.WithDefaults()
}

// Preset returns the named preset (small, full or gate) restricted to
// part (both, heldout, tuning, heldout-2, heldout-3, dialogue,
// dialogue-tuning, or all), for the command line. "both" is the default
// and includes neither the second or third held-out part nor a dialogue
// part.
func Preset(size, part string) (GenConfig, error) {
	var c GenConfig
	switch size {
	case "small":
		c = Small()
	case "full":
		c = Full()
	case "gate":
		c = Gate()
	default:
		return c, fmt.Errorf("size %q is not small, full or gate", size)
	}
	switch part {
	case "both", "":
	case PartHeldOut, PartTuning, PartHeldOut2, PartHeldOut3, PartDialogue, PartDialogueTuning, "all":
		if size == "gate" && part != PartHeldOut {
			return c, fmt.Errorf("the gate preset is the %s part only", PartHeldOut)
		}
		c.Parts = []string{part}
		if part == "all" {
			c.Parts = slices.Clone(AllParts)
		}
	default:
		return c, fmt.Errorf("part %q is not %s, both or all", part, partNames())
	}
	return c, nil
}

// WithDefaults fills zero fields.
func (c GenConfig) WithDefaults() GenConfig {
	if len(c.Parts) == 0 {
		c.Parts = slices.Clone(Parts)
	}
	if c.PerMessageEvery == 0 {
		c.PerMessageEvery = 2
	}
	if c.Span == 0 {
		c.Span = 180 * 24 * time.Hour
	}
	if c.SessionsPerBank == 0 {
		c.SessionsPerBank = 10
	}
	if c.PerType == 0 {
		c.PerType = 2
	}
	if c.FillerExchanges == 0 {
		c.FillerExchanges = 3
	}
	return c
}

func (c GenConfig) validate() error {
	switch {
	case c.Banks < 0:
		return errors.New("eval: GenConfig.Banks must not be negative")
	case c.CrossLingualBanks < 0:
		return errors.New("eval: GenConfig.CrossLingualBanks must not be negative")
	case c.Banks+c.CrossLingualBanks == 0:
		return errors.New("eval: GenConfig.Banks and CrossLingualBanks are both zero")
	case c.Banks > 1000 || c.CrossLingualBanks > 1000:
		return errors.New("eval: GenConfig.Banks must be at most 1000")
	case c.SessionsPerBank < 6:
		// Knowledge updates need an early and a late half, multi-session
		// questions up to four distinct sessions, hard negatives another.
		return errors.New("eval: GenConfig.SessionsPerBank must be at least 6")
	case c.PerType < 1 || c.PerType > 4:
		return errors.New("eval: GenConfig.PerType must be between 1 and 4")
	case c.Span < time.Duration(c.SessionsPerBank)*48*time.Hour:
		return errors.New("eval: GenConfig.Span must allow two days per session")
	case c.FillerExchanges < 0:
		return errors.New("eval: GenConfig.FillerExchanges must not be negative")
	}
	seen := map[string]bool{}
	for _, p := range c.Parts {
		if !IsPart(p) || seen[p] {
			return fmt.Errorf("eval: GenConfig.Parts: %q is not %s, or repeated", p, partNames())
		}
		seen[p] = true
	}
	return nil
}

// Generate builds a dataset. Every bank draws from its own PCG stream
// derived from the seed and its part, so adding banks or parts does not
// change existing ones.
func Generate(cfg GenConfig) (*Dataset, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d := &Dataset{Manifest: Manifest{
		Generator: generatorVersion,
		Seed:      cfg.Seed,
		ByType:    map[string]int{},
		ByPart:    map[string]int{},
	}}
	add := func(g *bankGen) error {
		if g.err != nil {
			return fmt.Errorf("generate bank %s: %w", g.id, g.err)
		}
		events, qs := g.finish()
		d.Events = append(d.Events, events...)
		d.Questions = append(d.Questions, qs...)
		d.Manifest.Banks++
		d.Manifest.Sessions += len(g.sessions)
		if g.perMessage {
			d.Manifest.PerMessageBanks++
		}
		return nil
	}
	for pi, part := range cfg.Parts {
		v, _ := vocabularyOf(part)
		dv, dialogue := dialogueVocabOf(part)
		start := cfg.Start
		if start.IsZero() {
			if v != nil {
				start = v.start
			} else {
				start = dv.start
			}
		}
		if pi == 0 || start.Before(d.Manifest.Start) {
			d.Manifest.Start = start.UTC()
		}
		if dialogue {
			for i := range dialogueBanks(cfg) {
				g := newDialogueGen(cfg, dv, start, i)
				g.plant()
				if g.err != nil {
					return nil, fmt.Errorf("generate bank %s: %w", g.id, g.err)
				}
				events, qs := g.finish()
				d.Events = append(d.Events, events...)
				d.Questions = append(d.Questions, qs...)
				d.Manifest.Banks++
				d.Manifest.PerMessageBanks++
				d.Manifest.Sessions += len(g.starts)
			}
			continue
		}
		partBit := v.stream
		if part == PartHeldOut {
			partBit = 1
		}
		for i := range cfg.Banks {
			g := newBankGen(cfg, v, start, fmt.Sprintf("%s-en-%03d", v.bankPrefix, i), uint64(i)<<2|partBit, false)
			g.perMessage = cfg.PerMessageEvery > 0 && i%cfg.PerMessageEvery == cfg.PerMessageEvery-1
			g.plantEnglish()
			if err := add(g); err != nil {
				return nil, err
			}
		}
		for i := range cfg.CrossLingualBanks {
			g := newBankGen(cfg, v, start, fmt.Sprintf("%s-zh-%03d", v.bankPrefix, i), uint64(i)<<2|2|partBit, true)
			g.perMessage = cfg.PerMessageEvery > 0 && i%cfg.PerMessageEvery == cfg.PerMessageEvery-1
			g.plantChinese()
			if err := add(g); err != nil {
				return nil, err
			}
		}
	}
	for _, e := range d.Events {
		d.Manifest.Turns += len(e.Messages)
	}
	d.Manifest.Events = len(d.Events)
	d.Manifest.Questions = len(d.Questions)
	for _, q := range d.Questions {
		d.Manifest.ByType[q.Type]++
		d.Manifest.ByPart[q.Part]++
	}
	return d, nil
}

// placement is where a plant of either generator lands: its session and
// the index of its evidence turn there. turnIndex is known only after
// layout, which is why questions hold plants rather than evidence.
type placement struct {
	session   int
	turnIndex int
}

func (p *placement) placed() *placement { return p }

// planted is a plant of either generator.
type planted interface{ placed() *placement }

// pendingQuestion is a question whose evidence is its plants' placements.
type pendingQuestion[P planted] struct {
	q      Question
	plants []P
}

// resolveEvidence gives each of bank's questions the (session id, turn
// index) of its plants, once finish has laid the sessions out.
func resolveEvidence[P planted](bank string, pending []pendingQuestion[P]) []Question {
	qs := make([]Question, 0, len(pending))
	for _, pq := range pending {
		q := pq.q
		for _, p := range pq.plants {
			at := p.placed()
			q.Evidence = append(q.Evidence, Evidence{SessionID: sessionID(bank, at.session), TurnIndex: at.turnIndex})
		}
		qs = append(qs, q)
	}
	return qs
}

// sessionID is the id of bank's session s, the DocumentID of its events.
func sessionID(bank string, s int) string { return fmt.Sprintf("%s-s%02d", bank, s) }

// interleave inserts each plant at a random place among a session's filler.
func interleave[T any](rng *rand.Rand, filler, plants []T) []T {
	for _, p := range plants {
		at := rng.IntN(len(filler) + 1)
		filler = slices.Insert(filler, at, p)
	}
	return filler
}

// fillSlots fills a filler turn's placeholders, drawing the slot values in
// key order so the dataset does not depend on map iteration.
func fillSlots(rng *rand.Rand, slots map[string][]string, s string) string {
	keys := slices.Sorted(maps.Keys(slots))
	kv := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		kv = append(kv, k, pick(rng, slots[k]))
	}
	return fill(s, kv...)
}

// plant is one exchange inserted into a session.
type plant struct {
	roles    []string
	texts    []string
	evidence int // index into texts of the evidence turn, or -1
	placement
}

type session struct {
	start  time.Time
	plants []*plant
}

type bankGen struct {
	cfg GenConfig
	v   *vocabulary
	id  string
	zh  bool
	drawer
	user string
	// perMessage delivers the bank as one event per message.
	perMessage bool
	sessions   []session
	questions  []pendingQuestion[*plant]
}

func newBankGen(cfg GenConfig, v *vocabulary, start time.Time, id string, stream uint64, zh bool) *bankGen {
	g := &bankGen{
		cfg:    cfg,
		v:      v,
		id:     id,
		zh:     zh,
		drawer: drawer{rng: rand.New(rand.NewPCG(uint64(cfg.Seed), stream)), used: map[string]bool{}},
	}
	if zh {
		g.user = pick(g.rng, v.zhUserNames)
	} else {
		g.user = pick(g.rng, v.userNames)
	}
	// Sessions get one slot each across the span and start somewhere in
	// the first half of it, in daytime, so they stay in order and apart.
	slot := cfg.Span / time.Duration(cfg.SessionsPerBank)
	slotDays := int(slot / (24 * time.Hour))
	for i := range cfg.SessionsPerBank {
		day := i*slotDays + g.rng.IntN(max(1, slotDays/2))
		start := start.UTC().Truncate(24*time.Hour).AddDate(0, 0, day).
			Add(8*time.Hour + time.Duration(g.rng.IntN(12*60))*time.Minute)
		g.sessions = append(g.sessions, session{start: start})
	}
	return g
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

// fill replaces {k} placeholders; kv alternates keys and values.
func fill(format string, kv ...string) string {
	pairs := make([]string, 0, len(kv))
	for i := 0; i+1 < len(kv); i += 2 {
		pairs = append(pairs, "{"+kv[i]+"}", kv[i+1])
	}
	return strings.NewReplacer(pairs...).Replace(format)
}

// splitKey splits a "key|text" pool entry; plain entries are their own key.
func splitKey(v string) (key, text string) {
	if k, t, ok := strings.Cut(v, "|"); ok {
		return k, t
	}
	return v, v
}

// drawer is the random state both generators draw with: values unique per
// bank, shuffled template orders, sessions other than the given ones.
type drawer struct {
	rng  *rand.Rand
	used map[string]bool
	err  error
}

// draw takes an unused value from pool. Values are unique per bank, so a
// hard negative can never repeat the gold answer.
func (g *drawer) draw(pool []string) string {
	free := make([]string, 0, len(pool))
	for _, v := range pool {
		k, _ := splitKey(v)
		if !g.used[strings.ToLower(k)] {
			free = append(free, v)
		}
	}
	if len(free) == 0 {
		if g.err == nil {
			g.err = fmt.Errorf("value pool exhausted (first value %q)", pool[0])
		}
		return pool[0]
	}
	v := pick(g.rng, free)
	k, _ := splitKey(v)
	g.used[strings.ToLower(k)] = true
	return v
}

// order returns the indices 0..n-1 shuffled, to pick distinct templates.
func (g *drawer) order(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	g.rng.Shuffle(n, func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	return idx
}

// sessionIn picks a session index in [lo, hi) avoiding the given ones, so
// hard negatives and multi-session parts land in other sessions.
func (g *drawer) sessionIn(lo, hi int, avoid ...int) int {
	var cands []int
	for i := lo; i < hi; i++ {
		ok := true
		for _, a := range avoid {
			if a == i {
				ok = false
			}
		}
		if ok {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return lo
	}
	return pick(g.rng, cands)
}

func (g *bankGen) ack() string {
	if g.zh {
		return pick(g.rng, g.v.acksZH)
	}
	return pick(g.rng, g.v.acksEN)
}

// userSays plants a user statement followed by an acknowledgement.
func (g *bankGen) userSays(s int, text string, evidence bool) *plant {
	p := &plant{roles: []string{"user", "assistant"}, texts: []string{text, g.ack()}, evidence: -1, placement: placement{session: s}}
	if evidence {
		p.evidence = 0
	}
	g.sessions[s].plants = append(g.sessions[s].plants, p)
	return p
}

// assistantSays plants a user request answered by the assistant.
func (g *bankGen) assistantSays(s int, req, answer string, evidence bool) *plant {
	p := &plant{roles: []string{"user", "assistant"}, texts: []string{req, answer}, evidence: -1, placement: placement{session: s}}
	if evidence {
		p.evidence = 1
	}
	g.sessions[s].plants = append(g.sessions[s].plants, p)
	return p
}

func (g *bankGen) ask(typ, question string, qt time.Time, gold []string, plants ...*plant) *Question {
	if gold == nil {
		gold = []string{}
	}
	g.questions = append(g.questions, pendingQuestion[*plant]{
		q: Question{
			ID:             fmt.Sprintf("%s-q%03d", g.id, len(g.questions)),
			BankID:         g.id,
			Type:           typ,
			Part:           g.v.part,
			Question:       question,
			QueryTimestamp: qt.UTC(),
			GoldAnswers:    gold,
			Evidence:       []Evidence{},
		},
		plants: plants,
	})
	return &g.questions[len(g.questions)-1].q
}

// end is the default query time: a day after the bank's last session, when
// everything said is in the past.
func (g *bankGen) end() time.Time {
	return g.sessions[len(g.sessions)-1].start.Add(24 * time.Hour).Truncate(time.Hour)
}

func (g *bankGen) plantEnglish() {
	n := len(g.sessions)
	k := g.cfg.PerType
	other := func() string { return pick(g.rng, g.v.otherPeople) }

	for _, ti := range g.order(len(g.v.ssu))[:k] {
		t := g.v.ssu[ti]
		v, neg := g.draw(t.pool), g.draw(t.pool)
		s, i := g.sessionIn(0, n), g.rng.IntN(len(t.say))
		ev := g.userSays(s, fill(t.say[i], "v", v), true)
		g.userSays(g.sessionIn(0, n, s), fill(t.neg[i], "v", neg, "p", other()), false)
		g.ask(TypeSingleSessionUser, pick(g.rng, t.ask), g.end(), []string{v}, ev)
	}
	for _, ti := range g.order(len(g.v.ssa))[:k] {
		t := g.v.ssa[ti]
		v, neg := g.draw(t.pool), g.draw(t.pool)
		s, i := g.sessionIn(0, n), g.rng.IntN(len(t.say))
		ev := g.assistantSays(s, pick(g.rng, t.req), fill(t.say[i], "v", v), true)
		g.assistantSays(g.sessionIn(0, n, s), fill(t.negReq[i], "p", other()), fill(t.neg[i], "v", neg), false)
		g.ask(TypeSingleSessionAssistant, pick(g.rng, t.ask), g.end(), []string{v}, ev)
	}
	for _, ti := range g.order(len(g.v.ssp))[:k] {
		t := g.v.ssp[ti]
		v, neg := g.draw(t.pool), g.draw(t.pool)
		s, i := g.sessionIn(0, n), g.rng.IntN(len(t.say))
		ev := g.userSays(s, fill(t.say[i], "v", v), true)
		g.userSays(g.sessionIn(0, n, s), fill(t.neg[i], "v", neg, "p", other()), false)
		g.ask(TypeSingleSessionPreference, pick(g.rng, t.ask), g.end(), []string{v}, ev)
	}
	for _, ti := range g.order(len(g.v.multi))[:k] {
		t := g.v.multi[ti]
		parts := 2 + g.rng.IntN(3)
		var plants []*plant
		var sessions []int
		var values []string
		sayOrder := g.order(len(t.say))
		for j := range parts {
			v := g.draw(t.pool)
			s := g.sessionIn(0, n, sessions...)
			sessions = append(sessions, s)
			values = append(values, v)
			plants = append(plants, g.userSays(s, fill(t.say[sayOrder[j%len(sayOrder)]], "v", v), true))
		}
		neg := g.draw(t.pool)
		g.userSays(g.sessionIn(0, n), fill(t.neg[sayOrder[0]], "v", neg, "p", other()), false)
		q := g.ask(TypeMultiSession, pick(g.rng, t.ask), g.end(), values, plants...)
		q.RequireAll = true
	}
	for _, ti := range g.order(len(g.v.update))[:k] {
		t := g.v.update[ti]
		old, cur, neg := g.draw(t.pool), g.draw(t.pool), g.draw(t.pool)
		g.userSays(g.sessionIn(0, n/2), fill(pick(g.rng, t.say), "v", old), false)
		i := g.rng.IntN(len(t.update))
		// An update may name the value it replaces ("moved from {o} to {v}").
		ev := g.userSays(g.sessionIn(n/2, n), fill(t.update[i], "v", cur, "o", old), true)
		g.userSays(g.sessionIn(0, n), fill(t.neg[i], "v", neg, "p", other()), false)
		q := g.ask(TypeKnowledgeUpdate, pick(g.rng, t.ask), g.end(), []string{cur}, ev)
		q.OldValue = old
	}
	g.v.temporal(g, k)
	for _, ti := range g.order(len(g.v.abstention))[:k] {
		t := g.v.abstention[ti]
		v := g.draw(t.pool)
		absent := g.draw(t.absent)
		g.userSays(g.sessionIn(0, n), fill(pick(g.rng, t.say), "v", v), false)
		q := g.ask(TypeAbstention, fill(pick(g.rng, t.ask), "a", absent), g.end(), nil)
		q.Abstention = true
		q.AbsentTerm = absent
	}
}

var numberWords = []string{"", "", "Two", "Three", "Four", "Five"}

// plantTuningTemporal plants k temporal-reasoning questions of the tuning
// part, each of a different kind. A kind whose timing constraint no
// session meets is skipped in favour of the next one.
func (g *bankGen) plantTuningTemporal(k int) {
	n := len(g.sessions)
	kinds := g.order(4)
	planted := 0
	for _, kind := range kinds {
		if planted == k {
			return
		}
		switch kind {
		case 0: // "last Saturday", asked later that week
			s, ok := g.earlyWeekSession()
			if !ok {
				continue
			}
			v, neg := g.draw(saturdayActivities), g.draw(saturdayActivities)
			say := []string{"Last Saturday I finally went {v}, it was such a good day.", "I went {v} last Saturday and I'm still sore."}
			ev := g.userSays(s, fill(pick(g.rng, say), "v", v), true)
			g.userSays(g.sessionIn(0, n, s), fill("Last Saturday {p} went {v} without me.", "v", neg, "p", pick(g.rng, g.v.otherPeople)), false)
			// The hardest distractor is the user's own "last Saturday" from
			// another week: only the query time tells them apart.
			if otherWeeks := g.otherWeekSessions(s); len(otherWeeks) > 0 {
				g.userSays(pick(g.rng, otherWeeks), fill("Last Saturday I went {v}, never again.", "v", g.draw(saturdayActivities)), false)
			}
			// A day later is still before the next Saturday, so "last
			// Saturday" names the same day for the asker.
			asks := []string{"What did I do last Saturday?", "How did I spend last Saturday?"}
			g.ask(TypeTemporalReasoning, pick(g.rng, asks), g.sessions[s].start.Add(24*time.Hour), []string{v}, ev)
		case 1: // "back in March", asked at the end
			var cands []int
			first := monthIndex(g.sessions[0].start)
			for i, s := range g.sessions {
				if monthIndex(s.start) > first {
					cands = append(cands, i)
				}
			}
			if len(cands) == 0 {
				continue
			}
			s := pick(g.rng, cands)
			m := first + g.rng.IntN(monthIndex(g.sessions[s].start)-first)
			month := time.Month(m%12 + 1).String()
			v, neg := g.draw(monthClasses), g.draw(monthClasses)
			ev := g.userSays(s, fill("Back in {m} I took a {v} class, and I still use what I learned.", "v", v, "m", month), true)
			g.userSays(g.sessionIn(0, n, s), fill("{p} wants me to join her {v} class next month.", "v", neg, "p", pick(g.rng, g.v.otherPeople)), false)
			asks := []string{"Which course did I attend in {m}?", "What was I learning in {m}?"}
			g.ask(TypeTemporalReasoning, fill(pick(g.rng, asks), "m", month), g.end(), []string{v}, ev)
		case 2: // "three days ago", asked by calendar date
			s := g.sessionIn(1, n)
			days := 2 + g.rng.IntN(4)
			key, phrase := splitKey(g.draw(errands))
			ev := g.userSays(s, fill("{n} days ago I {v}, glad that's done.", "n", numberWords[days], "v", phrase), true)
			when := g.sessions[s].start.AddDate(0, 0, -days)
			// Another errand on another day, phrased the same way, so that
			// only date arithmetic picks the right one.
			o := g.sessionIn(1, n, s)
			_, other := splitKey(g.draw(errands))
			g.userSays(o, fill("{n} days ago I {v}, finally.", "n", numberWords[2+g.rng.IntN(4)], "v", other), false)
			asks := []string{"What did I take care of on {d}?", "Which errand did I get done on {d}?"}
			g.ask(TypeTemporalReasoning, fill(pick(g.rng, asks), "d", when.Format("Monday, January 2")), g.end(), []string{key}, ev)
		case 3: // "two weeks before the trip"
			b := g.sessionIn(1, n)
			a := g.sessionIn(0, b)
			city := g.draw(tripCities)
			trip := g.sessions[b].start.AddDate(0, 0, 14)
			g.userSays(a, fill("Booked the flights, I'm off to {c} on {d}.", "c", city, "d", trip.Format("January 2")), false)
			key, phrase := splitKey(g.draw(errands))
			ev := g.userSays(b, fill("Today I {v}, two weeks before the trip to {c}, so that's one less thing to worry about.", "v", phrase, "c", city), true)
			g.ask(TypeTemporalReasoning, fill("What did I get done a fortnight ahead of my {c} trip?", "c", city), g.end(), []string{key}, ev)
		}
		planted++
	}
}

// earlyWeekSession picks a session held Monday to Thursday: asked about a
// day later, "last Saturday" or "last weekend" still names the same days.
func (g *bankGen) earlyWeekSession() (int, bool) {
	var cands []int
	for i, s := range g.sessions {
		if wd := s.start.Weekday(); wd >= time.Monday && wd <= time.Thursday {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return 0, false
	}
	return pick(g.rng, cands), true
}

// otherWeekSessions are the sessions whose "last Saturday" is another day
// than session s's: the hardest distractors of a "last Saturday" or "last
// weekend" question.
func (g *bankGen) otherWeekSessions(s int) []int {
	var out []int
	for i, o := range g.sessions {
		if !saturdayBefore(o.start).Equal(saturdayBefore(g.sessions[s].start)) {
			out = append(out, i)
		}
	}
	return out
}

// saturdayBefore is the day "last Saturday" names when said at t: the most
// recent Saturday strictly before t's day.
func saturdayBefore(t time.Time) time.Time {
	day := t.UTC().Truncate(24 * time.Hour)
	back := (int(day.Weekday()) - int(time.Saturday) + 7) % 7
	if back == 0 {
		back = 7
	}
	return day.AddDate(0, 0, -back)
}

func monthIndex(t time.Time) int { return t.Year()*12 + int(t.Month()) - 1 }

func (g *bankGen) plantChinese() {
	n := len(g.sessions)
	count := min(3*g.cfg.PerType, len(g.v.crossLingual))
	people := g.order(len(g.v.zhPeople))
	for i, ti := range g.order(len(g.v.crossLingual))[:count] {
		t := g.v.crossLingual[ti]
		who := g.v.zhPeople[people[i%len(people)]]
		negWho := g.v.zhPeople[people[(i+1)%len(people)]]
		zh, en := splitKey(g.draw(t.pool))
		negZH, _ := splitKey(g.draw(t.pool))
		evAlias, qAlias := who.nick, who.full
		if g.rng.IntN(2) == 0 {
			evAlias, qAlias = who.full, who.nick
		}
		question := fill(pick(g.rng, t.askZh), "a", qAlias)
		if g.rng.IntN(2) == 0 {
			question = fill(pick(g.rng, t.askEn), "a", who.pinyin)
		}
		s := g.sessionIn(0, n)
		ev := g.userSays(s, fill(pick(g.rng, t.say), "a", evAlias, "v", zh), true)
		g.userSays(g.sessionIn(0, n, s), fill(pick(g.rng, t.say), "a", pick(g.rng, []string{negWho.nick, negWho.full}), "v", negZH), false)
		q := g.ask(TypeCrossLingualAlias, question, g.end(), []string{zh, en}, ev)
		q.EntityAliases = []string{who.full, who.pinyin, who.nick}
	}
}

// finish lays out every session, interleaving plants with filler, and
// resolves the evidence of each question to (session id, turn index). A
// per-message bank sends each turn as its own event of the session's
// document; the event's TurnOffsetKey metadata says which turn it holds.
func (g *bankGen) finish() ([]Event, []Question) {
	lang, assistant, fillers := "en", "Assistant", g.v.fillerEN
	if g.zh {
		lang, assistant, fillers = "zh", "助手", g.v.fillerZH
	}
	events := make([]Event, 0, len(g.sessions))
	for i, s := range g.sessions {
		sid := sessionID(g.id, i)
		nf := g.cfg.FillerExchanges + g.rng.IntN(3)
		exchanges := make([]*plant, 0, nf+len(s.plants))
		for _, fi := range g.order(len(fillers))[:min(nf, len(fillers))] {
			f := fillers[fi]
			exchanges = append(exchanges, &plant{
				roles:    []string{"user", "assistant"},
				texts:    []string{fillSlots(g.rng, g.v.fillerSlots, f[0]), fillSlots(g.rng, g.v.fillerSlots, f[1])},
				evidence: -1,
			})
		}
		exchanges = interleave(g.rng, exchanges, s.plants)
		ev := Event{
			BankID:     g.id,
			EventID:    "eval:" + sid,
			DocumentID: sid,
			Tags:       []string{"eval", "lang:" + lang},
			Metadata:   map[string]string{"session_id": sid, "session_index": strconv.Itoa(i)},
		}
		ts := s.start
		for _, ex := range exchanges {
			for j, text := range ex.texts {
				if j == ex.evidence {
					ex.turnIndex = len(ev.Messages)
				}
				name := g.user
				if ex.roles[j] != "user" {
					name = assistant
				}
				ev.Messages = append(ev.Messages, Message{Role: ex.roles[j], Name: name, Content: text, Timestamp: ts})
				ts = ts.Add(time.Duration(20+g.rng.IntN(160)) * time.Second)
			}
		}
		if !g.perMessage {
			events = append(events, ev)
			continue
		}
		for t, m := range ev.Messages {
			meta := maps.Clone(ev.Metadata)
			meta[TurnOffsetKey] = strconv.Itoa(t)
			events = append(events, Event{BankID: g.id, EventID: fmt.Sprintf("eval:%s:%03d", sid, t), DocumentID: sid,
				Messages: []Message{m}, Tags: ev.Tags, Metadata: meta})
		}
	}
	return events, resolveEvidence(g.id, g.questions)
}
