package recallapi

import (
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/memstream/memstream/resolve"
	"github.com/memstream/memstream/store"
)

func (s *Server) listEntities(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	q, err := textParam(r, "q")
	if err != nil {
		return err
	}
	limit, offset, err := page(r)
	if err != nil {
		return err
	}
	items, total, err := s.d.Store.ListEntities(r.Context(), bank, q, limit, offset)
	if err != nil {
		return err
	}
	views := make([]entityView, len(items))
	for i, e := range items {
		views[i] = viewEntity(e)
	}
	writeJSON(w, http.StatusOK, list[entityView]{Items: views, Total: total, Limit: limit, Offset: offset})
	return nil
}

// entityView is Hindsight's EntityListItem with memstream's kind, aliases
// and merge pointer.
type entityView struct {
	store.Entity
	CanonicalName string         `json:"canonical_name"`
	Metadata      map[string]any `json:"metadata"`
}

func viewEntity(e store.Entity) entityView {
	if e.Aliases == nil {
		e.Aliases = []string{}
	}
	return entityView{Entity: e, CanonicalName: e.Name, Metadata: map[string]any{"kind": e.Kind}}
}

// entitiesGraph is Hindsight's EntityGraphResponse: the most mentioned
// entities as nodes, and how often two are mentioned together as edges.
func (s *Server) entitiesGraph(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	limit, err := intParam(r, "limit", 1000, 1, 5000)
	if err != nil {
		return err
	}
	minCount, err := intParam(r, "min_count", 1, 1, 1<<20)
	if err != nil {
		return err
	}
	ents, total, err := s.d.Store.ListEntities(r.Context(), bank, "", limit, 0)
	if err != nil {
		return err
	}
	ids := make([]uuid.UUID, len(ents))
	nodes := make([]any, len(ents))
	for i, e := range ents {
		ids[i] = e.ID
		nodes[i] = map[string]any{"data": map[string]any{"id": e.ID.String(), "label": e.Name, "mentionCount": e.MentionCount,
			"color": "#42a5f5", "kind": e.Kind}}
	}
	pairs, err := s.d.Store.EntityCooccurrence(r.Context(), bank, ids, minCount)
	if err != nil {
		return err
	}
	edges := make([]any, len(pairs))
	for i, p := range pairs {
		edges[i] = map[string]any{"data": map[string]any{"id": p.A.String() + "-" + p.B.String(), "source": p.A.String(), "target": p.B.String(),
			"linkType": "cooccurrence", "weight": p.Count, "color": "#ffd700", "lineStyle": "solid", "lastCooccurred": p.LastTogther}}
	}
	writeJSON(w, http.StatusOK, map[string]any{"nodes": nodes, "edges": edges, "total_entities": total, "total_edges": len(edges), "limit": limit})
	return nil
}

func (s *Server) getEntity(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "entity_id")
	if err != nil {
		return err
	}
	e, err := s.d.Store.GetEntity(r.Context(), bank, id)
	if err != nil {
		return err
	}
	obs, err := s.d.Store.EntityObservations(r.Context(), bank, []uuid.UUID{id}, 50)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		entityView
		Memories     []store.EntityMemory      `json:"memories"`
		Observations []store.EntityObservation `json:"observations"`
	}{viewEntity(e.Entity), e.Memories, nonNil(obs[id])})
	return nil
}

type mergeBody struct {
	Into string `json:"into"`
}

// mergeEntity serves POST …/entities/{id}/merge {into}: the path entity is
// merged away into the body's.
func (s *Server) mergeEntity(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "entity_id")
	if err != nil {
		return err
	}
	var body mergeBody
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if body.Into == "" {
		return badRequest("into", "into is required: the id of the entity to merge into")
	}
	into, err := uuid.Parse(body.Into)
	if err != nil {
		return badRequest("into", "into must be a UUID")
	}
	e, err := s.d.Store.MergeEntity(r.Context(), bank, id, into)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "merged": id, "into": e})
	return nil
}

type aliasBody struct {
	Alias string `json:"alias"`
}

// addEntityAlias serves POST …/entities/{id}/aliases {alias}. The alias is
// stored under every lookup key the resolver derives from it, so later
// mentions in any of its forms (word order, pinyin, nickname) resolve to
// this entity.
func (s *Server) addEntityAlias(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "entity_id")
	if err != nil {
		return err
	}
	var body aliasBody
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	alias := strings.TrimSpace(body.Alias)
	if alias == "" {
		return badRequest("alias", "alias is required")
	}
	if len(alias) > 200 {
		return badRequest("alias", "alias must be at most 200 bytes")
	}
	keys := resolve.Keys(alias)
	if len(keys) == 0 {
		return badRequest("alias", "alias has no letters or digits to match on")
	}
	e, err := s.d.Store.AddEntityAlias(r.Context(), bank, id, alias, keys)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, e)
	return nil
}
