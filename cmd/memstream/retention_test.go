package main

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/internal/proctest"
	"github.com/memstream/memstream/store"
)

// TestServePrunesTheAuditTables checks the wiring: a serve process (every
// role, offline LLM) prunes the API audit log and the defense audit past
// http.audit_retention and defense.audit_retention, and keeps what is newer.
func TestServePrunesTheAuditTables(t *testing.T) {
	dbURL, _ := pgtest.Schema(t)
	cfg := config.Default()
	cfg.Database.URL = dbURL
	cfg.Log.Level = "warn"
	cfg.Embed.Provider, cfg.Embed.Dim = "hash", 64
	cfg.HTTP.AuditRetention, cfg.Defense.AuditRetention = 24*time.Hour, 48*time.Hour
	cfg, err := inProcessConfig(cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs proctest.LogBuffer
	a, err := start(ctx, cfg, config.AllRoles, newRegistry(), cfg.Log.NewLogger(&logs))
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	if got := a.prune.Tables(); len(got) != 3 {
		t.Errorf("pruned tables %v; want llm_requests, audit_log and defense_audit", got)
	}
	bank := "ret-bank"
	for _, age := range []time.Duration{30 * time.Hour, time.Hour} {
		at := time.Now().Add(-age)
		if err := a.st.AddAudit(ctx, store.AuditEntry{ID: uuid.New(), BankID: &bank, Action: "retain", Transport: "http", Status: 200, StartedAt: at, EndedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{"old", "mid", "new"} {
		if err := a.st.RecordAudit(ctx, bank, key, []store.AuditRow{{Label: "card", Action: "redact", Fingerprint: "f-" + key}}); err != nil {
			t.Fatal(err)
		}
	}
	db := pgtest.Pool(t, dbURL)
	if _, err := db.Exec(ctx, `UPDATE defense_audit SET created_at = now() - CASE event_key WHEN 'old' THEN interval '49 hours' ELSE interval '47 hours' END
		WHERE event_key IN ('old', 'mid')`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		var audits, findings int
		if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM audit_log WHERE bank_id = $1), (SELECT count(*) FROM defense_audit WHERE bank_id = $1)`, bank).Scan(&audits, &findings); err != nil {
			t.Fatal(err)
		}
		if audits == 1 && findings == 2 {
			break
		}
		if audits < 1 || findings < 2 || time.Now().After(deadline) {
			t.Fatalf("audit_log %d rows (want 1), defense_audit %d (want 2: mid and new)\n%s", audits, findings, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
