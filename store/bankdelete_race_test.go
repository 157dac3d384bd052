package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/store"
)

// TestCreatesRacingBankDelete creates each kind of bank row (webhook,
// directive, mental model, knowledge folder, bank alias) while the bank is
// being deleted: the delete has locked the bank after the create ensured
// it and before its insert, which waits for the delete and then meets a
// foreign-key violation. The create must answer that the bank does not
// exist (BankNotFoundError naming it, a 404), not the raw 23503 (a 500).
func TestCreatesRacingBankDelete(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	for _, c := range []struct {
		name, insert string
		call         func(bank string) error
	}{
		{"webhook", `INSERT INTO webhooks%`, func(bank string) error {
			_, err := st.CreateWebhook(ctx, store.Webhook{ID: uuid.New(), BankID: bank, URL: "http://x.invalid/",
				EventTypes: []string{"retain.completed"}, Enabled: true, HTTPConfig: json.RawMessage(`{}`)})
			return err
		}},
		{"directive", `INSERT INTO directives%`, func(bank string) error {
			_, err := st.CreateDirective(ctx, store.Directive{ID: uuid.New(), BankID: bank, Name: "d", Content: "c", IsActive: true})
			return err
		}},
		{"mental model", `INSERT INTO mental_models%`, func(bank string) error {
			_, err := st.CreateMentalModel(ctx, store.MentalModel{BankID: bank, Name: "m", SourceQuery: "q"})
			return err
		}},
		{"knowledge folder", `INSERT INTO knowledge_nodes%`, func(bank string) error {
			_, err := st.CreateKnowledgeNode(ctx, store.KnowledgeNode{ID: uuid.New(), BankID: bank, Kind: "folder", Name: "f"})
			return err
		}},
		{"bank alias", `INSERT INTO bank_aliases%`, func(bank string) error {
			return st.AddBankAlias(ctx, bank, bank+"-alias", false)
		}},
	} {
		bank := "doomed-" + uuid.NewString()[:8]
		if err := st.EnsureBank(ctx, bank); err != nil {
			t.Fatal(err)
		}
		err := pgtest.HeldDelete(t, st.Pool(), `SELECT 1 FROM banks WHERE id = $1 FOR UPDATE`, `DELETE FROM banks WHERE id = $1`, bank,
			c.insert, func() error { return c.call(bank) })
		var bnf store.BankNotFoundError
		if !errors.As(err, &bnf) || bnf.BankID != bank || !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s in a bank deleted meanwhile: %v, want a BankNotFoundError naming %s", c.name, err, bank)
		}
		if store.IsTransient(err) {
			t.Errorf("%s: %v is transient; the bank is gone, a retry finds it gone", c.name, err)
		}
	}
}

// TestKnowledgePageRacingModelDelete places a knowledge page while its
// mental model is being deleted: ErrNotFound, not the 23503 on
// knowledge_nodes_mental_model_id_fkey.
func TestKnowledgePageRacingModelDelete(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	m, err := st.CreateMentalModel(ctx, store.MentalModel{BankID: "b", Name: "m", SourceQuery: "q"})
	if err != nil {
		t.Fatal(err)
	}
	err = pgtest.HeldDelete(t, st.Pool(), `SELECT 1 FROM mental_models WHERE id = $1 FOR UPDATE`, `DELETE FROM mental_models WHERE id = $1`, m.ID.String(),
		`INSERT INTO knowledge_nodes%`, func() error {
			_, err := st.CreateKnowledgeNode(ctx, store.KnowledgeNode{ID: uuid.New(), BankID: "b", Kind: "page", Name: "p", MentalModelID: &m.ID})
			return err
		})
	var bnf store.BankNotFoundError
	if !errors.Is(err, store.ErrNotFound) || errors.As(err, &bnf) {
		t.Errorf("page of a mental model deleted meanwhile: %v, want ErrNotFound (not the bank's)", err)
	}
}

