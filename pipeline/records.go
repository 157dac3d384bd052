package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/text"
)

// Mention is one entity mention to resolve.
type Mention struct {
	Name       string
	Kind       string
	At         time.Time
	CoMentions []string // other names in the same message
}

// Resolved is the canonical entity a mention maps to.
type Resolved struct {
	EntityID  uuid.UUID
	Canonical string
	Kind      string
	// Names are the canonical name and known aliases, for search_aux.
	Names   []string
	Aliases []store.AliasRow // aliases to record for this entity
}

// IdemKey is the idempotency key of one fact: event key, message index,
// chunk index and fact index, so a replay derives the same key.
func IdemKey(eventKey string, msgIdx, chunkIdx, factIdx int) string {
	return fmt.Sprintf("%s#m%d#c%d#f%d", eventKey, msgIdx, chunkIdx, factIdx)
}

// chunkIDOf is the id of chunk ci (event-wide) of an event: its row's and
// its facts' chunk_id, and the extraction call's metadata.chunk_ids.
func chunkIDOf(bankID, eventKey string, ci int) uuid.UUID {
	return store.DeriveID(bankID, eventKey, "chunk", fmt.Sprint(ci))
}

// buildRecords resolves the batch's entities (one call per bank) and turns
// each item into a store.EventRecord in out. A resolution failure fails the
// whole call, so the batch stalls and is retried: facts are never stored
// without their entities. Items with invalid facts are named in the
// returned *BatchError.
func (p *Pipeline) buildRecords(ctx context.Context, batch []*item, out map[*item][]store.EventRecord) error {
	bad := newBatchError()

	// Gather mentions per bank so resolution is one round trip per bank.
	type ref struct{ item, chunk, fact, ent int }
	mentions := map[string][]Mention{}
	refs := map[string][]ref{}
	for i, it := range batch {
		for ci, fs := range it.facts {
			for fi, f := range fs {
				names := make([]string, len(f.Entities))
				for ei, e := range f.Entities {
					names[ei] = e.Name
				}
				for ei, e := range f.Entities {
					bank := it.ev.BankID
					mentions[bank] = append(mentions[bank], Mention{Name: e.Name, Kind: e.Kind, At: f.MentionedAt, CoMentions: names})
					refs[bank] = append(refs[bank], ref{i, ci, fi, ei})
				}
			}
		}
	}
	resolved := map[[4]int]Resolved{}
	for bank, ms := range mentions {
		res, err := p.deps.Resolver.Resolve(ctx, bank, ms)
		if err == nil && len(res) != len(ms) {
			err = fmt.Errorf("resolver returned %d results for %d mentions", len(res), len(ms))
		}
		if err != nil {
			return fmt.Errorf("resolve entities of bank %s: %w", bank, err)
		}
		for k, r := range refs[bank] {
			resolved[[4]int{r.item, r.chunk, r.fact, r.ent}] = res[k]
		}
	}

	for i, it := range batch {
		var recs []store.EventRecord
		var badErr error
		for _, pt := range it.parts {
			rec, err := p.partRecord(it, i, pt, resolved)
			if err != nil {
				badErr = err
				break
			}
			recs = append(recs, rec)
		}
		if badErr != nil {
			bad.fail(it, badErr)
			continue
		}
		out[it] = recs
	}
	return bad.orNil()
}

