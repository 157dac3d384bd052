package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

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

