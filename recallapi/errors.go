package recallapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/reflect"
	"github.com/memstream/memstream/store"
)

// apiError is the JSON error body: {"error": {"code", "message", "field"},
// "detail": message}.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	// RetryAfter, when set, is sent as the Retry-After header (seconds).
	RetryAfter time.Duration `json:"-"`
}

func (e *apiError) Error() string { return e.Message }

// body is the error's JSON answer: memstream's {"error": {…}}, and the
// message again as Hindsight's `detail`, which Hindsight's clients show
// (the TypeScript client's HindsightError.details, for one).
func (e *apiError) body() map[string]any {
	return map[string]any{"error": e, "detail": e.Message}
}

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
	var rqe *recall.RequestError
	var fqe *reflect.RequestError
	var bnf store.BankNotFoundError
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &bnf):
		// A write whose bank was deleted under it: the delete won.
		ae = notFound("bank " + bnf.BankID + " does not exist")
	case errors.Is(err, store.ErrNotFound):
		ae = notFound("not found")
	case errors.Is(err, store.ErrConflict):
		ae = &apiError{Status: http.StatusConflict, Code: "conflict", Message: conflictMessage(err)}
	case errors.Is(err, store.ErrInvalidMerge):
		ae = &apiError{Status: http.StatusConflict, Code: "conflict", Message: "cannot merge: an entity cannot merge into itself, and neither side may already be merged away", Field: "into"}
	case errors.As(err, &rqe):
		ae = badRequest(rqe.Field, rqe.Field+": "+rqe.Message)
	case errors.As(err, &fqe):
		ae = badRequest(fqe.Field, fqe.Field+": "+fqe.Message)
	case errors.Is(err, recall.ErrAllArmsFailed):
		ae = &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "every retrieval arm failed; try again"}
	case pgCode(err) == "22021" || pgCode(err) == "22P05" || pgCode(err) == "54000":
		// Text PostgreSQL cannot store or index (a NUL, an untranslatable
		// character, a value past an index's size): the client's input, not
		// a server fault.
		ae = badRequest("", "the request holds text the database cannot store (a NUL character, invalid encoding or a value too large to index)")
	case errors.Is(err, context.DeadlineExceeded):
		ae = &apiError{Status: http.StatusServiceUnavailable, Code: "timeout", Message: "the request timed out"}
	case store.IsContention(err):
		// Lost to background writers more often than the store retries:
		// nothing was changed, and the same request may simply be sent again.
		s.log.Warn("request lost to concurrent writers", "method", r.Method, "path", r.URL.Path, "error", err)
		ae = &apiError{Status: http.StatusServiceUnavailable, Code: "busy", Message: "the bank is busy with concurrent writes; nothing was changed, try again", RetryAfter: time.Second}
	default:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		ae = &apiError{Status: http.StatusInternalServerError, Code: "internal", Message: "internal error"}
	}
	if ae.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="memstream"`)
	}
	if ae.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(max(1, ae.RetryAfter.Round(time.Second)/time.Second))))
	}
	writeJSON(w, ae.Status, ae.body())
}

// conflictMessage keeps constraint names out of client answers, except
// the one a client can act on.
func conflictMessage(err error) string {
	if strings.Contains(err.Error(), "mental_models_bank_id_name_key") {
		return "a mental model with this name already exists in the bank"
	}
	if strings.Contains(err.Error(), "merged into") {
		return "the entity was merged into another; add aliases to the survivor"
	}
	return "the request conflicts with existing data"
}

// decodeBody reads one JSON object from the body. It enforces the content
// type (415), the size limit (413), valid UTF-8 and a single value (400).
// Unknown fields are ignored, as Hindsight's request models ignore them;
// a known field of the wrong type, or a string holding a NUL character
// (PostgreSQL text cannot store one), is a 400 naming the field.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !isJSON(ct) {
		return &apiError{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type",
			Message: "Content-Type must be application/json, not " + strconv.Quote(ct)}
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &apiError{Status: http.StatusRequestEntityTooLarge, Code: "too_large",
			Message: fmt.Sprintf("request body exceeds http.max_body_bytes (%d bytes)", limit)}
	}
	if err != nil {
		return badRequest("", "could not read the body: "+err.Error())
	}
	return decodeJSON(raw, v)
}

// decodeJSON is decodeBody's check of bytes already read.
func decodeJSON(raw []byte, v any) error {
	if !utf8.Valid(raw) {
		return badRequest("", "the body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	err := dec.Decode(v)
	if err == nil {
		// A second value after the object is a malformed request, not
		// something to ignore silently.
		var extra json.RawMessage
		if err2 := dec.Decode(&extra); !errors.Is(err2, io.EOF) {
			err = err2
			if err == nil {
				return badRequest("", "the body must hold exactly one JSON object")
			}
		}
	}
	if err == nil {
		if field, ok := findNUL(v); ok {
			return badRequest(field, field+" contains a NUL character")
		}
		return nil
	}
	var ute *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF):
		return badRequest("", "a JSON body is required")
	case errors.As(err, &ute):
		field := ute.Field
		if field == "" {
			return badRequest("", "the body must be a JSON object")
		}
		return badRequest(field, "field "+field+" must be of type "+jsonType(ute.Type.Kind().String()))
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("", "invalid JSON body: "+err.Error())
	}
	var fe *fieldError
	if errors.As(err, &fe) {
		return badRequest(fe.field, fe.msg)
	}
	return badRequest("", "invalid JSON body: "+err.Error())
}

// fieldError is returned by the UnmarshalJSON methods of request types, so
// a value that parses as JSON but breaks the field's rule names the field.
type fieldError struct{ field, msg string }

func (e *fieldError) Error() string { return e.msg }

// jsonType names a Go kind the way a JSON client thinks of it.
func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct":
		return "object"
	case "ptr":
		return "the documented type"
	}
	return "number"
}

// isJSON accepts application/json (with parameters such as charset) and
// the +json structured suffix.
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// pgCode is the SQLSTATE of a PostgreSQL error in err's chain, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

var errorsIs = errors.Is
