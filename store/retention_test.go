package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

// TestPruneAuditLog checks that the API audit log loses exactly the
// entries older than the cut, of every bank, and that a row another
// transaction holds is skipped, not waited for.
func TestPruneAuditLog(t *testing.T) {
	t.Parallel()
	st := migrated(t, 16)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	day := 24 * time.Hour
	add := func(bank string, age time.Duration) uuid.UUID {
		t.Helper()
		e := store.AuditEntry{ID: uuid.New(), BankID: &bank, Action: "retain", Transport: "http", Status: 200,
			StartedAt: now.Add(-age), EndedAt: now.Add(-age + time.Millisecond)}
		if err := st.AddAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
		return e.ID
	}
	add("au-a", 40*day)
	add("au-a", 31*day)
	keptA := []uuid.UUID{add("au-a", 29*day), add("au-a", time.Hour)}
	add("au-b", 45*day)
	held := add("au-b", 50*day)
	keptB := add("au-b", time.Minute)

	// A transaction holding one old row: the prune takes the others.
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM audit_log WHERE id = $1 FOR UPDATE`, held); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := st.PruneAudit(pctx, now.Add(-30*day))
	if err != nil || n != 3 {
		t.Fatalf("prune with one row held: %d, %v; want 3 (the held row skipped)", n, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err = st.PruneAudit(ctx, now.Add(-30*day)); err != nil || n != 1 {
		t.Fatalf("second prune: %d, %v; want the row that was held", n, err)
	}
	if n, err = st.PruneAudit(ctx, now.Add(-30*day)); err != nil || n != 0 {
		t.Fatalf("third prune: %d, %v; want 0", n, err)
	}
	for bank, want := range map[string][]uuid.UUID{"au-a": keptA, "au-b": {keptB}} {
		items, total, err := st.ListAudit(ctx, bank, "", "", nil, nil, 50, 0)
		if err != nil {
			t.Fatal(err)
		}
		if total != len(want) {
			t.Errorf("%s keeps %d entries; want %d", bank, total, len(want))
			continue
		}
		got := map[uuid.UUID]bool{}
		for _, it := range items {
			got[it.ID] = true
		}
		for _, id := range want {
			if !got[id] {
				t.Errorf("%s lost entry %s, newer than the cut", bank, id)
			}
		}
	}
}

// TestPruneDefenseAudit checks the defense audit's age cut over more rows
// than one delete takes (the rounds must go on until the old rows are
// gone), and that findings newer than the cut stay, whatever their bank.
func TestPruneDefenseAudit(t *testing.T) {
	t.Parallel()
	st := migrated(t, 16)
	ctx := context.Background()
	db := st.Pool()
	day := 24 * time.Hour
	for _, ev := range []struct {
		bank, key string
	}{{"da-a", "new-a"}, {"da-b", "new-b"}, {"da-a", "old-a"}} {
		if err := st.RecordAudit(ctx, ev.bank, ev.key, []store.AuditRow{{Label: "card", Action: "redact", Fingerprint: "f-" + ev.key}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(ctx, `UPDATE defense_audit SET created_at = now() - interval '91 days' WHERE event_key = 'old-a'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `UPDATE defense_audit SET created_at = now() - interval '89 days' WHERE event_key = 'new-b'`); err != nil {
		t.Fatal(err)
	}
	// 10 005 more old findings: over one delete's batch of 10 000.
	if _, err := db.Exec(ctx, `INSERT INTO defense_audit (bank_id, event_key, label, action, fingerprint, created_at)
		SELECT 'da-' || (i % 3), 'bulk-' || i, 'card', 'redact', 'f' || i, now() - interval '100 days' - i * interval '1 second'
		FROM generate_series(1, 10005) AS i`); err != nil {
		t.Fatal(err)
	}
	n, err := st.PruneDefenseAudit(ctx, time.Now().Add(-90*day))
	if err != nil || n != 10006 {
		t.Fatalf("prune: %d, %v; want 10006 (the bulk rows and old-a)", n, err)
	}
	rows, err := db.Query(ctx, `SELECT event_key FROM defense_audit ORDER BY event_key`)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		left = append(left, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(left) != 2 || left[0] != "new-a" || left[1] != "new-b" {
		t.Errorf("left %v; want new-a and new-b (89 days old, inside the retention)", left)
	}
}
