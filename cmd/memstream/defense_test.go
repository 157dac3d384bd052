package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/memstream/memstream/defense/rescan"
	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/store"
)

// TestCmdDefenseRescan runs the command as an operator would: the bank's
// stored policy is merged over the configured default (redact), a dry run
// writes nothing, and the real run redacts and invalidates.
func TestCmdDefenseRescan(t *testing.T) {
	t.Parallel()
	url, _ := pgtest.Schema(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, store.Config{URL: url, Dim: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	db := pgtest.Pool(t, url)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// Fake keys generated at run time: no credential-shaped literals here.
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	pick := func(cs string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = cs[r.IntN(len(cs))]
		}
		b[n/2], b[n/3] = '7', cs[0]
		return string(b)
	}
	openai := "sk-proj-" + pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 100)
	aws := "AKIA" + pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)

	// Only the AWS label is set on the bank; everything else falls back to
	// the configured default, which is redact.
	if _, err := st.PutBank(ctx, store.Bank{ID: "ops", Name: "ops", Skepticism: 3, Literalism: 3, Empathy: 3,
		DefensePolicy: json.RawMessage(`{"labels":{"aws_access_key_id":"block"}}`)}); err != nil {
		t.Fatal(err)
	}
	emb, _ := embed.NewHash(64)
	texts := []string{"the staging key is " + openai, "the key id is " + aws, "Bob likes tea"}
	vecs, _ := emb.EmbedDocuments(ctx, texts)
	at := time.Date(2026, 11, 4, 8, 0, 0, 0, time.UTC)
	ev := store.EventRecord{BankID: "ops", EventKey: "e1", DocumentID: "d1"}
	for i, tx := range texts {
		ev.Facts = append(ev.Facts, store.FactRow{ID: store.DeriveID("ops", "f", tx), FactType: "world", Text: tx,
			Embedding: vecs[i], MentionedAt: at, IdemKey: "e1#" + tx})
	}
	if _, err := st.PersistBatch(ctx, []store.EventRecord{ev}); err != nil {
		t.Fatal(err)
	}
	snapshot := func() string {
		var s string
		if err := db.QueryRow(ctx, `SELECT string_agg(concat_ws('|', text, state, invalid_reason, embedding::text), E'\n' ORDER BY id) FROM memory_units`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	rescan := func(extra ...string) rescan.Report {
		t.Helper()
		var out, errOut bytes.Buffer
		args := append([]string{"rescan", "--bank", "ops", "--set", "database.url=" + url, "--set", "embed.provider=hash", "--set", "embed.dim=64", "--set", "log.level=error"}, extra...)
		if err := cmdDefense(ctx, args, &out, &errOut); err != nil {
			t.Fatalf("%v\n%s", err, errOut.String())
		}
		var rep rescan.Report
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("stdout is not one JSON report: %v\n%s", err, out.String())
		}
		if !strings.Contains(errOut.String(), "finding aws_access_key_id") {
			t.Errorf("summary does not list findings per label:\n%s", errOut.String())
		}
		return rep
	}

	before := snapshot()
	dry := rescan("--dry-run")
	if !dry.DryRun || dry.Changed[store.RescanTargetUnits] != 2 || dry.Invalidated != 1 ||
		dry.Findings["openai_project_key"] != 1 || dry.Actions["block"] != 1 || dry.Actions["redact"] != 1 {
		t.Errorf("dry run report %+v", dry)
	}
	if snapshot() != before {
		t.Fatal("--dry-run wrote to the database")
	}

	rep := rescan()
	if rep.DryRun || rep.Changed[store.RescanTargetUnits] != 2 || rep.Invalidated != 1 || rep.Reembedded != 2 {
		t.Errorf("report %+v", rep)
	}
	after := snapshot()
	if strings.Contains(after, openai) || strings.Contains(after, aws) {
		t.Fatal("raw key still stored after rescan")
	}
	if !strings.Contains(after, "[REDACTED:openai_project_key]|valid") ||
		!strings.Contains(after, "[REDACTED:aws_access_key_id]|invalidated|blocked_by_policy: aws_access_key_id") ||
		!strings.Contains(after, "Bob likes tea|valid") {
		t.Errorf("stored facts after rescan:\n%s", strings.Join(strings.Split(after, "\n"), "\n"))
	}
	// The audit rows use the database's salt, the one ingest uses.
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM defense_audit WHERE bank_id = 'ops' AND event_key = 'e1' AND length(fingerprint) = 16`).Scan(&n); err != nil || n != 2 {
		t.Errorf("audit rows = %d (%v), want 2", n, err)
	}
}

func TestCmdDefenseUsage(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if err := cmdDefense(context.Background(), nil, &out, &errOut); err == nil {
		t.Error("no subcommand accepted")
	}
	if err := cmdDefense(context.Background(), []string{"rescan"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "--bank") {
		t.Errorf("missing --bank: %v", err)
	}
	if err := cmdDefense(context.Background(), []string{"rescan", "--bank", "b", "--batch-size", "0"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "--batch-size") {
		t.Errorf("bad --batch-size: %v", err)
	}
}
