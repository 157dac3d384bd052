package pipeline

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/memstream/memstream/resolve"
	"github.com/memstream/memstream/store"
)

// CandidateSource loads a bank's entities that may match given lookup keys
// or names.
type CandidateSource interface {
	EntityCandidates(ctx context.Context, bankID string, keys, names []string) ([]store.EntityCandidate, error)
}

// StoreResolver resolves mentions against the bank's entities in Postgres
// using the resolve package's scoring. Entities first seen in the batch
// become candidates for the rest of it, so "张伟 … Zhang Wei" in one batch
// still resolves to one entity. New entity ids derive from bank, kind and
// normalised name, so a replay finds the same ids.
type StoreResolver struct {
	src CandidateSource
	r   *resolve.Resolver
}

// StoreResolverDeps are where a StoreResolver finds a bank's entities.
type StoreResolverDeps struct {
	Source CandidateSource
}

// NewStoreResolver builds a resolver with the default thresholds. It has
// nothing to configure, so it takes deps alone.
func NewStoreResolver(deps StoreResolverDeps) (*StoreResolver, error) {
	if deps.Source == nil {
		return nil, fmt.Errorf("pipeline: store resolver: nil source")
	}
	src := deps.Source
	r, err := resolve.New(resolve.Config{})
	if err != nil {
		return nil, err
	}
	return &StoreResolver{src: src, r: r}, nil
}

type localEntity struct {
	id      uuid.UUID
	name    string
	kind    string
	aliases map[string]bool
}

// Resolve implements EntityResolver.
func (s *StoreResolver) Resolve(ctx context.Context, bankID string, ms []Mention) ([]Resolved, error) {
	var keys, names []string
	for _, m := range ms {
		keys = append(keys, resolve.Keys(m.Name)...)
		names = append(names, strings.ToLower(m.Name))
	}
	rows, err := s.src.EntityCandidates(ctx, bankID, keys, names)
	if err != nil {
		return nil, err
	}
	var ents []*localEntity
	var cands []resolve.Candidate
	byID := map[uuid.UUID]int{}
	add := func(e *localEntity, c resolve.Candidate) int {
		c.ID = int64(len(ents))
		ents = append(ents, e)
		cands = append(cands, c)
		byID[e.id] = len(ents) - 1
		return len(ents) - 1
	}
	for _, r := range rows {
		e := &localEntity{id: r.ID, name: r.Name, kind: r.Kind, aliases: map[string]bool{}}
		for _, a := range r.Aliases {
			e.aliases[a] = true
		}
		add(e, resolve.Candidate{Name: r.Name, Kind: r.Kind, Aliases: r.Aliases, LastSeen: r.LastSeen, Mentions: r.Mentions})
	}
	out := make([]Resolved, len(ms))
	for i, m := range ms {
		idx := -1
		if match, ok := s.r.Resolve(resolve.Mention{Name: m.Name, Kind: m.Kind, At: m.At, CoMentions: m.CoMentions}, cands); ok {
			idx = int(match.ID)
		}
		if idx < 0 {
			norm := resolve.Normalize(m.Name)
			if norm == "" {
				continue
			}
			id := store.DeriveID(bankID, "entity", m.Kind, norm)
			if j, ok := byID[id]; ok {
				idx = j
			} else {
				idx = add(&localEntity{id: id, name: m.Name, kind: m.Kind, aliases: map[string]bool{}},
					resolve.Candidate{Name: m.Name, Kind: m.Kind, LastSeen: m.At, Mentions: 1})
			}
		}
		e := ents[idx]
		res := Resolved{EntityID: e.id, Canonical: e.name, Kind: e.kind}
		if !e.aliases[m.Name] {
			e.aliases[m.Name] = true
			cands[idx].Aliases = append(cands[idx].Aliases, m.Name)
		}
		// Record every lookup key of the surface form, so the next
		// mention in this form is an exact alias hit.
		for _, k := range resolve.Keys(m.Name) {
			res.Aliases = append(res.Aliases, store.AliasRow{Key: k, Alias: m.Name})
		}
		res.Names = append(res.Names, e.name)
		for a := range e.aliases {
			if a != e.name {
				res.Names = append(res.Names, a)
			}
		}
		out[i] = res
	}
	return out, nil
}
