package extract

import (
	"context"
	"testing"
	"time"

	"github.com/memstream/memstream/chunk"
	"github.com/memstream/memstream/defense"
)

// A redaction placeholder is not a name: otherwise every fact that had a
// secret removed would share an entity "REDACTED" and be linked to every
// other such fact in the graph arm of recall.
func TestRedactionMarkersAreNotEntities(t *testing.T) {
	if got := defense.RedactionMarker("x"); got[:len(redactionPrefix)] != redactionPrefix {
		t.Fatalf("defense marker %q no longer starts with %q", got, redactionPrefix)
	}
	text := "Dana sent the key " + defense.RedactionMarker("aws_access_key_id") + " to Lisbon and the URL postgres://app:" +
		defense.RedactionMarker("postgres_url_password") + "@db.internal:5432/app to Marco."
	out, err := offline(t, OfflineConfig{}).Extract(context.Background(), []Input{{Parts: []chunk.Part{
		{Role: "user", Name: "Dana", Text: text, Timestamp: time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)}}}})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range out[0] {
		for _, e := range f.Entities {
			names[e.Name] = true
		}
	}
	for n := range names {
		if n == "REDACTED" || len(n) >= len(redactionPrefix) && n[:len(redactionPrefix)] == redactionPrefix {
			t.Errorf("placeholder taken as entity %q (all: %v)", n, names)
		}
	}
	for _, want := range []string{"Lisbon", "Marco"} {
		if !names[want] {
			t.Errorf("entity %s lost next to a placeholder (all: %v)", want, names)
		}
	}
}
