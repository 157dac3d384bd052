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
	writeJSON(w, http.StatusOK, list[store.Entity]{Items: items, Total: total, Limit: limit, Offset: offset})
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
	writeJSON(w, http.StatusOK, e)
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
