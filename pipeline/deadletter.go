package pipeline

import (
	"encoding/json"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/store"
)

// Headers a redacted dead letter carries besides the error headers.
const (
	// HeaderRedacted marks a dead letter whose value is the event with
	// every finding of the defense scan masked, not the original bytes.
	HeaderRedacted = "memstream.defense.redacted"
	// HeaderFindings lists the findings as JSON: label, action and the
	// salted fingerprint the audit table keeps, never the value.
	HeaderFindings = "memstream.defense.findings"
)

// blockedEvent is an event the defense policy blocked, with every text
// already masked by the gate and the audit rows of its findings.
type blockedEvent struct {
	ev    *event.Decoded
	audit []store.AuditRow
}

// redactedRecord is the dead letter of a blocked record: the same key and
// headers, and as value the event re-encoded from its masked texts, so the
// dead-letter topic never holds the secret the database refused to keep.
func redactedRecord(r *kgo.Record, b *blockedEvent) *kgo.Record {
	out := *r
	ev := b.ev.Event
	if len(ev.Messages) > 0 {
		ev.Messages = slices.Clone(ev.Messages)
		for i := range ev.Messages {
			if i < len(b.ev.Messages) {
				ev.Messages[i].Content = b.ev.Messages[i].Content
			}
		}
	} else if len(b.ev.Messages) == 1 {
		ev.Content = b.ev.Messages[0].Content
	}
	ev.Context, ev.Tags, ev.Metadata = b.ev.Context, b.ev.Tags, b.ev.Metadata
	if v, err := json.Marshal(ev); err == nil {
		out.Value = v
	} else {
		out.Value = nil
	}
	findings := make([]map[string]string, len(b.audit))
	for i, a := range b.audit {
		findings[i] = map[string]string{"label": a.Label, "action": a.Action, "fingerprint": a.Fingerprint}
	}
	fj, _ := json.Marshal(findings)
	out.Headers = append(slices.Clone(r.Headers),
		kgo.RecordHeader{Key: HeaderRedacted, Value: []byte("true")},
		kgo.RecordHeader{Key: HeaderFindings, Value: fj})
	return &out
}
