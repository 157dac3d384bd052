package consolidate

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

// Candidate is an existing observation that may concern a fact, with the
// rankings that proposed it.
type Candidate struct {
	store.ObservationCandidate
	// Via names the rankings that returned it: semantic, keyword, slot.
	Via []string
	// Level is Similarity on the embedder's own scale (simscale.Scale):
	// 0 for a typical unrelated statement, 1 for a typical restatement.
	// Rules compare it, never the raw cosine.
	Level float64
}

// FactCandidates is one fact to adjudicate with its fused candidates,
// best first.
type FactCandidates struct {
	Fact       store.PendingFact
	Candidates []Candidate
}

// Decision is what an adjudicator decided for a batch of facts. It mirrors
// the JSON the openai provider must return. A fact that no entry names is
// consolidated without a change (it holds nothing durable).
type Decision struct {
	Creates []Create `json:"creates"`
	Updates []Update `json:"updates"`
	Deletes []Delete `json:"deletes"`
}

// Create makes a new observation from the source facts.
type Create struct {
	Text          string      `json:"text"`
	SourceFactIDs []uuid.UUID `json:"source_fact_ids"`
	Reason        string      `json:"reason"`
	// Metadata is stored on the observation (the offline rules keep the
	// subject|attribute slot and its value there). Not part of the LLM
	// schema.
	Metadata map[string]string `json:"-"`
}

// Update adds the source facts as evidence to an observation and, when
// Text is set and differs, replaces its text (the old text goes to the
// history). An Update without new text is repetition folding.
type Update struct {
	ObservationID uuid.UUID         `json:"observation_id"`
	Text          string            `json:"text"`
	SourceFactIDs []uuid.UUID       `json:"source_fact_ids"`
	Reason        string            `json:"reason"`
	Metadata      map[string]string `json:"-"`
	// Relevance of the source facts as evidence (0 means 1).
	Relevance float32 `json:"-"`
}

// Delete invalidates an observation with a reason; nothing is removed.
type Delete struct {
	ObservationID uuid.UUID   `json:"observation_id"`
	Reason        string      `json:"reason"`
	SourceFactIDs []uuid.UUID `json:"source_fact_ids,omitempty"`
}

// Adjudicator decides what a batch of facts does to the observations.
type Adjudicator interface {
	// Adjudicate decides for the given facts. Observation ids in the
	// decision must come from the facts' candidates.
	Adjudicate(ctx context.Context, facts []FactCandidates) (Decision, error)
	// BatchSize is how many facts one Adjudicate call takes. The offline
	// rules take one, so that each fact sees the observations the previous
	// one created.
	BatchSize() int
}

// validate checks a decision against the batch it answers: every fact and
// observation id it names must belong to the batch, texts must be present,
// and the source facts of one new observation must share a scope.
func (d Decision) validate(batch []FactCandidates) error {
	facts := map[uuid.UUID]store.PendingFact{}
	// cands maps an observation to the facts it is a candidate of: an
	// observation may only take evidence from facts of its own scope.
	cands := map[uuid.UUID]map[uuid.UUID]bool{}
	for _, fc := range batch {
		facts[fc.Fact.ID] = fc.Fact
		for _, c := range fc.Candidates {
			if cands[c.ID] == nil {
				cands[c.ID] = map[uuid.UUID]bool{}
			}
			cands[c.ID][fc.Fact.ID] = true
		}
	}
	checkSources := func(what string, ids []uuid.UUID, required bool) error {
		if required && len(ids) == 0 {
			return fmt.Errorf("%s: source_fact_ids is empty", what)
		}
		for _, id := range ids {
			if _, ok := facts[id]; !ok {
				return fmt.Errorf("%s: source fact %s is not in the batch", what, id)
			}
		}
		return nil
	}
	for i, c := range d.Creates {
		what := fmt.Sprintf("creates[%d]", i)
		if c.Text == "" {
			return fmt.Errorf("%s: text is empty", what)
		}
		if err := checkSources(what, c.SourceFactIDs, true); err != nil {
			return err
		}
		scope := scopeKey(facts[c.SourceFactIDs[0]].Tags)
		for _, id := range c.SourceFactIDs[1:] {
			if scopeKey(facts[id].Tags) != scope {
				return fmt.Errorf("%s: source facts have different tag scopes", what)
			}
		}
	}
	for i, u := range d.Updates {
		what := fmt.Sprintf("updates[%d]", i)
		if cands[u.ObservationID] == nil {
			return fmt.Errorf("%s: observation %s is not a candidate of the batch", what, u.ObservationID)
		}
		if err := checkSources(what, u.SourceFactIDs, true); err != nil {
			return err
		}
		for _, id := range u.SourceFactIDs {
			if !cands[u.ObservationID][id] {
				return fmt.Errorf("%s: fact %s is outside the scope of observation %s", what, id, u.ObservationID)
			}
		}
	}
	for i, del := range d.Deletes {
		what := fmt.Sprintf("deletes[%d]", i)
		if cands[del.ObservationID] == nil {
			return fmt.Errorf("%s: observation %s is not a candidate of the batch", what, del.ObservationID)
		}
		if del.Reason == "" {
			return fmt.Errorf("%s: reason is empty", what)
		}
		if err := checkSources(what, del.SourceFactIDs, false); err != nil {
			return err
		}
	}
	return nil
}
