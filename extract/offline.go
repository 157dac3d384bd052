package extract

import (
	"context"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/memstream/memstream/chunk"
	"github.com/memstream/memstream/timeparse"
)

// OfflineConfig configures the rule-based extractor.
type OfflineConfig struct {
	// KnownEntities are names recognised wherever they occur, with their
	// kind, for example a bank's most-mentioned entities. Each is searched
	// in every sentence, so keep the list to dozens, not thousands.
	KnownEntities []Entity
	// SkipRoles lists message roles that yield no facts. Default: system,
	// whose instructions describe the agent, not the user's world.
	SkipRoles []string
}

// WithDefaults fills unset fields.
func (c OfflineConfig) WithDefaults() OfflineConfig {
	if c.SkipRoles == nil {
		c.SkipRoles = []string{"system"}
	}
	return c
}

// Offline extracts facts with deterministic rules and no model. It is the
// default provider: it keeps ingest working with no LLM configured, and it
// is fast enough to run on every message.
//
// Each informative sentence becomes a fact. Content-free sentences
// ("thanks!", "ok", 好的) are dropped. A sentence that mentions its speaker
// in the first or second person (I, my, we, you, 我, 你) is made
// self-contained by prefixing the speaker: "Alice: I moved to Shanghai".
// The speaker's words are kept verbatim after the prefix, so quotes stay
// exact and keyword search still matches them; other sentences are kept as
// they are. A sentence with a causal cue (because, so, due to, 因为, 所以,
// 导致) is split into a cause fact and an effect fact linked by causes and
// caused_by; one that opens with "So"/"Therefore"/所以 is linked to the
// previous fact of the chunk.
type Offline struct {
	known     map[string]string
	skipRoles map[string]bool
}

// NewOffline returns an Offline extractor for cfg after applying defaults.
// It refuses no configuration today (a known entity without a name is
// skipped, one of an unknown kind counts as other); the error keeps its
// shape that of every other constructor.
func NewOffline(cfg OfflineConfig) (*Offline, error) {
	cfg = cfg.WithDefaults()
	o := &Offline{known: map[string]string{}, skipRoles: map[string]bool{}}
	for _, e := range cfg.KnownEntities {
		if strings.TrimSpace(e.Name) == "" {
			continue
		}
		if !validKinds[e.Kind] {
			e.Kind = KindOther
		}
		o.known[e.Name] = e.Kind
	}
	for _, r := range cfg.SkipRoles {
		o.skipRoles[r] = true
	}
	return o, nil
}

// Extract returns the facts of each input, one []Fact per input in the same
// order. Causal target indices refer to the input's own []Fact. It fails
// only when ctx is done.
func (o *Offline) Extract(ctx context.Context, in []Input) ([][]Fact, error) {
	out := make([][]Fact, len(in))
	for i, input := range in {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out[i] = o.extract(input)
	}
	return out, nil
}

func (o *Offline) extract(in Input) []Fact {
	// Speakers of the chunk count as known people, so "Bob said ..." is
	// recognised even at the start of a sentence.
	finder := entityFinder{known: o.known}
	for _, p := range in.Parts {
		if p.Name != "" {
			if _, ok := finder.known[p.Name]; !ok {
				if len(finder.known) == len(o.known) {
					finder.known = cloneMap(o.known)
				}
				finder.known[p.Name] = speakerKind(p.Role)
			}
		}
	}
	var facts []Fact
	replies := ReplyContexts(in)
	for pi := range in.Parts {
		p := in.Parts[pi]
		replyTo := replies[pi]
		if o.skipRoles[p.Role] {
			continue
		}
		label := speakerLabel(p)
		for _, sent := range segment(p.Text) {
			if contentFree(sent) || (p.Role == "assistant" && assistantChitChat(sent, &finder)) {
				continue
			}
			var sentSpans []timeparse.Span
			parsed := false
			sentTime := func() []timeparse.Span {
				if !parsed && !p.Timestamp.IsZero() {
					sentSpans, parsed = timeparse.Parse(sent, p.Timestamp), true
				}
				return sentSpans
			}
			mk := func(text string, inherit bool) Fact {
				f := o.fact(text, p, label, &finder, in)
				if replyTo != "" {
					f.ReplyTo, f.Context = replyTo, JoinContext(f.Context, replyTo)
				}
				if f.OccurredStart == nil && inherit {
					setOccurred(&f, sentTime())
				}
				return f
			}
			cs := splitCausal(sent)
			switch {
			case cs.cause != "":
				c, e := mk(cs.cause, true), mk(cs.effect, true)
				ci, ei := len(facts), len(facts)+1
				if !cs.causeFirst {
					ci, ei = ei, ci
					facts = append(facts, e, c)
				} else {
					facts = append(facts, c, e)
				}
				facts[ci].Causal = append(facts[ci].Causal, Causal{TargetIndex: ei, Relation: Causes})
				facts[ei].Causal = append(facts[ei].Causal, Causal{TargetIndex: ci, Relation: CausedBy})
			default:
				f := mk(sent, false)
				if cs.fromPrevious && len(facts) > 0 {
					prev := len(facts) - 1
					f.Causal = append(f.Causal, Causal{TargetIndex: prev, Relation: CausedBy})
					facts[prev].Causal = append(facts[prev].Causal, Causal{TargetIndex: len(facts), Relation: Causes})
				}
				facts = append(facts, f)
			}
		}
	}
	return facts
}

// maxReplyContext bounds the quoted turn a reply carries, in runes.
const maxReplyContext = 300