// TestWebhookEventsRacingWebhookDelete queues a webhook event (directly,
// as an operation's finish, and as a defense announcement) while one of
// the bank's two webhooks is being deleted: the deleted one is skipped and
// the other gets its delivery. Before, the delivery's foreign key failed
// once the delete committed, and nothing was queued (the operation's
// finish failed with it).
func TestWebhookEventsRacingWebhookDelete(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	types := []string{"retain.completed", store.DefenseEventType}
	hook := func() uuid.UUID {
		h, err := st.CreateWebhook(ctx, store.Webhook{ID: uuid.New(), BankID: "b", URL: "http://x.invalid/", EventTypes: types,
			Enabled: true, HTTPConfig: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		return h.ID
	}
	for name, call := range map[string]func() error{
		"queue": func() error {
			return st.QueueWebhookEvent(ctx, store.WebhookEvent{ID: uuid.New(), BankID: "b", Type: "retain.completed", Payload: "{}"})
		},
		"finish operation": func() error {
			op, _, err := st.CreateOperation(ctx, store.Operation{ID: uuid.New(), BankID: "b", Kind: "retain"})
			if err != nil {
				return err
			}
			changed, err := st.FinishOperationAnnounced(ctx, op.ID, "completed", "", nil,
				store.WebhookEvent{ID: uuid.New(), BankID: "b", Type: "retain.completed", Payload: "{}"})
			if err == nil && !changed {
				err = errors.New("the operation was not finished")
			}
			return err
		},
		"defense announcement": func() error {
			return st.RecordAudit(ctx, "b", "blocked-"+uuid.NewString(), []store.AuditRow{{Label: "credit_card", Action: "block", Fingerprint: "f"}})
		},
	} {
		doomed, kept := hook(), hook()
		var before int
		if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE webhook_id = $1`, kept).Scan(&before); err != nil {
			t.Fatal(err)
		}
		err := pgtest.HeldDelete(t, st.Pool(), `SELECT 1 FROM webhooks WHERE id = $1::uuid FOR UPDATE`, `DELETE FROM webhooks WHERE id = $1::uuid`,
			doomed.String(), `INSERT INTO webhook_deliveries%`, call)
		if err != nil {
			t.Errorf("%s while a webhook is deleted: %v", name, err)
			continue
		}
		var after int
		if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE webhook_id = $1`, kept).Scan(&after); err != nil {
			t.Fatal(err)
		}
		if after != before+1 {
			t.Errorf("%s: the other webhook got %d deliveries, want 1", name, after-before)
		}
	}
}

// TestMergeRacingFactDelete merges an entity while one of its facts is
// being deleted (a memory clear, an observation clear, consolidation
// replacing an observation): the merge succeeds and moves the facts that
// are left. Before, its copy of the deleted fact's link failed the foreign
// key once the delete committed (23503 on unit_entities_unit_id_fkey, a 500).
func TestMergeRacingFactDelete(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	src, into := store.DeriveID("b", "entity", "hana"), store.DeriveID("b", "entity", "ivo")
	if _, err := st.PersistBatch(ctx, []store.EventRecord{personEvent("d1", "Hana", 3, at), personEvent("d2", "Ivo", 1, at)}); err != nil {
		t.Fatal(err)
	}
	doomed := store.DeriveID("b", "fact", "d1-0")
	err := pgtest.HeldDelete(t, st.Pool(), `SELECT 1 FROM memory_units WHERE id = $1::uuid FOR UPDATE`, `DELETE FROM memory_units WHERE id = $1::uuid`,
		doomed.String(), `INSERT INTO unit_entities%`, func() error {
			_, err := st.MergeEntity(ctx, "b", src, into)
			return err
		})
	if err != nil {
		t.Fatalf("merge while a fact of the entity is deleted: %v", err)
	}
	var moved int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM unit_entities WHERE entity_id = $1`, into).Scan(&moved); err != nil || moved != 3 {
		t.Fatalf("the survivor has %d facts (%v), want 3 (its own and Hana's two left)", moved, err)
	}
}
