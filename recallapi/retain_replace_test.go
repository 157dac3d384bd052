package recallapi

import (
	"context"
	"slices"
	"testing"
)

// update_mode "replace" happens where the new content is stored: a retain
// whose produce fails leaves the document whole (before, it was deleted
// first and left empty), the retry replaces it, and the request's other
// items of the document are added, not replaced by each other.
func TestRetainReplaceNeverLeavesTheDocumentHalfDeleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{persist: true})
	const path = "/v1/default/banks/b1/memories"
	chunks := func() []string {
		t.Helper()
		cs, _, err := e.st.ListChunks(context.Background(), "b1", "notes", 100, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			out = append(out, c.Text)
		}
		slices.Sort(out)
		return out
	}
	if r := e.call("POST", path, `{"items":[{"content":"Alice lives in Porto","document_id":"notes"}]}`, ""); r.status != 200 {
		t.Fatalf("first retain: %d %s", r.status, r.raw)
	}
	body := `{"items":[{"content":"Alice lives in Lisbon","document_id":"notes","update_mode":"replace"},
		{"content":"Alice works at the port","document_id":"notes","update_mode":"replace"}]}`
	e.pub.failNext.Store(true)
	if r := e.call("POST", path, body, ""); r.status != 503 {
		t.Fatalf("replace with the broker down: %d %s", r.status, r.raw)
	}
	if got := chunks(); !slices.Equal(got, []string{"Alice lives in Porto"}) {
		t.Fatalf("after a failed replace the document holds %v, want it whole", got)
	}
	if r := e.call("POST", path, body, ""); r.status != 200 {
		t.Fatalf("replace: %d %s", r.status, r.raw)
	}
	if got := chunks(); !slices.Equal(got, []string{"Alice lives in Lisbon", "Alice works at the port"}) {
		t.Fatalf("after the replace the document holds %v", got)
	}
}