// partRecord builds the store.EventRecord of one part of an item.
func (p *Pipeline) partRecord(it *item, i int, pt part, resolved map[[4]int]Resolved) (store.EventRecord, error) {
	ev := it.ev
	rec := store.EventRecord{
		BankID: ev.BankID, EventKey: pt.key, UnitOf: pt.unitOf, DocumentID: ev.DocumentID,
		Topic: it.msg.Record.Topic, Partition: it.msg.Record.Partition, Offset: it.msg.Record.Offset,
		Context: ev.Context, Tags: ev.Tags, Metadata: ev.Metadata,
	}
	if pt.audit {
		// One record of the event carries what is done once per event.
		rec.Audit = it.audit
		rec.ReplaceDocument = ev.UpdateMode == "replace"
	}
	entities := map[uuid.UUID]*store.EntityRow{}
	var entOrder []uuid.UUID
	for uci := pt.lo; uci < pt.hi; uci++ {
		c := it.chunks[uci]
		ci := it.chunkIdx[uci]
		chunkID := chunkIDOf(ev.BankID, ev.Key, ci)
		if pt.writeChunk {
			rec.Chunks = append(rec.Chunks, store.ChunkRow{ID: chunkID, Index: ci, Text: c.Text, Speaker: c.Speaker, StartedAt: c.Timestamp})
		}
		facts := it.facts[uci]
		factIDs := make([]uuid.UUID, len(facts))
		for fi, f := range facts {
			factIDs[fi] = store.DeriveID(ev.BankID, IdemKey(ev.Key, f.MessageIndex, ci, fi))
		}
		flo, fhi := 0, len(facts)
		if pt.factHi > 0 {
			flo, fhi = pt.factLo, pt.factHi
		}
		for fi := flo; fi < fhi; fi++ {
			f := facts[fi]
			if err := f.Validate(); err != nil {
				return rec, event.Errorf(event.ClassExtractFailed, "extract", "fact %d of chunk %d: %v", fi, ci, err)
			}
			var entIDs []uuid.UUID
			var names []string
			for ei := range f.Entities {
				r, ok := resolved[[4]int{i, uci, fi, ei}]
				if !ok || r.EntityID == uuid.Nil {
					continue
				}
				entIDs = append(entIDs, r.EntityID)
				names = append(names, r.Names...)
				row := entities[r.EntityID]
				if row == nil {
					row = &store.EntityRow{ID: r.EntityID, Name: r.Canonical, Kind: r.Kind, Seen: f.MentionedAt}
					entities[r.EntityID] = row
					entOrder = append(entOrder, r.EntityID)
				}
				row.Mentions++
				if f.MentionedAt.After(row.Seen) {
					row.Seen = f.MentionedAt
				}
				row.Aliases = append(row.Aliases, r.Aliases...)
			}
			meta := map[string]string{}
			for k, v := range ev.Metadata {
				meta[k] = v
			}
			meta["message_index"] = fmt.Sprint(f.MessageIndex)
			if f.MessageIndex < len(ev.Messages) {
				if n := ev.Messages[f.MessageIndex].Name; n != "" {
					meta["speaker"] = n
				}
				meta["role"] = ev.Messages[f.MessageIndex].Role
			}
			tags := f.Tags
			if tags == nil {
				tags = ev.Tags
			}
			rec.Facts = append(rec.Facts, store.FactRow{
				ID: factIDs[fi], FactType: f.FactType, Text: f.Text, Context: f.Context, ReplyTo: f.ReplyTo,
				Embedding: it.embs[uci][fi], SearchAux: text.Aux(f.Text, names),
				OccurredStart: f.OccurredStart, OccurredEnd: f.OccurredEnd, MentionedAt: f.MentionedAt,
				Tags: tags, Metadata: meta, ChunkID: chunkID, MessageIndex: f.MessageIndex,
				IdemKey: IdemKey(ev.Key, f.MessageIndex, ci, fi), EntityIDs: dedupeIDs(entIDs),
			})
		}
		// A causal link goes with the part of its later fact, so that both
		// ends exist when it is written (a chunk's facts may span parts).
		for fi := 0; fi < fhi; fi++ {
			for _, c := range facts[fi].Causal {
				t := c.TargetIndex
				if t < 0 || t >= len(factIDs) || t == fi || max(fi, t) < flo || max(fi, t) >= fhi {
					continue
				}
				rec.Links = append(rec.Links, store.LinkRow{From: factIDs[fi], To: factIDs[t], Type: c.Relation, Weight: 1})
			}
		}
	}
	for _, id := range entOrder {
		rec.Entities = append(rec.Entities, *entities[id])
	}
	return rec, nil
}

func dedupeIDs(ids []uuid.UUID) []uuid.UUID {
	seen := map[uuid.UUID]bool{}
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
