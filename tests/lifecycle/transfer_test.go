package lifecycle

import (
	"strings"
	"testing"
	"time"
)

// A bank copied (export, then import: a clone) keeps when its memories
// were said: the copies' facts are dated as the originals, not on the day
// of the import.
func TestImportKeepsOriginalTimestamps(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	s := newSite(t)
	p := s.serve("only", "ingest,api,worker")
	const src, dst = "/v1/default/banks/dated", "/v1/default/banks/dated-copy"
	p.must(t, 200, "POST", src+"/memories", `{"async":false,"items":[{"content":"Frank adopted a grey cat named Pixel.","document_id":"pets","timestamp":"2024-01-15T10:00:00Z"}]}`)
	mentioned := func(bank string) []string {
		t.Helper()
		out := p.must(t, 200, "GET", bank+"/memories/list?type=world", "")
		items, _ := out["items"].([]any)
		var at []string
		for _, it := range items {
			m, _ := it.(map[string]any)
			s, _ := m["mentioned_at"].(string)
			at = append(at, s)
		}
		return at
	}
	orig := mentioned(src)
	if len(orig) == 0 || !strings.HasPrefix(orig[0], "2024-01-15") {
		t.Fatalf("original facts mentioned at %v, want 2024-01-15", orig)
	}
	op := p.must(t, 202, "POST", src+"/clone?target_bank_id=dated-copy", "")["operation_id"].(string)
	waitFor(t, "the clone", 2*time.Minute, func() bool {
		_, o := p.call(t, "GET", src+"/operations/"+op, "")
		return o["status"] == "completed"
	})
	got := mentioned(dst)
	if len(got) != len(orig) {
		t.Fatalf("copy holds %d facts, the original %d", len(got), len(orig))
	}
	for _, at := range got {
		if !strings.HasPrefix(at, "2024-01-15") {
			t.Fatalf("imported facts mentioned at %v, want the original 2024-01-15 (original %v)", got, orig)
		}
	}
}
