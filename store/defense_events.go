package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// DefenseEventType is the webhook event announcing that the defense
// policy redacted or blocked something in an event (Hindsight's
// memory_defense.triggered).
const DefenseEventType = "memory_defense.triggered"

// qDefenseAnnounce queues one delivery per event and subscribed webhook.
// The event id derives from the bank and event key, so an event announced
// again (a replay, a retried retain, a blocked record seen twice before its
// dead letter was acknowledged) queues nothing more. A webhook being
// deleted is waited for and skipped (as in qDeliveryQueue), rather than
// failing the whole persist on its foreign key.
const qDefenseAnnounce = `INSERT INTO webhook_deliveries (id, webhook_id, bank_id, event_id, event_type, payload)
	SELECT gen_random_uuid(), w.id, w.bank_id, x.ev, $4, x.payload
	FROM unnest($1::text[], $2::uuid[], $3::text[]) AS x(bank, ev, payload)
	JOIN webhooks w ON w.bank_id = x.bank AND w.enabled AND $4 = ANY (w.event_types)
	FOR KEY SHARE OF w
	ON CONFLICT (webhook_id, event_id) DO NOTHING`

// DefenseEventID is the webhook event id of the defense decision on one
// event: the same on every path the event takes and every time it is
// seen.
func DefenseEventID(bankID, eventKey string) uuid.UUID {
	return DeriveID(DefenseEventType, bankID, eventKey)
}

// DefensePayload is the body of a memory_defense.triggered delivery:
// Hindsight's fields (action, detector, matched_types, message), the
// labels only and never a value, plus the event's key and document.
func DefensePayload(id uuid.UUID, bankID, eventKey, documentID, operationID, action string, labels []string) string {
	var op any
	if operationID != "" {
		op = operationID
	}
	data := map[string]any{"action": action, "detector": "sensitive_data", "matched_types": labels,
		"message": "content matched " + strings.Join(labels, ", "), "event_key": eventKey}
	if documentID != "" {
		data["document_id"] = documentID
	}
	b, _ := json.Marshal(map[string]any{"event_id": id, "event": DefenseEventType, "bank_id": bankID, "operation_id": op,
		"status": action, "timestamp": time.Now().UTC(), "data": data})
	return string(b)
}

// retainOperation is the operation of an event the API's retain named
// retain/<operation id>/<item>, or "".
func retainOperation(eventKey string) string {
	rest, ok := strings.CutPrefix(eventKey, "retain/")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "/")
	if _, err := uuid.Parse(id); err != nil {
		return ""
	}
	return id
}

// announceDefense queues, in the transaction that records the events'
// defense audit rows, a memory_defense.triggered delivery for every event
// whose text the policy redacted or blocked. Every path an event takes
// writes its audit rows here (PersistBatch for a stored event, RecordAudit
// for a blocked one), so the announcement does not depend on how the event
// arrived (HTTP retain or straight from Kafka).
func announceDefense(ctx context.Context, tx pgx.Tx, evs []*EventRecord) error {
	var banks, payloads []string
	var ids []uuid.UUID
	seen := map[[2]string]bool{}
	for _, e := range evs {
		labels := map[string]bool{}
		action := ""
		for _, r := range e.Audit {
			if r.Action == "allow" || r.Action == "" {
				continue
			}
			labels[r.Label] = true
			if action != "block" {
				action = r.Action
			}
		}
		k := [2]string{e.BankID, e.eventOf()}
		if len(labels) == 0 || seen[k] {
			continue
		}
		seen[k] = true
		names := make([]string, 0, len(labels))
		for l := range labels {
			names = append(names, l)
		}
		slices.Sort(names)
		id := DefenseEventID(e.BankID, e.eventOf())
		banks, ids = append(banks, e.BankID), append(ids, id)
		payloads = append(payloads, DefensePayload(id, e.BankID, e.eventOf(), e.DocumentID, retainOperation(e.eventOf()), action, names))
	}
	if len(ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, qDefenseAnnounce, banks, ids, payloads, DefenseEventType); err != nil {
		return fmt.Errorf("announce defense decisions: %w", err)
	}
	return nil
}
