package pipeline

import (
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

// buildRecords resolves the batch's entities (one call per bank) and turns
// each item into a store.EventRecord. bad[i] is set for items that cannot
// be persisted.
func (p *Pipeline) buildRecords(batch []*item) ([]store.EventRecord, []*event.Error) {
	recs := make([]store.EventRecord, len(batch))
	bad := make([]*event.Error, len(batch))

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
		var out []Resolved
		err := p.retry("resolve", func() error {
			var err error
			out, err = p.deps.Resolver.Resolve(p.ctx, bank, ms)
			if err == nil && len(out) != len(ms) {
				err = fmt.Errorf("resolver returned %d results for %d mentions", len(out), len(ms))
			}
			return err
		})
		if err != nil {
			// Entity resolution is an enrichment: store the facts without
			// entity links rather than lose them.
			p.log.Warn("entity resolution failed; persisting without entities", "bank", bank, "error", err)
			continue
		}
		for k, r := range refs[bank] {
			resolved[[4]int{r.item, r.chunk, r.fact, r.ent}] = out[k]
		}
	}

	for i, it := range batch {
		ev := it.ev
		rec := store.EventRecord{
			BankID: ev.BankID, EventKey: ev.Key, DocumentID: ev.DocumentID,
			Topic: it.msg.Record.Topic, Partition: it.msg.Record.Partition, Offset: it.msg.Record.Offset,
			Context: ev.Context, Tags: ev.Tags, Metadata: ev.Metadata, Audit: it.audit,
		}
		entities := map[uuid.UUID]*store.EntityRow{}
		var entOrder []uuid.UUID
		for ci, c := range it.chunks {
			chunkID := store.DeriveID(ev.BankID, ev.Key, "chunk", fmt.Sprint(ci))
			rec.Chunks = append(rec.Chunks, store.ChunkRow{ID: chunkID, Index: ci, Text: c.Text, Speaker: c.Speaker, StartedAt: c.Timestamp})
			factIDs := make([]uuid.UUID, len(it.facts[ci]))
			for fi, f := range it.facts[ci] {
				idem := IdemKey(ev.Key, f.MessageIndex, ci, fi)
				factIDs[fi] = store.DeriveID(ev.BankID, idem)
			}
			for fi, f := range it.facts[ci] {
				if err := f.Validate(); err != nil {
					bad[i] = event.Errorf(event.ClassExtractFailed, "extract", "fact %d of chunk %d: %v", fi, ci, err)
					break
				}
				var entIDs []uuid.UUID
				var names []string
				for ei := range f.Entities {
					r, ok := resolved[[4]int{i, ci, fi, ei}]
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
					ID: factIDs[fi], FactType: f.FactType, Text: f.Text, Context: f.Context,
					Embedding: it.embs[ci][fi], SearchAux: text.Aux(f.Text, names),
					OccurredStart: f.OccurredStart, OccurredEnd: f.OccurredEnd, MentionedAt: f.MentionedAt,
					Tags: tags, Metadata: meta, ChunkID: chunkID, MessageIndex: f.MessageIndex,
					IdemKey: IdemKey(ev.Key, f.MessageIndex, ci, fi), EntityIDs: dedupeIDs(entIDs),
				})
				for _, c := range f.Causal {
					if c.TargetIndex < 0 || c.TargetIndex >= len(factIDs) || c.TargetIndex == fi {
						continue
					}
					rec.Links = append(rec.Links, store.LinkRow{From: factIDs[fi], To: factIDs[c.TargetIndex], Type: c.Relation, Weight: 1})
				}
			}
			if bad[i] != nil {
				break
			}
		}
		for _, id := range entOrder {
			rec.Entities = append(rec.Entities, *entities[id])
		}
		recs[i] = rec
	}
	return recs, bad
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
