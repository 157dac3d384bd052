package recallapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/memstream/memstream/store"
)

const (
	defaultModelMaxTokens = 2048
	maxModelName          = 200
	maxModelQuery         = 8000
	maxModelContent       = 1 << 20
	maxTags               = 100
	maxTagLen             = 200
)

type mentalModelCreate struct {
	Name        string   `json:"name"`
	SourceQuery string   `json:"source_query"`
	Content     string   `json:"content"`
	Tags        []string `json:"tags"`
	MaxTokens   *int     `json:"max_tokens"`
}

type mentalModelPatch struct {
	Name        *string   `json:"name"`
	SourceQuery *string   `json:"source_query"`
	Content     *string   `json:"content"`
	Tags        *[]string `json:"tags"`
	MaxTokens   *int      `json:"max_tokens"`
}

func validateTags(field string, tags []string) error {
	if len(tags) > maxTags {
		return badRequest(field, fmt.Sprintf("%s has more than %d tags", field, maxTags))
	}
	for i, t := range tags {
		if t == "" || len(t) > maxTagLen {
			f := fmt.Sprintf("%s[%d]", field, i)
			return badRequest(f, f+" must be 1 to 200 bytes")
		}
	}
	return nil
}

func validateModelFields(name, query, content *string, tags *[]string, maxTokens *int) error {
	if name != nil {
		if n := strings.TrimSpace(*name); n == "" || len(n) > maxModelName {
			return badRequest("name", "name is required and at most 200 bytes")
		}
	}
	if query != nil {
		if q := strings.TrimSpace(*query); q == "" || len(q) > maxModelQuery {
			return badRequest("source_query", "source_query is required and at most 8000 bytes")
		}
	}
	if content != nil && len(*content) > maxModelContent {
		return badRequest("content", "content must be at most 1 MiB")
	}
	if tags != nil {
		if err := validateTags("tags", *tags); err != nil {
			return err
		}
	}
	if maxTokens != nil && (*maxTokens < 1 || *maxTokens > 1_000_000) {
		return badRequest("max_tokens", "max_tokens must be between 1 and 1000000")
	}
	return nil
}

func (s *Server) listMentalModels(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	items, err := s.d.Store.ListMentalModels(r.Context(), bank)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
	return nil
}

func (s *Server) createMentalModel(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body mentalModelCreate
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if err := validateModelFields(&body.Name, &body.SourceQuery, &body.Content, &body.Tags, body.MaxTokens); err != nil {
		return err
	}
	m := store.MentalModel{BankID: bank, Name: strings.TrimSpace(body.Name), SourceQuery: strings.TrimSpace(body.SourceQuery),
		Content: body.Content, Tags: body.Tags, MaxTokens: defaultModelMaxTokens}
	if body.MaxTokens != nil {
		m.MaxTokens = *body.MaxTokens
	}
	out, err := s.d.Store.CreateMentalModel(r.Context(), m)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// getMentalModel is served from the LRU cache; see modelCache for why a
// cached copy is never older than the last committed write.
func (s *Server) getMentalModel(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "mental_model_id")
	if err != nil {
		return err
	}
	m, ok, gen := s.models.get(bank, id.String())
	if !ok {
		if m, err = s.d.Store.GetMentalModel(r.Context(), bank, id); err != nil {
			return err
		}
		s.models.put(m, gen)
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}

func (s *Server) patchMentalModel(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "mental_model_id")
	if err != nil {
		return err
	}
	var body mentalModelPatch
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if body == (mentalModelPatch{}) {
		return badRequest("", "the body changes nothing: give at least one of name, source_query, content, tags, max_tokens")
	}
	if err := validateModelFields(body.Name, body.SourceQuery, body.Content, body.Tags, body.MaxTokens); err != nil {
		return err
	}
	p := store.MentalModelPatch{Content: body.Content, Tags: body.Tags, MaxTokens: body.MaxTokens}
	if body.Name != nil {
		n := strings.TrimSpace(*body.Name)
		p.Name = &n
	}
	if body.SourceQuery != nil {
		q := strings.TrimSpace(*body.SourceQuery)
		p.SourceQuery = &q
	}
	out, err := s.d.Store.UpdateMentalModel(r.Context(), bank, id, p)
	if err != nil {
		return err
	}
	// The NOTIFY reaches this replica too, but only after a round trip;
	// evicting here gives the writer read-your-writes at once.
	s.models.invalidate(bank, id.String(), "local")
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteMentalModel(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "mental_model_id")
	if err != nil {
		return err
	}
	if err := s.d.Store.DeleteMentalModel(r.Context(), bank, id); err != nil {
		return err
	}
	s.models.invalidate(bank, id.String(), "local")
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "id": id})
	return nil
}

// refreshMentalModel regenerates the model through the injected refresher
// and then announces the change, since the refresher writes through its
// own code path.
func (s *Server) refreshMentalModel(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "mental_model_id")
	if err != nil {
		return err
	}
	if s.d.Refresher == nil {
		return &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable",
			Message: "mental model refresh is not available on this server (no refresher is configured)"}
	}
	if _, err := s.d.Store.GetMentalModel(r.Context(), bank, id); err != nil {
		return err
	}
	refreshErr := s.d.Refresher.Refresh(r.Context(), bank, id.String())
	// Evict and announce even after a failed refresh: it may have written
	// part of its work before failing.
	s.models.invalidate(bank, id.String(), "local")
	if err := s.d.Store.NotifyMentalModel(r.Context(), bank, id); err != nil {
		return err
	}
	if refreshErr != nil {
		return refreshErr
	}
	out, err := s.d.Store.GetMentalModel(r.Context(), bank, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
