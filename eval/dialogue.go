package eval

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

// The dialogue parts are a different shape of data than the other two:
// long chats between two named people (both role "user", no assistant),
// one Kafka event per message, and questions asked in the third person
// about either of them. Each has its own vocabulary (dialogue_vocab.go for
// the dialogue part, dialogue_tuning_vocab.go for its tuning counterpart)
// and shares the generator below, drawing from RNG streams no other part
// uses, so generating one never changes the other parts' files.

// dialogueStart is when the dialogue part's sessions begin.
var dialogueStart = time.Date(2024, time.May, 6, 0, 0, 0, 0, time.UTC)

// dialogueStream sets the bit of a dialogue bank's PCG stream that no
// other part's stream has (theirs are bank<<2|bits, banks ≤ 1000).
const dialogueStream = uint64(1) << 48

// dialogueVocab is everything a dialogue part's chats are made of; the
// generator's mechanics (layout, distractors, timing) are shared.
type dialogueVocab struct {
	part string
	// bankPrefix starts the part's bank ids.
	bankPrefix string
	// stream is or-ed into each bank's PCG stream; no two parts share one.
	stream uint64
	start  time.Time

	speakers, companions                   []string
	single, events, multi, updates, absent []dlgFact
	reactions, prompts                     []string
	open, close                            [][2]string
	filler                                 [][]string
	slots                                  map[string][]string
	// relay is a speaker passing on a third person's message: {p} is the
	// third person, {q} the message.
	relay string
	// when are the time phrases of temporal statements, each with the day
	// it names for something said at t.
	when []dlgWhen
}

// dlgWhen is a time phrase and the day it names.
type dlgWhen struct {
	phrase string
	day    func(t time.Time) time.Time
}

// dialogueVocabulary is the dialogue part's: its word lists live in
// dialogue_vocab.go.
var dialogueVocabulary = dialogueVocab{
	part: PartDialogue, bankPrefix: "dlg", stream: dialogueStream, start: dialogueStart,
	speakers: dlgSpeakerNames, companions: dlgCompanions,
	single: dlgSingle, events: dlgEvents, multi: dlgMulti, updates: dlgUpdates, absent: dlgAbsent,
	reactions: dlgReactions, prompts: dlgPrompts, open: dlgOpen, close: dlgClose,
	filler: dlgFiller, slots: dlgSlots,
	relay: "{p} sent me this today: \"{q}\"",
	when: []dlgWhen{
		{"yesterday", func(t time.Time) time.Time { return dayOf(t).AddDate(0, 0, -1) }},
		{"two days ago", func(t time.Time) time.Time { return dayOf(t).AddDate(0, 0, -2) }},
		{"this morning", dayOf},
		{"last Saturday", saturdayBefore},
		{"last Friday", func(t time.Time) time.Time { return weekdayBefore(t, time.Friday) }},
	},
}

func dialogueVocabOf(part string) (*dialogueVocab, bool) {
	switch part {
	case PartDialogue:
		return &dialogueVocabulary, true
	case PartDialogueTuning:
		return &dialogueTuningVocabulary, true
	}
	return nil, false
}

func dayOf(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }

// weekdayBefore is the last wd strictly before t's day.
func weekdayBefore(t time.Time, wd time.Weekday) time.Time {
	day := dayOf(t)
	back := (int(day.Weekday()) - int(wd) + 7) % 7
	if back == 0 {
		back = 7
	}
	return day.AddDate(0, 0, -back)
}

// dialogueBanks is how many banks the part has: half the English banks of
// the preset (the conversations are longer than the other parts' ones).
func dialogueBanks(cfg GenConfig) int { return max(1, cfg.Banks/2) }

type dlgTurn struct {
	speaker int
	text    string
}

type dlgPlant struct {
	turns    []dlgTurn
	evidence int // index into turns of the evidence turn, or -1
	placement
}

type dialogueGen struct {
	cfg GenConfig
	v   *dialogueVocab
	id  string
	drawer
	names     [2]string
	starts    []time.Time
	plants    [][]*dlgPlant
	questions []pendingQuestion[*dlgPlant]
}

