package eval

import (
	"strings"
	"time"
)

// Parts of the benchmark. The tuning part is what recall work may be
// measured and debugged against; the held-out part was written separately,
// with its own vocabulary, phrasings, names and situations, and is never
// looked at question by question: its misses are not written out, and it
// is the part reported and gated. A heuristic fitted to the tuning
// templates shows up as a gap between the two.
//
// The dialogue part is a third, other shape of data (two named people
// chatting, questions about either of them in the third person). Like the
// held-out part it is reported and never tuned against. The dialogue-tuning
// part is its tuning counterpart: the same mechanics with a vocabulary of
// its own, whose misses are written out like the tuning part's. Both are
// generated only when asked for, so the default parts' files stay what
// they were.
//
// The second held-out part (heldout-2) is a LongMemEval-shaped part like
// the held-out one, written later and blind, by a writer who had seen no
// result: a clean test set nobody has tuned against. It is reported like
// the held-out part, its misses are never written out, and it too is
// generated only when asked for.
//
// The third held-out part (heldout-3) is another such part, written blind
// in the same way by another writer, with a vocabulary of its own: one
// more clean test set nobody has tuned against, plumbed like heldout-2.
const (
	PartTuning         = "tuning"
	PartHeldOut        = "heldout"
	PartDialogue       = "dialogue"
	PartDialogueTuning = "dialogue-tuning"
	PartHeldOut2       = "heldout-2"
	PartHeldOut3       = "heldout-3"
)

// Parts lists the default parts in report order: what Generate makes when
// GenConfig.Parts is empty.
var Parts = []string{PartHeldOut, PartTuning}

// AllParts lists every part in report order.
// The second and third held-out parts come after the default ones, so that --part
// all starts with their files as they are.
var AllParts = []string{PartHeldOut, PartTuning, PartHeldOut2, PartHeldOut3, PartDialogue, PartDialogueTuning}

// Tunable reports whether a part may be read question by question: its
// misses and lost evidence turns are written out.
func Tunable(part string) bool { return part == PartTuning || part == PartDialogueTuning }

// partNames lists every part for an error message.
func partNames() string { return strings.Join(AllParts, ", ") }

// IsPart reports whether p names a part.
func IsPart(p string) bool {
	for _, x := range AllParts {
		if x == p {
			return true
		}
	}
	return false
}

// vocabulary is everything a part's conversations are made of. The
// generator's code (session layout, hard negatives, timing) is shared;
// every word a turn or a question says comes from a vocabulary.
type vocabulary struct {
	part string
	// bankPrefix starts the part's bank ids, so a bank's part can be read
	// off its id.
	bankPrefix string
	// start is when the part's first sessions begin, unless the config
	// names a start.
	start time.Time
	// stream is or'ed into each bank's PCG stream, so that parts with the
	// same bank numbers draw differently.
	stream uint64

	userNames, otherPeople []string
	ssu, ssa, ssp, multi   []factTemplate
	update, abstention     []factTemplate
	// temporal plants k temporal-reasoning questions; the kinds and their
	// wording belong to the part.
	temporal func(g *bankGen, k int)

	zhUserNames  []string
	zhPeople     []person
	crossLingual []zhTemplate

	fillerEN, fillerZH [][2]string
	// fillerSlots fill the {key} placeholders of filler turns.
	fillerSlots    map[string][]string
	acksEN, acksZH []string
}

// heldOut2Stream sets the bit of a second held-out bank's PCG stream that
// no other part's stream has (the dialogue parts' are bits 48 and 49).
const heldOut2Stream = uint64(1) << 50

// heldOut3Stream is the bit of a third held-out bank's PCG stream.
const heldOut3Stream = uint64(1) << 51

func vocabularyOf(part string) (*vocabulary, bool) {
	switch part {
	case PartTuning:
		return &tuningVocabulary, true
	case PartHeldOut:
		return &heldOutVocabulary, true
	case PartHeldOut2:
		return &heldOut2Vocabulary, true
	case PartHeldOut3:
		return &heldOut3Vocabulary, true
	}
	return nil, false
}
