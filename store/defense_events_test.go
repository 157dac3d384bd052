package store_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

// A defense decision is announced once per event: replays of a stored
// event, and a blocked event's audit written again before its dead letter
// was acknowledged, queue nothing more; "allow" findings and banks without
// a subscribed webhook queue nothing.
func TestDefenseAnnouncedOncePerEvent(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	hook, err := st.CreateWebhook(ctx, store.Webhook{ID: uuid.New(), BankID: "b", URL: "http://x.invalid/",
		EventTypes: []string{store.DefenseEventType}, Enabled: true, HTTPConfig: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	card := []store.AuditRow{{Label: "credit_card", Action: "redact", Fingerprint: "f1"}, {Label: "email", Action: "allow", Fingerprint: "f2"}}
	rec := func(bank, key string, audit []store.AuditRow) store.EventRecord {
		return store.EventRecord{BankID: bank, EventKey: key, DocumentID: "doc", Audit: audit,
			Chunks: []store.ChunkRow{{ID: store.DeriveID(bank, key, "c"), Text: "[REDACTED]"}}}
	}
	for range 2 { // the second is a replay
		if _, err := st.PersistBatch(ctx, []store.EventRecord{rec("b", "retain/e1", card),
			rec("b", "e2", []store.AuditRow{{Label: "email", Action: "allow", Fingerprint: "f3"}}), rec("other", "e3", card)}); err != nil {
			t.Fatal(err)
		}
	}
	block := []store.AuditRow{{Label: "credit_card", Action: "block", Fingerprint: "f4"}, {Label: "api_key", Action: "redact", Fingerprint: "f5"}}
	for range 2 {
		if err := st.RecordAudit(ctx, "b", "e4", block); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := st.ListDeliveries(ctx, "b", hook.ID, nil, 50)
	if err != nil {
		t.Fatal(err)
	}
	byEvent := map[uuid.UUID]int{}
	for _, d := range ds {
		byEvent[d.EventID]++
	}
	if len(ds) != 2 || byEvent[store.DefenseEventID("b", "retain/e1")] != 1 || byEvent[store.DefenseEventID("b", "e4")] != 1 {
		t.Fatalf("deliveries = %d %v; want one for the redacted event and one for the blocked one", len(ds), byEvent)
	}
	claimed, err := st.ClaimDeliveries(ctx, 10)
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim = %d, %v", len(claimed), err)
	}
	for _, d := range claimed {
		var p struct {
			Event string `json:"event"`
			Data  struct {
				Action       string   `json:"action"`
				MatchedTypes []string `json:"matched_types"`
				EventKey     string   `json:"event_key"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(d.Payload), &p); err != nil || p.Event != store.DefenseEventType {
			t.Fatalf("payload %s: %v", d.Payload, err)
		}
		switch p.Data.EventKey {
		case "e4":
			if p.Data.Action != "block" || len(p.Data.MatchedTypes) != 2 {
				t.Errorf("blocked event payload: %s", d.Payload)
			}
		default:
			if p.Data.Action != "redact" || len(p.Data.MatchedTypes) != 1 || p.Data.MatchedTypes[0] != "credit_card" {
				t.Errorf("redacted event payload: %s", d.Payload)
			}
		}
	}
}