func newDialogueGen(cfg GenConfig, v *dialogueVocab, start time.Time, i int) *dialogueGen {
	g := &dialogueGen{
		cfg:    cfg,
		v:      v,
		id:     fmt.Sprintf("%s-en-%03d", v.bankPrefix, i),
		drawer: drawer{rng: rand.New(rand.NewPCG(uint64(cfg.Seed), v.stream|uint64(i))), used: map[string]bool{}},
	}
	g.names[0] = g.draw(v.speakers)
	g.names[1] = g.draw(v.speakers)
	// One slot per session across the span, as in the other parts, so the
	// sessions stay in order and days apart.
	slot := cfg.Span / time.Duration(cfg.SessionsPerBank)
	slotDays := int(slot / (24 * time.Hour))
	for s := range cfg.SessionsPerBank {
		day := s*slotDays + g.rng.IntN(max(1, slotDays/2))
		g.starts = append(g.starts, start.UTC().Truncate(24*time.Hour).AddDate(0, 0, day).
			Add(9*time.Hour+time.Duration(g.rng.IntN(12*60))*time.Minute))
	}
	g.plants = make([][]*dlgPlant, cfg.SessionsPerBank)
	return g
}

// says plants speaker x's news in session s, with the friend's reaction
// and, half the time, the friend's question that brought it up.
func (g *dialogueGen) says(s, x int, text string, evidence bool) *dlgPlant {
	y := 1 - x
	p := &dlgPlant{placement: placement{session: s}, evidence: -1}
	if g.rng.IntN(2) == 0 {
		p.turns = append(p.turns, dlgTurn{y, pick(g.rng, g.v.prompts)})
	}
	if evidence {
		p.evidence = len(p.turns)
	}
	p.turns = append(p.turns, dlgTurn{x, capFirst(text)}, dlgTurn{y, pick(g.rng, g.v.reactions)})
	g.plants[s] = append(g.plants[s], p)
	return p
}

func (g *dialogueGen) ask(typ string, x int, question string, qt time.Time, gold []string, plants ...*dlgPlant) *Question {
	if gold == nil {
		gold = []string{}
	}
	g.questions = append(g.questions, pendingQuestion[*dlgPlant]{
		q: Question{
			ID: fmt.Sprintf("%s-q%03d", g.id, len(g.questions)), BankID: g.id, Type: typ, Part: g.v.part,
			Question: capFirst(fill(question, "n", g.names[x])), QueryTimestamp: qt.UTC(),
			GoldAnswers: gold, Evidence: []Evidence{},
		},
		plants: plants,
	})
	return &g.questions[len(g.questions)-1].q
}

func (g *dialogueGen) end() time.Time {
	return g.starts[len(g.starts)-1].Add(24 * time.Hour).Truncate(time.Hour)
}

// distractor plants a like statement that must not be taken for the
// answer: the friend saying it about themselves, or the speaker saying it
// about a third person's news, in another session.
func (g *dialogueGen) distractor(avoid, x int, format, v string) {
	s := g.sessionIn(0, len(g.starts), avoid)
	if g.rng.IntN(2) == 0 {
		g.says(s, 1-x, fill(format, "v", v), false)
		return
	}
	_, who := splitKey(g.draw(g.v.companions))
	g.says(s, x, fill(g.v.relay, "p", who, "q", capFirst(fill(format, "v", v))), false)
}

