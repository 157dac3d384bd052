package recallapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/memstream/memstream/store"
)

// apiError is the JSON error body: {"error": {"code", "message", "field"}}.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func (e *apiError) Error() string { return e.Message }

func badRequest(field, msg string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "bad_request", Message: msg, Field: field}
}

func notFound(msg string) *apiError {
	return &apiError{Status: http.StatusNotFound, Code: "not_found", Message: msg}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
	case errors.Is(err, store.ErrNotFound):
		ae = notFound("not found")
	case errors.Is(err, store.ErrConflict):
		ae = &apiError{Status: http.StatusConflict, Code: "conflict", Message: err.Error()}
	default:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		ae = &apiError{Status: http.StatusInternalServerError, Code: "internal", Message: "internal error"}
	}
	writeJSON(w, ae.Status, map[string]any{"error": ae})
}

// decodeBody reads a JSON body, enforcing the content type and size limit.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !isJSON(ct) {
		return &apiError{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type", Message: "Content-Type must be application/json"}
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &apiError{Status: http.StatusRequestEntityTooLarge, Code: "too_large", Message: "request body exceeds http.max_body_bytes"}
		}
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return badRequest(ute.Field, "field "+ute.Field+" has the wrong type")
		}
		return badRequest("", "invalid JSON body: "+err.Error())
	}
	return nil
}

func isJSON(ct string) bool {
	for i := 0; i < len(ct); i++ {
		if ct[i] == ';' {
			ct = ct[:i]
			break
		}
	}
	return ct == "application/json" || ct == "application/json " || ct == "text/json"
}
