package consolidate

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/memstream/memstream/text"
)

// OfflineConfig tunes the offline rules. Similarity thresholds are levels
// on the embedder's own scale (Candidate.Level, simscale): 0 is as similar
// as two unrelated statements of one speaker usually are, 1 as similar as
// two restatements usually are, whatever the embedder's raw cosines.
type OfflineConfig struct {
	// SameTopic is the level from which a fact restates an observation
	// (repetition folding).
	SameTopic float64
	// Related is the lower level from which a fact restates an
	// observation when it also shares at least TermOverlap of its words.
	Related     float64
	TermOverlap float64
	// RetractRelated is the level from which a retraction ("I no longer
	// …") targets an observation, with RetractOverlap of shared words as
	// the alternative.
	RetractRelated float64
	RetractOverlap float64
}

// WithDefaults fills unset thresholds. SameTopic is above a typical
// restatement (1.5), because a restatement with other words is still a
// different statement often enough; Related is just below one (0.9) and
// needs shared words too.
func (c OfflineConfig) WithDefaults() OfflineConfig {
	if c.SameTopic == 0 {
		c.SameTopic = 1.5
	}
	if c.Related == 0 {
		c.Related = 0.9
	}
	if c.TermOverlap == 0 {
		c.TermOverlap = 0.6
	}
	if c.RetractRelated == 0 {
		c.RetractRelated = 1.2
	}
	if c.RetractOverlap == 0 {
		c.RetractOverlap = 0.6
	}
	return c
}

func (c OfflineConfig) validate() error {
	for _, f := range []struct {
		name string
		v    float64
		max  float64
	}{{"same_topic", c.SameTopic, 10}, {"related", c.Related, 10}, {"term_overlap", c.TermOverlap, 1},
		{"retract_related", c.RetractRelated, 10}, {"retract_overlap", c.RetractOverlap, 1}} {
		if f.v <= 0 || f.v > f.max {
			return fmt.Errorf("consolidate offline config %s: %v not in (0, %v]", f.name, f.v, f.max)
		}
	}
	if c.Related > c.SameTopic {
		return fmt.Errorf("consolidate offline config related: %v above same_topic %v", c.Related, c.SameTopic)
	}
	return nil
}

// Offline is the deterministic adjudicator (llm.provider offline):
//
//  1. A retraction ("I no longer …", "actually I don't …", "不再 …")
//     invalidates the observation it takes back, and the retraction itself
//     becomes an observation.
//  2. A knowledge update — same subject and attribute ("lives in", "moved
//     to", "住在", "搬到", "works at", "favorite X is") with a different value,
//     stated at or after the observation's newest evidence — replaces the
//     observation's text; the old text goes to the history and both
//     periods' evidence stays. The same value folds as repetition.
//  3. A restatement of an observation (a similarity level, or a moderate
//     level with a shared vocabulary) folds into it as evidence.
//  4. Anything else creates a new observation from the fact's text.
type Offline struct {
	cfg OfflineConfig
	// features caches what the rules read from a text: the same
	// observations are candidates of fact after fact, and their regular
	// expressions cost more than the rest of a decision.
	features *lru.Cache[string, textFeatures]
}

// textFeatures is what the rules read from one text.
type textFeatures struct {
	terms      map[string]bool
	slot       slotValue
	hasSlot    bool
	retraction bool
}

// featureCacheSize bounds the texts whose features are kept.
const featureCacheSize = 50_000

func (o *Offline) feat(text string) textFeatures {
	if f, ok := o.features.Get(text); ok {
		return f
	}
	f := textFeatures{terms: contentTerms(text), retraction: isRetraction(text)}
	f.slot, f.hasSlot = parseSlot(text)
	o.features.Add(text, f)
	return f
}

// NewOffline returns the offline adjudicator.
func NewOffline(cfg OfflineConfig) (*Offline, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cache, err := lru.New[string, textFeatures](featureCacheSize)
	if err != nil {
		return nil, err
	}
	return &Offline{cfg: cfg, features: cache}, nil
}

// BatchSize is 1: each fact must see what the previous fact changed.
func (o *Offline) BatchSize() int { return 1 }

// Adjudicate applies the rules to each fact in turn.
func (o *Offline) Adjudicate(ctx context.Context, facts []FactCandidates) (Decision, error) {
	var d Decision
	for _, fc := range facts {
		if err := ctx.Err(); err != nil {
			return d, err
		}
		o.decide(fc, &d)
	}
	return d, nil
}

func (o *Offline) decide(fc FactCandidates, d *Decision) {
	f := fc.Fact
	src := []uuid.UUID{f.ID}
	ff := o.feat(f.Text)
	terms, slot, hasSlot := ff.terms, ff.slot, ff.hasSlot
	meta := map[string]string{}
	if hasSlot {
		meta["slot"], meta["value"] = slot.key(), slot.Value
	}
	create := Create{Text: f.Text, SourceFactIDs: src, Metadata: meta, Reason: "new knowledge: no observation of this scope covers it"}

	if ff.retraction {
		var best *Candidate
		for i := range fc.Candidates {
			c := &fc.Candidates[i]
			cf := o.feat(c.Text)
			if cf.retraction {
				continue
			}
			if c.Level >= o.cfg.RetractRelated || overlap(terms, cf.terms) >= o.cfg.RetractOverlap {
				if best == nil || c.Similarity > best.Similarity {
					best = c
				}
			}
		}
		if best != nil {
			d.Deletes = append(d.Deletes, Delete{ObservationID: best.ID, SourceFactIDs: src,
				Reason: fmt.Sprintf("retracted by a later statement: %q", f.Text)})
			create.Reason = fmt.Sprintf("records the retraction of observation %s", best.ID)
		}
		d.Creates = append(d.Creates, create)
		return
	}

	if hasSlot {
		for _, c := range fc.Candidates {
			if c.Metadata["slot"] != slot.key() {
				continue
			}
			if c.Metadata["value"] == slot.Value {
				d.Updates = append(d.Updates, Update{ObservationID: c.ID, SourceFactIDs: src, Metadata: meta,
					Reason: fmt.Sprintf("repetition: %s %s is still %q", slot.Subject, slot.Attribute, slot.Value)})
				return
			}
			if f.When().Before(c.LastEvidence) {
				// An older statement of another value: it documents the
				// past, not the present; keep it as weaker evidence.
				d.Updates = append(d.Updates, Update{ObservationID: c.ID, SourceFactIDs: src, Relevance: 0.5,
					Reason: fmt.Sprintf("earlier value of %s %s (%q), older than the current evidence", slot.Subject, slot.Attribute, slot.Value)})
				return
			}
			d.Updates = append(d.Updates, Update{ObservationID: c.ID, Text: f.Text, SourceFactIDs: src, Metadata: meta,
				Reason: fmt.Sprintf("knowledge update: %s %s changed from %q to %q", slot.Subject, slot.Attribute, c.Metadata["value"], slot.Value)})
			return
		}
	}

	var best *Candidate
	for i := range fc.Candidates {
		c := &fc.Candidates[i]
		cf := o.feat(c.Text)
		if cf.retraction {
			// "No longer X" and "X" are close in words and opposite in
			// meaning: never fold one into the other.
			continue
		}
		if cf.hasSlot && hasSlot && cf.slot.key() == slot.key() && cf.slot.Value != slot.Value {
			continue
		}
		if c.Level >= o.cfg.SameTopic || (c.Level >= o.cfg.Related && overlap(terms, cf.terms) >= o.cfg.TermOverlap) {
			if best == nil || c.Similarity > best.Similarity {
				best = c
			}
		}
	}
	if best != nil {
		d.Updates = append(d.Updates, Update{ObservationID: best.ID, SourceFactIDs: src, Relevance: float32(best.Similarity),
			Reason: fmt.Sprintf("repetition: restates the observation (similarity %.2f, level %.2f)", best.Similarity, best.Level)})
		return
	}
	d.Creates = append(d.Creates, create)
}

// retractionCues mark a statement that takes something back. They are
// matched on the lower-cased text with word boundaries for English.
var (
	retractionEN = regexp.MustCompile(`\b(no longer|not any ?more|any ?more|stopped|quit|gave up|actually,? (?:i|she|he|they|we) (?:don't|do not|doesn't|does not|didn't|did not|never)|never again)\b`)
	retractionZH = regexp.MustCompile(`不再|再也不|已经不|不.{0,4}了$|戒了`)
)

func isRetraction(text string) bool {
	t := strings.ToLower(text)
	return retractionEN.MatchString(t) || retractionZH.MatchString(strings.TrimRight(t, "。！!. "))
}

// cueWords are dropped before comparing vocabularies so that "I no longer
// drink coffee" and "I drink coffee" share all their words.
var cueWords = map[string]bool{"longer": true, "anymore": true, "more": true, "stopped": true, "quit": true,
	"actually": true, "don": true, "doesn": true, "didn": true, "never": true, "again": true, "gave": true}

// contentTerms are a text's informative words (crudely stemmed) and CJK
// bigrams.
func contentTerms(s string) map[string]bool {
	out := map[string]bool{}
	for _, t := range text.QueryTerms(s) {
		if cueWords[t] {
			continue
		}
		out[stemWord(t)] = true
	}
	return out
}

func stemWord(w string) string {
	for _, suf := range []string{"ing", "ed", "es", "s"} {
		if len(w) > len(suf)+2 && strings.HasSuffix(w, suf) {
			return strings.TrimSuffix(w, suf)
		}
	}
	return w
}

// overlap is |a∩b| / min(|a|,|b|): a short restatement of a long
// observation still overlaps fully.
func overlap(a, b map[string]bool) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	n := 0
	for t := range a {
		if b[t] {
			n++
		}
	}
	return float64(n) / float64(min(len(a), len(b)))
}

// slotValue is a subject|attribute = value statement.
type slotValue struct {
	Subject, Attribute, Value string
}

func (s slotValue) key() string { return s.Subject + "|" + s.Attribute }

type slotPattern struct {
	re   *regexp.Regexp
	attr string
}