// plant plants every question type for both speakers, k of each.
func (g *dialogueGen) plant() {
	n, k := len(g.starts), g.cfg.PerType
	for x := range 2 {
		for _, ti := range g.order(len(g.v.single))[:min(k, len(g.v.single))] {
			t := g.v.single[ti]
			v := g.draw(t.pool)
			key, text := splitKey(v)
			s, say := g.sessionIn(0, n), pick(g.rng, t.say)
			ev := g.says(s, x, fill(say, "v", text), true)
			_, neg := splitKey(g.draw(t.pool))
			g.distractor(s, x, say, neg)
			g.ask(TypeSingleSessionUser, x, pick(g.rng, t.ask), g.end(), []string{key}, ev)
		}
		for _, ti := range g.order(len(g.v.events))[:min(k, len(g.v.events))] {
			t := g.v.events[ti]
			key, text := splitKey(g.draw(t.pool))
			s := g.sessionIn(0, n)
			phrase, day := g.when(g.starts[s])
			asked := text
			if t.askKey {
				asked = key
			}
			say := pick(g.rng, t.say)
			ev := g.says(s, x, fill(say, "v", text, "w", phrase), true)
			_, neg := splitKey(g.draw(t.pool))
			negS := g.sessionIn(0, n, s)
			negPhrase, _ := g.when(g.starts[negS])
			g.says(negS, 1-x, fill(say, "v", neg, "w", negPhrase), false)
			g.ask(TypeTemporalReasoning, x, fill(pick(g.rng, t.ask), "v", asked), g.end(),
				[]string{day.Format("January 2, 2006"), day.Format("2006-01-02")}, ev)
		}
		for _, ti := range g.order(len(g.v.multi))[:min(k, len(g.v.multi))] {
			t := g.v.multi[ti]
			parts := 2 + g.rng.IntN(3)
			var plants []*dlgPlant
			var sessions []int
			var values []string
			for range parts {
				key, text := splitKey(g.draw(t.pool))
				s := g.sessionIn(0, n, sessions...)
				sessions = append(sessions, s)
				values = append(values, key)
				plants = append(plants, g.says(s, x, fill(pick(g.rng, t.say), "v", text), true))
			}
			_, neg := splitKey(g.draw(t.pool))
			g.says(g.sessionIn(0, n), 1-x, fill(pick(g.rng, t.say), "v", neg), false)
			q := g.ask(TypeMultiSession, x, pick(g.rng, t.ask), g.end(), values, plants...)
			q.RequireAll = true
		}
		for _, ti := range g.order(len(g.v.updates))[:min(k, len(g.v.updates))] {
			t := g.v.updates[ti]
			oldKey, oldText := splitKey(g.draw(t.pool))
			curKey, curText := splitKey(g.draw(t.pool))
			g.says(g.sessionIn(0, n/2), x, fill(pick(g.rng, t.say), "v", oldText), false)
			ev := g.says(g.sessionIn(n/2, n), x, fill(pick(g.rng, t.update), "v", curText), true)
			_, neg := splitKey(g.draw(t.pool))
			g.says(g.sessionIn(0, n), 1-x, fill(pick(g.rng, t.say), "v", neg), false)
			q := g.ask(TypeKnowledgeUpdate, x, pick(g.rng, t.ask), g.end(), []string{curKey}, ev)
			q.OldValue = oldKey
		}
		for range k {
			t := g.v.absent[0]
			absent := g.draw(t.pool)
			q := g.ask(TypeAbstention, x, fill(pick(g.rng, t.ask), "v", absent), g.end(), nil)
			q.Abstention = true
			q.AbsentTerm = absent
		}
	}
}

// when picks a time phrase for something said at t and the day it names.
func (g *dialogueGen) when(t time.Time) (string, time.Time) {
	w := pick(g.rng, g.v.when)
	return w.phrase, w.day(t)
}

// finish lays out the sessions (opening, small talk with the plants in
// between, closing) and resolves each question's evidence turns. Every
// message is its own event, as chat logs usually reach Kafka.
func (g *dialogueGen) finish() ([]Event, []Question) {
	var events []Event
	for s, start := range g.starts {
		sid := sessionID(g.id, s)
		a := g.rng.IntN(2) // who opens the session
		var blocks []*dlgPlant
		nf := g.cfg.FillerExchanges + g.rng.IntN(3)
		for _, fi := range g.order(len(g.v.filler))[:min(nf, len(g.v.filler))] {
			b := &dlgPlant{evidence: -1}
			first := g.rng.IntN(2)
			for j, text := range g.v.filler[fi] {
				b.turns = append(b.turns, dlgTurn{(first + j) % 2, fillSlots(g.rng, g.v.slots, text)})
			}
			blocks = append(blocks, b)
		}
		blocks = interleave(g.rng, blocks, g.plants[s])
		open, bye := pick(g.rng, g.v.open), pick(g.rng, g.v.close)
		blocks = slices.Insert(blocks, 0, &dlgPlant{evidence: -1, turns: []dlgTurn{
			{a, fill(open[0], "o", g.names[1-a])}, {1 - a, open[1]}}})
		closer := g.rng.IntN(2)
		blocks = append(blocks, &dlgPlant{evidence: -1, turns: []dlgTurn{{closer, bye[0]}, {1 - closer, bye[1]}}})

		ts, turn := start, 0
		for _, b := range blocks {
			for j, t := range b.turns {
				if j == b.evidence {
					b.turnIndex = turn
				}
				events = append(events, Event{
					BankID: g.id, EventID: fmt.Sprintf("eval:%s:%03d", sid, turn), DocumentID: sid,
					Messages: []Message{{Role: "user", Name: g.names[t.speaker], Content: t.text, Timestamp: ts}},
					Tags:     []string{"eval", "lang:en"},
					Metadata: map[string]string{"session_id": sid, "session_index": strconv.Itoa(s), TurnOffsetKey: strconv.Itoa(turn)},
				})
				turn++
				ts = ts.Add(time.Duration(15+g.rng.IntN(150)) * time.Second)
			}
		}
	}
	return events, resolveEvidence(g.id, g.questions)
}

// capFirst upper-cases a turn's first letter ("my cousin Wren dragged
// me…" starts a sentence).
func capFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 || !unicode.IsLower(r) {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}
