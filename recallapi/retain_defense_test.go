package recallapi

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// The pipeline gates an item's context, tags and metadata as well as its
// content; retain must refuse a block in any of them up front (422 naming
// the field and the label) instead of answering 200 for an event the
// pipeline will dead-letter.
func TestRetainBlockedInContextTagsAndMetadata(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{persist: true})
	if r := e.call("PUT", "/v1/default/banks/b1", `{"defense_policy":{"default":"block"}}`, ""); r.status != 200 {
		t.Fatalf("set policy: %d %s", r.status, r.raw)
	}
	// A fake AWS key id, generated at run time.
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 5))
	b := []byte("AKIA")
	for range 16 {
		b = append(b, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"[rng.IntN(32)])
	}
	key := string(b)
	for _, c := range []struct{ item, field string }{
		{`{"content":"harmless","context":"ops, key id ` + key + `"}`, "items[0].context"},
		{`{"content":"harmless","tags":["ops","key:` + key + `"]}`, "items[0].tags[1]"},
		{`{"content":"harmless","metadata":{"a":"fine","pasted":"id ` + key + `"}}`, "items[0].metadata.pasted"},
	} {
		r := e.call("POST", "/v1/default/banks/b1/memories", `{"items":[`+c.item+`]}`, "")
		if r.status != 422 || r.errField() != c.field || !strings.Contains(r.errMessage(), "aws_access_key_id") {
			t.Errorf("%s: %d field %q", c.field, r.status, r.errField())
		}
		if strings.Contains(string(r.raw), key) {
			t.Errorf("%s: the answer echoes the key", c.field)
		}
	}
	if n := len(e.pub.published()); n != 0 {
		t.Fatalf("%d events produced for blocked requests", n)
	}
}
