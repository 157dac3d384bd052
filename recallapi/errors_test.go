package recallapi

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestContentionIsABusyAnswer checks that a write which lost to
// concurrent writers more often than the store retries gets a 503 with
// Retry-After, never a 500: nothing was changed, and a retry is safe.
func TestContentionIsABusyAnswer(t *testing.T) {
	t.Parallel()
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, code := range []string{"40P01", "40001", "55P03"} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodDelete, "/v1/default/banks/b/memories", nil)
		s.writeError(w, r, fmt.Errorf("clear memories bank b: %w", &pgconn.PgError{Code: code, Message: "deadlock detected"}))
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" || !strings.Contains(w.Body.String(), `"busy"`) {
			t.Errorf("SQLSTATE %s: %d, Retry-After %q, body %s; want 503, 1, code busy", code, w.Code, w.Header().Get("Retry-After"), w.Body)
		}
	}
}
