package recallapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

const (
	defaultPageLimit = 100
	maxPageLimit     = 1000
	maxQueryParam    = 1000
)

// pathUUID reads a path parameter that must be a UUID, naming it in the
// error.
func pathUUID(r *http.Request, name string) (uuid.UUID, error) {
	raw := r.PathValue(name)
	id, err := uuid.Parse(raw)
	if err != nil {
		return uuid.Nil, badRequest(name, name+" must be a UUID")
	}
	return id, nil
}

// bankAndUUID reads the bank id and a UUID path parameter, the two that
// every route on one object of a bank starts with.
func (s *Server) bankAndUUID(r *http.Request, name string) (string, uuid.UUID, error) {
	bank, err := s.bankID(r)
	if err != nil {
		return "", uuid.Nil, err
	}
	id, err := pathUUID(r, name)
	return bank, id, err
}

// page reads limit (1–1000, default 100) and offset (≥ 0) from the query
// string.
func page(r *http.Request) (limit, offset int, err error) {
	return pageWithin(r, defaultPageLimit, maxPageLimit)
}

// pageWithin reads limit (1–max, default def) and offset (≥ 0) from the
// query string, for routes whose Hindsight bounds differ from page's.
func pageWithin(r *http.Request, def, max int) (limit, offset int, err error) {
	limit = def
	q := r.URL.Query()
	if v := q.Get("limit"); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 1 || n > max {
			return 0, 0, badRequest("limit", fmt.Sprintf("limit must be an integer from 1 to %d", max))
		}
		limit = n
	}
	if v := q.Get("offset"); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 0 {
			return 0, 0, badRequest("offset", "offset must be a non-negative integer")
		}
		offset = n
	}
	return limit, offset, nil
}

// textParam reads a free-text query parameter with a length bound.
func textParam(r *http.Request, name string) (string, error) {
	v := r.URL.Query().Get(name)
	if len(v) > maxQueryParam || !utf8.ValidString(v) {
		return "", badRequest(name, name+" must be valid UTF-8 of at most 1000 bytes")
	}
	return v, nil
}

// enumParam reads a query parameter that must be one of allowed (or
// empty).
func enumParam(r *http.Request, name string, allowed ...string) (string, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return "", nil
	}
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	msg := name + " must be one of"
	for i, a := range allowed {
		if i > 0 {
			msg += ","
		}
		msg += " " + a
	}
	return "", badRequest(name, msg)
}

// list is the Hindsight-style page envelope.
type list[T any] struct {
	Items  []T `json:"items"`
	Total  int `json:"total"`
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

// boolParam reads a true/false query parameter.
func boolParam(r *http.Request, name string, def bool) (bool, error) {
	switch v := r.URL.Query().Get(name); strings.ToLower(v) {
	case "":
		return def, nil
	case "true", "1", "yes":
		return true, nil
	case "false", "0", "no":
		return false, nil
	}
	return false, badRequest(name, name+" must be true or false")
}

// queryList reads a repeated query parameter (tags=a&tags=b), as
// Hindsight's generated clients send lists.
func queryList(r *http.Request, name string) []string {
	var out []string
	for _, v := range r.URL.Query()[name] {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }
