package recallapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/memstream/memstream/reflect"
	"github.com/memstream/memstream/store"
)

type reflectBody struct {
	Query          string           `json:"query"`
	Budget         string           `json:"budget"`
	MaxTokens      *int             `json:"max_tokens"`
	Tags           []string         `json:"tags"`
	ResponseSchema json.RawMessage  `json:"response_schema"`
	Disposition    *dispositionBody `json:"disposition"`
}

// dispositionBody has pointers so that a trait left out takes the bank's
// value instead of an invalid zero.
type dispositionBody struct {
	Skepticism *int `json:"skepticism"`
	Literalism *int `json:"literalism"`
	Empathy    *int `json:"empathy"`
}

func (s *Server) reflectQuery(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body reflectBody
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	req, err := reflectRequest(bank, body)
	if err != nil {
		return err
	}
	if s.d.Reflector == nil {
		return &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable",
			Message: "reflect is not available on this server (no reflector is configured)"}
	}
	if body.Disposition != nil {
		if err := s.fillDisposition(r, bank, body.Disposition, req.Disposition); err != nil {
			return err
		}
	}
	resp, err := s.d.Reflector.Reflect(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// reflectRequest validates the body. Traits the caller gave are checked
// here; the rest are filled from the bank later.
func reflectRequest(bank string, b reflectBody) (reflect.Request, error) {
	req := reflect.Request{BankID: bank, Query: strings.TrimSpace(b.Query), Budget: b.Budget, MaxTokens: 4096, Tags: b.Tags}
	if req.Query == "" {
		return req, badRequest("query", "query is required")
	}
	if len(req.Query) > 8000 {
		return req, badRequest("query", "query is longer than 8000 bytes")
	}
	if err := budgetAndTokens(b.Budget, b.MaxTokens, b.Tags, &req.Budget, &req.MaxTokens); err != nil {
		return req, err
	}
	if len(b.ResponseSchema) > 0 && string(b.ResponseSchema) != "null" {
		if err := json.Unmarshal(b.ResponseSchema, &req.ResponseSchema); err != nil || req.ResponseSchema == nil {
			return req, badRequest("response_schema", "response_schema must be a JSON object (a JSON Schema)")
		}
	}
	if d := b.Disposition; d != nil {
		req.Disposition = &reflect.Disposition{}
		for _, t := range []struct {
			field string
			v     *int
			dst   *int
		}{
			{"disposition.skepticism", d.Skepticism, &req.Disposition.Skepticism},
			{"disposition.literalism", d.Literalism, &req.Disposition.Literalism},
			{"disposition.empathy", d.Empathy, &req.Disposition.Empathy},
		} {
			if t.v == nil {
				continue
			}
			if *t.v < 1 || *t.v > 5 {
				return req, badRequest(t.field, t.field+" must be an integer from 1 to 5")
			}
			*t.dst = *t.v
		}
	}
	return req, nil
}

// fillDisposition completes a partial disposition override with the
// bank's own traits (3 for a bank without a profile).
func (s *Server) fillDisposition(r *http.Request, bank string, given *dispositionBody, d *reflect.Disposition) error {
	if given.Skepticism != nil && given.Literalism != nil && given.Empathy != nil {
		return nil
	}
	base := store.Bank{Skepticism: 3, Literalism: 3, Empathy: 3}
	b, err := s.d.Store.GetBank(r.Context(), bank)
	switch {
	case err == nil:
		base = b
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	if given.Skepticism == nil {
		d.Skepticism = base.Skepticism
	}
	if given.Literalism == nil {
		d.Literalism = base.Literalism
	}
	if given.Empathy == nil {
		d.Empathy = base.Empathy
	}
	return nil
}
