package recallapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/memstream/memstream/internal/pgtest"
)

// TestCreateRacingBankDeleteIs404 creates a webhook, a directive and a
// mental model while their bank is being deleted (the delete locks the bank
// after the create ensured it, store TestCreatesRacingBankDelete): the
// answer is a 404 naming the bank, not the 500 the insert's foreign-key
// violation was.
func TestCreateRacingBankDeleteIs404(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	for _, c := range []struct{ path, table, body string }{
		{"/webhooks", "webhooks", `{"url":"http://x.invalid/","event_types":["retain.completed"]}`},
		{"/directives", "directives", `{"name":"d","content":"c"}`},
		{"/mental-models", "mental_models", `{"name":"m","source_query":"q"}`},
	} {
		bank := "doomed-" + uuid.NewString()[:8]
		if err := e.st.EnsureBank(t.Context(), bank); err != nil {
			t.Fatal(err)
		}
		var r resp
		err := pgtest.HeldDelete(t, pgtest.DB(e.st), `SELECT 1 FROM banks WHERE id = $1 FOR UPDATE`, `DELETE FROM banks WHERE id = $1`, bank,
			`INSERT INTO `+c.table+`%`, func() error {
				r = e.call("POST", "/v1/default/banks/"+bank+c.path, c.body, "")
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		if r.status != http.StatusNotFound || !strings.Contains(r.errMessage(), bank) {
			t.Errorf("POST %s in a bank deleted meanwhile: %d %s; want 404 naming %s", c.path, r.status, r.raw2(), bank)
		}
	}
}