// slotPatterns recognise the attributes whose values replace each other.
// Each has groups subj and val; "favorite" also captures the attribute.
var slotPatterns = []slotPattern{
	{regexp.MustCompile(`(?i)^(?P<subj>.+?)\s+(?:(?:now|currently|still|also|actually)\s+)?(?:live|lives|lived|living|reside|resides|resided|am living|is living|was living|are living)\s+in\s+(?P<val>.+)$`), "residence"},
	{regexp.MustCompile(`(?i)^(?P<subj>.+?)\s+(?:(?:has|have|had|just|recently|finally|then)\s+)*(?:moved|moves|relocated|relocates|is moving|am moving)\s+(?:from\s+.+?\s+)?to\s+(?P<val>.+)$`), "residence"},
	{regexp.MustCompile(`(?i)^(?P<subj>.+?)\s+(?:(?:now|currently|still)\s+)?(?:works|worked|work|is working|am working|was working)\s+(?:at|for)\s+(?P<val>.+)$`), "employer"},
	{regexp.MustCompile(`(?i)^(?P<subj>.+?)(?:'s|’s)\s+(?:favou?rite)\s+(?P<attr>[\p{L}\s]+?)\s+is\s+(?P<val>.+)$`), "favorite"},
	{regexp.MustCompile(`(?i)^(?P<subj>my|our)\s+(?:favou?rite)\s+(?P<attr>[\p{L}\s]+?)\s+is\s+(?P<val>.+)$`), "favorite"},
	{regexp.MustCompile(`^(?P<subj>.+?)(?:现在|目前|一直|还)?(?:住在|居住在|住於)(?P<val>.+)$`), "residence"},
	{regexp.MustCompile(`^(?P<subj>.+?)(?:已经|刚|刚刚)?(?:搬到|搬去|搬家到|迁到|搬到了)(?P<val>.+)$`), "residence"},
	{regexp.MustCompile(`^(?P<subj>.+?)(?:现在|目前)?在(?P<val>.+?)(?:工作|上班)了?$`), "employer"},
}

var (
	leadingTime = regexp.MustCompile(`(?i)^(?:(?:last|this|next)\s+\w+|in\s+\d{4}|now|currently|today|yesterday|recently|actually|so|and|but|then)\s*,?\s+`)
	valueCut    = regexp.MustCompile(`(?i)\s+(?:now|since|for|with|last|this|next|in\s+\d{4}|because|when|after|before|and|but)\b.*$`)
	zhTail      = regexp.MustCompile(`[了啦呢吧啊]+$`)
)

// parseSlot recognises "subject attribute value" statements. The subject
// is normalised so that "I", "my" and "我" agree; values compare
// case-insensitively.
func parseSlot(text string) (slotValue, bool) {
	t := strings.TrimSpace(text)
	if i := strings.IndexAny(t, ",.;!?，。；！？\n"); i > 0 {
		// Past the first clause, a statement tends to add reasons, not the
		// value ("I moved to Shanghai, because of work").
		t = t[:i]
	}
	for _, p := range slotPatterns {
		m := p.re.FindStringSubmatch(t)
		if m == nil {
			continue
		}
		subj, val, attr := "", "", p.attr
		for i, name := range p.re.SubexpNames() {
			switch name {
			case "subj":
				subj = m[i]
			case "val":
				val = m[i]
			case "attr":
				attr = p.attr + " " + strings.ToLower(strings.TrimSpace(m[i]))
			}
		}
		subj = normSubject(subj)
		val = normValue(val)
		if subj == "" || val == "" {
			continue
		}
		return slotValue{Subject: subj, Attribute: attr, Value: val}, true
	}
	return slotValue{}, false
}

func normSubject(s string) string {
	s = strings.TrimSpace(s)
	// Facts carry their speaker: "Alice: I live in …", "Alice: Big news: I
	// moved to …". A first-person subject after the speaker is the speaker.
	if i := strings.Index(s, ":"); i > 0 {
		speaker := strings.ToLower(strings.TrimSpace(s[:i]))
		last := s[strings.LastIndex(s, ":")+1:]
		switch strings.ToLower(strings.TrimSpace(last)) {
		case "i", "me", "my", "we", "our", "我", "我们", "我现在", "我目前", "我已经":
			if speaker == "user" || speaker == "assistant" {
				return "user"
			}
			return speaker
		}
		s = strings.TrimSpace(last)
	}
	for {
		n := leadingTime.ReplaceAllString(s, "")
		if n == s {
			break
		}
		s = n
	}
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "i", "me", "my", "we", "our", "user", "the user", "我", "我们":
		return "user"
	}
	for _, zh := range []string{"我现在", "我目前", "我已经", "我们", "我"} {
		if s == zh {
			return "user"
		}
	}
	if len(strings.Fields(s)) > 4 {
		return ""
	}
	return s
}

func normValue(v string) string {
	v = strings.TrimSpace(v)
	v = valueCut.ReplaceAllString(v, "")
	v = zhTail.ReplaceAllString(v, "")
	v = strings.TrimSpace(strings.ToLower(v))
	v = strings.TrimPrefix(v, "the ")
	return strings.Trim(v, " \"'")
}