// ReplyContexts returns, for each of in.Parts, the quote of the turn it
// answers (replyContext), for its facts' ReplyTo: the last message before
// the part, from History or the chunk. Every extractor uses it, so the
// offline and the LLM facts of a message quote the same turn.
func ReplyContexts(in Input) []string {
	out := make([]string, len(in.Parts))
	var prev *chunk.Part
	if n := len(in.History); n > 0 {
		prev = &in.History[n-1]
	}
	for pi := range in.Parts {
		p := in.Parts[pi]
		out[pi] = replyContext(prev, p)
		if prev == nil || prev.MessageIndex != p.MessageIndex || prev.Name != p.Name {
			prev = &in.Parts[pi]
		}
	}
	return out
}

// replyContext is the context a part's facts carry about the turn they
// answer: an assistant's (or tool's) part carries the message before it
// when someone else said it; a user's part carries the message before it
// only when that was a question to the user ("What's the dog called?" →
// "Biscuit."). The quote is the speaker and the text, cut at
// maxReplyContext runes.
func replyContext(prev *chunk.Part, p chunk.Part) string {
	if prev == nil || (prev.Name != "" && prev.Name == p.Name) || (prev.Name == "" && prev.Role == p.Role) {
		return ""
	}
	t := strings.TrimSpace(prev.Text)
	if t == "" {
		return ""
	}
	switch p.Role {
	case "assistant", "tool":
	case "user":
		if !strings.HasSuffix(t, "?") && !strings.HasSuffix(t, "？") {
			return ""
		}
	default:
		return ""
	}
	if r := []rune(t); len(r) > maxReplyContext {
		t = string(r[len(r)-maxReplyContext:])
	}
	return "In reply to " + speakerLabel(*prev) + ": " + t
}

// JoinContext appends a reply quote to an event's context label: the
// context a fact stores and shows.
func JoinContext(ctx, reply string) string {
	if ctx == "" || reply == "" {
		return ctx + reply
	}
	return ctx + "\n" + reply
}

func cloneMap(m map[string]string) map[string]string {
	c := make(map[string]string, len(m)+4)
	for k, v := range m {
		c[k] = v
	}
	return c
}

func speakerKind(role string) string {
	if role == "assistant" || role == "tool" {
		return KindOther
	}
	return KindPerson
}

// speakerLabel names who said a part: the name if there is one, else the
// capitalised role ("User", "Assistant").
func speakerLabel(p chunk.Part) string {
	if p.Name != "" {
		return p.Name
	}
	if p.Role == "" {
		return "User"
	}
	r, n := utf8.DecodeRuneInString(p.Role)
	return string(unicode.ToUpper(r)) + p.Role[n:]
}

// fact builds the fact for one sentence or clause of part p.
func (o *Offline) fact(text string, p chunk.Part, label string, finder *entityFinder, in Input) Fact {
	first, second := persons(text)
	f := Fact{
		Text:         text,
		FactType:     World,
		MentionedAt:  p.Timestamp,
		Context:      in.Context,
		Tags:         slices.Clone(in.Tags),
		MessageIndex: p.MessageIndex,
	}
	subjectless := !first && startsWithAction(text)
	if first || second || subjectless {
		f.Text = label + ": " + text
	}
	if first || subjectless {
		f.FactType = Experience
		if p.Name != "" {
			f.Entities = append(f.Entities, Entity{Name: p.Name, Kind: speakerKind(p.Role)})
		}
	}
	f.Entities = finder.find(text, f.Entities)
	if !p.Timestamp.IsZero() {
		setOccurred(&f, timeparse.Parse(text, p.Timestamp))
	}
	return f
}

// setOccurred takes the first time expression: in a sentence that names
// several, the first usually dates the event and the later ones qualify it.
func setOccurred(f *Fact, spans []timeparse.Span) {
	if len(spans) == 0 {
		return
	}
	s, e := spans[0].Start, spans[0].End
	f.OccurredStart, f.OccurredEnd = &s, &e
}

// persons reports whether s speaks in the first person (I, me, my, we, 我,
// 咱) or addresses the listener (you, 你, 您). "I" must be upper case and
// "us" lower case, to keep "US" the country out.
func persons(s string) (first, second bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x80 {
			r, sz := utf8.DecodeRuneInString(s[i:])
			switch r {
			case '我', '咱', '俺':
				first = true
			case '你', '您':
				second = true
			}
			i += sz
			continue
		}
		if !isASCIILetter(c) {
			i++
			continue
		}
		j := i
		for j < len(s) && isASCIILetter(s[j]) {
			j++
		}
		switch w := s[i:j]; w {
		case "I", "us":
			first = true
		default:
			switch strings.ToLower(w) {
			case "me", "my", "mine", "myself", "we", "our", "ours", "ourselves":
				first = true
			case "you", "your", "yours", "yourself", "yourselves":
				second = true
			}
		}
		i = j
	}
	return first, second
}

// actionStarts open sentences whose subject is the speaker but left out,
// as chat often does: "Booked the flight.", "Went hiking", 已经订好了.
var actionStarts = map[string]bool{
	"booked": true, "scheduled": true, "created": true, "sent": true, "added": true,
	"saved": true, "updated": true, "reminded": true, "set": true, "went": true,
	"got": true, "had": true, "visited": true, "moved": true, "started": true,
	"finished": true, "bought": true, "met": true, "tried": true, "just": true,
	"finally": true, "been": true, "spent": true, "ordered": true, "cancelled": true,
	"canceled": true, "done": true, "completed": true, "learned": true, "watched": true,
}

var cnActionStarts = []string{"已经", "已", "刚刚", "刚", "正在", "打算", "准备", "去了", "想要"}

func startsWithAction(s string) bool {
	for _, c := range cnActionStarts {
		if strings.HasPrefix(s, c) {
			return true
		}
	}
	return actionStarts[strings.ToLower(firstWord(s))]
}
