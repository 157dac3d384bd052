package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

// TestAddAuditIsReadBackAndLeavesCommitsSynchronous checks that an audit
// row committed without waiting for its WAL flush is read back at once,
// and that the asynchronous commit stays with the audit insert: the pooled
// connection's next transaction commits synchronously again.
func TestAddAuditIsReadBackAndLeavesCommitsSynchronous(t *testing.T) {
	t.Parallel()
	st := migrated(t, 16)
	ctx := context.Background()
	bank := "audit-bank"
	now := time.Now()
	e := store.AuditEntry{ID: uuid.New(), BankID: &bank, Action: "recall", Transport: "http", Status: 200,
		StartedAt: now, EndedAt: now, Metadata: json.RawMessage(`{"method":"POST"}`)}
	if err := st.AddAudit(ctx, e); err != nil {
		t.Fatal(err)
	}
	got, err := st.GetAudit(ctx, bank, e.ID)
	if err != nil || got.Action != "recall" {
		t.Fatalf("GetAudit = %+v, %v; want the recall just added", got, err)
	}
	// Every connection the pool holds: none may keep the setting.
	for range 4 {
		var v string
		if err := st.Pool().QueryRow(ctx, `SHOW synchronous_commit`).Scan(&v); err != nil || v != "on" {
			t.Fatalf("synchronous_commit after AddAudit = %q, %v; want on", v, err)
		}
	}
}
