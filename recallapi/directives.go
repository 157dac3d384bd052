package recallapi

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

const (
	maxDirectiveName    = 200
	maxDirectiveContent = 16 << 10
)

type directiveCreate struct {
	Name     string  `json:"name"`
	Content  string  `json:"content"`
	Priority int     `json:"priority"`
	IsActive *bool   `json:"is_active"`
	Tags     tagList `json:"tags"`
}

type directivePatch struct {
	Name     *string  `json:"name"`
	Content  *string  `json:"content"`
	Priority *int     `json:"priority"`
	IsActive *bool    `json:"is_active"`
	Tags     *tagList `json:"tags"`
}

func checkDirective(name, content *string, tags *tagList) error {
	if name != nil {
		if n := strings.TrimSpace(*name); n == "" || len(n) > maxDirectiveName {
			return badRequest("name", "name is required and at most 200 bytes")
		}
	}
	if content != nil {
		if c := strings.TrimSpace(*content); c == "" || len(c) > maxDirectiveContent {
			return badRequest("content", "content is required and at most 16 KiB")
		}
	}
	if tags != nil {
		return validateTags("tags", *tags)
	}
	return nil
}

func (s *Server) createDirective(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body directiveCreate
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if err := checkDirective(&body.Name, &body.Content, &body.Tags); err != nil {
		return err
	}
	d := store.Directive{ID: uuid.New(), BankID: bank, Name: strings.TrimSpace(body.Name), Content: strings.TrimSpace(body.Content),
		Priority: body.Priority, IsActive: body.IsActive == nil || *body.IsActive, Tags: body.Tags}
	out, err := s.d.Store.CreateDirective(r.Context(), d)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getDirective(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "directive_id")
	if err != nil {
		return err
	}
	d, err := s.d.Store.GetDirective(r.Context(), bank, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

func (s *Server) listDirectives(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	limit, offset, err := page(r)
	if err != nil {
		return err
	}
	activeOnly, err := boolParam(r, "active_only", false)
	if err != nil {
		return err
	}
	items, total, err := s.d.Store.ListDirectives(r.Context(), bank, activeOnly, maxPageLimit, 0)
	if err != nil {
		return err
	}
	// Tag filters apply to the directives' own tags, as Hindsight's do.
	if tags := queryList(r, "tags"); len(tags) > 0 {
		mode := r.URL.Query().Get("tags_match")
		if mode == "" {
			mode = "any"
		}
		if !validTagsMatch[mode] {
			return badRequest("tags_match", "tags_match must be any, all, any_strict, all_strict or exact")
		}
		items = slices.DeleteFunc(items, func(d store.Directive) bool { return !tagsMatch(d.Tags, tags, mode) })
		total = len(items)
	}
	writeJSON(w, http.StatusOK, list[store.Directive]{Items: pageOf(items, limit, offset), Total: total, Limit: limit, Offset: offset})
	return nil
}

func (s *Server) patchDirective(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "directive_id")
	if err != nil {
		return err
	}
	var body directivePatch
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if err := checkDirective(body.Name, body.Content, body.Tags); err != nil {
		return err
	}
	p := store.DirectivePatch{Name: trimPtr(body.Name), Content: trimPtr(body.Content), Priority: body.Priority, IsActive: body.IsActive}
	if body.Tags != nil {
		t := []string(*body.Tags)
		p.Tags = &t
	}
	out, err := s.d.Store.UpdateDirective(r.Context(), bank, id, p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteDirective(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "directive_id")
	if err != nil {
		return err
	}
	if err := s.d.Store.DeleteDirective(r.Context(), bank, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": "directive deleted", "deleted_count": 1})
	return nil
}

// applicableDirectives are the active directives reflect follows, tag
// scoped as Hindsight scopes them: untagged directives always apply, tagged
// ones when the request's tags match (all of them with
// apply_all_directives).
func (s *Server) applicableDirectives(ctx context.Context, bank string, body ReflectRequest) ([]store.Directive, error) {
	all, err := s.d.Store.ActiveDirectives(ctx, bank)
	if err != nil {
		return nil, err
	}
	if body.ApplyAllDirectives {
		return all, nil
	}
	return slices.DeleteFunc(all, func(d store.Directive) bool {
		if len(d.Tags) == 0 {
			return false
		}
		for _, t := range body.Tags {
			if slices.Contains(d.Tags, t) {
				return false
			}
		}
		return true
	}), nil
}

func trimPtr(p *string) *string {
	if p == nil {
		return nil
	}
	t := strings.TrimSpace(*p)
	return &t
}

// pageOf cuts one page out of a list filtered in memory.
func pageOf[T any](items []T, limit, offset int) []T {
	if offset >= len(items) {
		return []T{}
	}
	return items[offset:min(len(items), offset+limit)]
}
