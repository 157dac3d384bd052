package recallapi

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/internal/ttlcache"
)

// auditActions counts a bank's audit rows per action, read from the table
// itself so that the list route's paging cannot hide a row.
func (e *env) auditActions(bank string) map[string]int {
	e.t.Helper()
	rows, err := pgtest.DB(e.st).Query(context.Background(), `SELECT action, count(*) FROM audit_log WHERE bank_id = $1 GROUP BY action`, bank)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var a string
		var n int
		if err := rows.Scan(&a, &n); err != nil {
			e.t.Fatal(err)
		}
		out[a] = n
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// writeAndRecall does one retain and one recall on a bank.
func (e *env) writeAndRecall(bank string) {
	e.t.Helper()
	b := "/v1/default/banks/" + bank
	if r := e.call("POST", b+"/memories", `{"items":[{"content":"Pia bakes sourdough."}],"async":true}`, ""); r.status != 200 {
		e.t.Fatalf("retain %s: %d %s", bank, r.status, r.raw)
	}
	if r := e.call("POST", b+"/memories/recall", `{"query":"what does Pia bake?"}`, ""); r.status != 200 {
		e.t.Fatalf("recall %s: %d %s", bank, r.status, r.raw)
	}
}

func (e *env) createBank(bank string) {
	e.t.Helper()
	if r := e.call("PUT", "/v1/default/banks/"+bank, `{}`, ""); r.status != 200 {
		e.t.Fatalf("create %s: %d %s", bank, r.status, r.raw)
	}
}

func (e *env) setAudit(bank, value string) {
	e.t.Helper()
	if r := e.call("PATCH", "/v1/default/banks/"+bank+"/config", `{"updates":{"audit_log_enabled":`+value+`}}`, ""); r.status != 200 {
		e.t.Fatalf("config %s: %d %s", bank, r.status, r.raw)
	}
}

func (e *env) effectiveAudit(bank string) any {
	e.t.Helper()
	r := e.call("GET", "/v1/default/banks/"+bank+"/config", "", "")
	if r.status != 200 {
		e.t.Fatalf("config of %s: %d %s", bank, r.status, r.raw)
	}
	cfg, _ := r.body["config"].(map[string]any)
	return cfg["audit_log_enabled"]
}

// A bank whose configuration turns the audit log off gets no audit rows
// from its retains and recalls; turning it back on resumes them, and a
// bank that says nothing is audited, as memstream's default is. The
// switch itself is on record both ways.
func TestAuditLogFollowsBankConfig(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.createBank("aud-default")
	e.writeAndRecall("aud-default")
	if got := e.auditActions("aud-default"); got["retain"] != 1 || got["recall"] != 1 {
		t.Fatalf("default bank audit rows %v, want one retain and one recall", got)
	}
	if v := e.effectiveAudit("aud-default"); v != true {
		t.Fatalf("default bank config audit_log_enabled = %v, want true", v)
	}

	e.setAudit("aud-off", "false")
	if v := e.effectiveAudit("aud-off"); v != false {
		t.Fatalf("config audit_log_enabled = %v after setting false", v)
	}
	e.writeAndRecall("aud-off")
	got := e.auditActions("aud-off")
	if got["retain"] != 0 || got["recall"] != 0 {
		t.Fatalf("bank with audit off has audit rows %v", got)
	}
	if got["update_bank_config"] != 1 {
		t.Fatalf("the request turning the log off is not on record: %v", got)
	}
	// As in Hindsight, the list answers what is kept: here only the switch.
	r := e.call("GET", "/v1/default/banks/aud-off/audit-logs", "", "")
	if r.status != 200 || r.body["total"] != float64(1) {
		t.Fatalf("audit-logs of a bank with the log off: %d %s", r.status, r.raw)
	}

	e.setAudit("aud-off", "true")
	e.writeAndRecall("aud-off")
	got = e.auditActions("aud-off")
	if got["retain"] != 1 || got["recall"] != 1 || got["update_bank_config"] != 2 {
		t.Fatalf("after turning the log back on: %v, want one retain, one recall, two config updates", got)
	}

	// A reset removes the override: the server default (on) is back.
	e.setAudit("aud-off", "false")
	if r := e.call("DELETE", "/v1/default/banks/aud-off/config", "", ""); r.status != 200 {
		t.Fatalf("reset: %d %s", r.status, r.raw)
	}
	e.writeAndRecall("aud-off")
	if got = e.auditActions("aud-off"); got["retain"] != 2 {
		t.Fatalf("after a reset the default should audit: %v", got)
	}
}

// With http.audit_log_enabled off, only banks that turn it on are audited,
// and /version says the default is off.
func TestAuditLogServerDefaultOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{auditOff: true})
	e.createBank("quiet")
	e.writeAndRecall("quiet")
	if got := e.auditActions("quiet"); len(got) != 0 {
		t.Fatalf("bank under a default-off server has audit rows %v", got)
	}
	if v := e.effectiveAudit("quiet"); v != false {
		t.Fatalf("config audit_log_enabled = %v, want the server default false", v)
	}
	e.setAudit("loud", "true")
	e.writeAndRecall("loud")
	if got := e.auditActions("loud"); got["retain"] != 1 || got["recall"] != 1 || got["update_bank_config"] != 1 {
		t.Fatalf("bank that turns the log on: %v", got)
	}
	r := e.call("GET", "/version", "", "")
	if f, _ := r.body["features"].(map[string]any); f["audit_log"] != false {
		t.Fatalf("/version features.audit_log = %v, want false: %s", f["audit_log"], r.raw)
	}
	if r := newEnv(t, envOpts{st: e.st}).call("GET", "/version", "", ""); r.body["features"].(map[string]any)["audit_log"] != true {
		t.Fatalf("/version of a default server: %s", r.raw)
	}
}

// Another replica's edit reaches this one's cache within its TTL, without
// a query per request before that.
func TestAuditLogSwitchFromAnotherReplica(t *testing.T) {
	t.Parallel()
	a := newEnv(t, envOpts{})
	b := newEnv(t, envOpts{st: a.st})
	var loads atomic.Int32
	load := b.srv.audits.load
	b.srv.audits.load = func(ctx context.Context, bank string) (map[string]any, error) {
		loads.Add(1)
		return load(ctx, bank)
	}
	for range 5 {
		b.writeAndRecall("shared")
	}
	if n := loads.Load(); n != 1 {
		t.Fatalf("%d config reads for 10 writes within the TTL, want 1", n)
	}
	short, err := ttlcache.New[bool](auditSwitchBanks, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	b.srv.audits.cache = short
	b.srv.audits.invalidate("shared")
	a.setAudit("shared", "false")
	b.writeAndRecall("shared") // may still be audited: b's cache is fresh
	time.Sleep(100 * time.Millisecond)
	before := a.auditActions("shared")
	b.writeAndRecall("shared")
	if got := a.auditActions("shared"); got["retain"] != before["retain"] || got["recall"] != before["recall"] {
		t.Fatalf("replica b still audits after the TTL: %v, then %v", before, got)
	}
}
