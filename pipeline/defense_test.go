package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/broker"
	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/pipeline"
	"github.com/memstream/memstream/store"
)

// plantedSecret is one generated credential: the text pasted into the
// chat, the label the gate must give it, and the substrings that must never reach
// the database (the value, and its random core in case only part of it
// leaked, e.g. as a lower-cased tsvector lexeme).
type plantedSecret struct {
	label   string
	pasted  string
	forbids []string
}

// fakeSecretGen makes pattern-valid fake credentials at run time, so the
// repository holds no credential-shaped literals and every run tries new
// values.
type fakeSecretGen struct{ r *rand.Rand }

const (
	secUpperDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	secAlnum       = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	secBase64      = secAlnum + "+/"
)

// str draws n bytes of cs, keeping a letter and a digit in the middle as
// real keys have (cs must hold both).
func (g fakeSecretGen) str(cs string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = cs[g.r.IntN(len(cs))]
	}
	b[n/2] = cs[strings.IndexAny(cs, "0123456789")]
	b[n/3] = cs[0]
	return string(b)
}

func (g fakeSecretGen) openAIProject() plantedSecret {
	core := g.str(secAlnum, 120)
	return plantedSecret{"openai_project_key", "sk-proj-" + core, []string{"sk-proj-" + core, core[:40], core[80:]}}
}

func (g fakeSecretGen) awsKeyID() plantedSecret {
	v := "AKIA" + g.str("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
	return plantedSecret{"aws_access_key_id", v, []string{v}}
}

func (g fakeSecretGen) postgresURL() plantedSecret {
	pw := g.str(secAlnum, 20)
	return plantedSecret{"postgres_url_password", "postgres://app_user:" + pw + "@db.internal:5432/billing?sslmode=require", []string{pw}}
}

func (g fakeSecretGen) slackWebhook() plantedSecret {
	tail := g.str(secAlnum, 24)
	v := "https://hooks.slack.com/services/T" + g.str(secUpperDigits, 8) + "/B" + g.str(secUpperDigits, 8) + "/" + tail
	return plantedSecret{"slack_webhook_url", v, []string{v, tail}}
}

// card returns a Luhn-valid Visa-style number, grouped by spaces.
func (g fakeSecretGen) card() plantedSecret {
	d := "4" + g.str("0123456789", 14)
	for c := '0'; c <= '9'; c++ {
		if defense.Luhn(d + string(c)) {
			d += string(c)
			break
		}
	}
	spaced := d[0:4] + " " + d[4:8] + " " + d[8:12] + " " + d[12:16]
	return plantedSecret{"credit_card", spaced, []string{spaced, d}}
}

func (g fakeSecretGen) pemKey() plantedSecret {
	var body []string
	for range 8 {
		body = append(body, g.str(secBase64, 64))
	}
	v := "-----BEGIN RSA PRIVATE KEY-----\n" + strings.Join(body, "\n") + "\n-----END RSA PRIVATE KEY-----"
	return plantedSecret{"private_key_block", v, body}
}

func newFakeSecretGen(t *testing.T) fakeSecretGen {
	seed := uint64(time.Now().UnixNano())
	t.Logf("secret seed %d", seed)
	return fakeSecretGen{rand.New(rand.NewPCG(seed, 11))}
}

func defenseChat(bank, id, doc string, msgs ...string) []byte {
	var ms []map[string]string
	for i, c := range msgs {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		ms = append(ms, map[string]string{"role": role, "name": map[bool]string{true: "Dana"}[role == "user"], "content": c,
			"timestamp": fmt.Sprintf("2026-11-03T09:%02d:00Z", i)})
	}
	b, _ := json.Marshal(map[string]any{"bank_id": bank, "event_id": id, "document_id": doc, "messages": ms})
	return b
}

// defenseTextColumns lists every text, varchar, jsonb, json, tsvector and text[]
// column of the test schema, so a new table or column is covered without
// editing the test.
func (h *harness) defenseTextColumns() [][2]string {
	h.t.Helper()
	rows, err := pgtest.DB(h.st).Query(context.Background(), `
		SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = current_schema()
		  AND (data_type IN ('text', 'character varying', 'jsonb', 'json', 'tsvector') OR udt_name IN ('_text', '_varchar'))
		ORDER BY table_name, ordinal_position`)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var tb, col string
		if err := rows.Scan(&tb, &col); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, [2]string{tb, col})
	}
	if err := rows.Err(); err != nil {
		h.t.Fatal(err)
	}
	return out
}

// dump returns every value of every text-like column, lower-cased, keyed
// by "table.column".
func (h *harness) defenseDump() map[string][]string {
	h.t.Helper()
	cols := h.defenseTextColumns()
	out := map[string][]string{}
	for _, c := range cols {
		q := fmt.Sprintf("SELECT %s::text FROM %s WHERE %s IS NOT NULL",
			pgx.Identifier{c[1]}.Sanitize(), pgx.Identifier{c[0]}.Sanitize(), pgx.Identifier{c[1]}.Sanitize())
		rows, err := pgtest.DB(h.st).Query(context.Background(), q)
		if err != nil {
			h.t.Fatalf("%s: %v", q, err)
		}
		vals, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			h.t.Fatalf("%s: %v", q, err)
		}
		key := c[0] + "." + c[1]
		for _, v := range vals {
			out[key] = append(out[key], strings.ToLower(v))
		}
		if _, ok := out[key]; !ok {
			out[key] = nil
		}
	}
	return out
}

// assertNoSecrets fails for every stored value that contains a forbidden
// substring, naming the column and the label, never the value.
func assertNoSecrets(t *testing.T, dump map[string][]string, secrets []plantedSecret) {
	t.Helper()
	for _, want := range []string{"memory_units.text", "memory_units.search_tsv", "chunks.text", "defense_audit.fingerprint", "documents.metadata"} {
		if _, ok := dump[want]; !ok {
			t.Fatalf("column %s not covered by the dump; got %d columns", want, len(dump))
		}
	}
	for col, vals := range dump {
		for _, v := range vals {
			for _, s := range secrets {
				for _, f := range s.forbids {
					if strings.Contains(v, strings.ToLower(f)) {
						t.Errorf("raw %s value stored in %s", s.label, col)
					}
				}
			}
		}
	}
}

func anyContains(vals []string, sub string) bool {
	for _, v := range vals {
		if strings.Contains(v, strings.ToLower(sub)) {
			return true
		}
	}
	return false
}

func TestDefenseNoRawSecretReachesPostgres(t *testing.T) {
	h := newHarness(t)
	g := newFakeSecretGen(t)
	oa, aws, pg, slack, card, pem := g.openAIProject(), g.awsKeyID(), g.postgresURL(), g.slackWebhook(), g.card(), g.pemKey()
	secrets := []plantedSecret{oa, aws, pg, slack, card, pem}

	withContext, _ := json.Marshal(map[string]any{
		"bank_id": "dana", "event_id": "dana-ctx", "document_id": "ops",
		"content":  "Dana rotated the deploy credentials on Monday and moved the billing job to Lisbon.",
		"context":  "ops channel, AWS key id " + aws.pasted,
		"metadata": map[string]string{"source": "slack", "webhook": slack.pasted},
		"tags":     []string{"project:billing"},
	})
	h.produce(
		defenseChat("dana", "dana-1", "c1",
			"我的key是"+oa.pasted+"谢谢，请帮我记住我在柏林工作。",
			"Noted. I will not repeat the key."),
		defenseChat("dana", "dana-2", "c1",
			"Dana's AWS access key id is "+aws.pasted+" and the billing database is "+pg.pasted+" for the Lisbon team.",
			"Got it."),
		defenseChat("dana", "dana-3", "c2",
			"Post alerts to "+slack.pasted+" when the nightly export fails.",
			"I will post alerts to the webhook."),
		defenseChat("dana", "dana-4", "c2",
			"我的信用卡号是"+card.pasted+"，下个月到期。Dana likes hiking in Sintra.",
			"好的。"),
		defenseChat("dana", "dana-5", "c3",
			"Dana pasted the deploy key by mistake:\n```\n"+pem.pasted+"\n```\nplease forget it.",
			"Removed."),
		withContext,
	)
	r := h.start("g-defense")
	h.waitEvents(6, time.Minute)
	r.stop(t)

	if n := h.count(`SELECT count(*) FROM events WHERE bank_id = 'dana'`); n != 6 {
		t.Fatalf("stored %d of 6 events (dead letters: %d)", n, h.count(`SELECT count(*) FROM dead_letters`))
	}
	dump := h.defenseDump()
	assertNoSecrets(t, dump, secrets)

	// The secrets were replaced, not dropped with their sentences: the
	// placeholders are what recall will show.
	for _, s := range secrets {
		if !anyContains(dump["chunks.text"], defense.RedactionMarker(s.label)) {
			t.Errorf("chunks hold no %s placeholder", s.label)
		}
	}
	if !anyContains(dump["memory_units.text"], "[redacted:") {
		t.Error("no fact carries a [REDACTED: placeholder")
	}
	// A placeholder is not a name: no entity links every redacted fact.
	if n := h.count(`SELECT count(*) FROM entities WHERE canonical_name ILIKE '%redacted%'`); n != 0 {
		t.Errorf("%d entities named after a redaction placeholder", n)
	}
	// Text around the secrets survives: redaction is not deletion.
	for _, kept := range []string{"柏林", "lisbon", "sintra", "nightly export"} {
		if !anyContains(dump["chunks.text"], kept) {
			t.Errorf("chunks lost the text %q next to a secret", kept)
		}
	}

	// One audit row per finding: label, action and a fingerprint, never
	// the value (assertNoSecrets covered every audit column already).
	rows, err := pgtest.DB(h.st).Query(context.Background(), `SELECT event_key, label, action, fingerprint FROM defense_audit WHERE bank_id = 'dana'`)
	if err != nil {
		t.Fatal(err)
	}
	type auditRow struct{ Event, Label, Action, Fingerprint string }
	audit, err := pgx.CollectRows(rows, pgx.RowToStructByPos[auditRow])
	if err != nil {
		t.Fatal(err)
	}
	byLabel := map[string]int{}
	for _, a := range audit {
		byLabel[a.Label]++
		if a.Action != string(defense.ActionRedact) || len(a.Fingerprint) != 16 || !strings.HasPrefix(a.Event, "dana-") {
			t.Errorf("audit row %+v", a)
		}
	}
	for _, s := range secrets {
		if byLabel[s.label] == 0 {
			t.Errorf("no audit row for %s (have %v)", s.label, byLabel)
		}
	}
}

func TestDefenseBlockPolicyDeadLettersAndStoresNothing(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	g := newFakeSecretGen(t)
	oa, aws := g.openAIProject(), g.awsKeyID()
	if _, err := h.st.PutBank(ctx, store.Bank{ID: "locked", Name: "locked", Skepticism: 3, Literalism: 3, Empathy: 3,
		DefensePolicy: json.RawMessage(`{"default":"block"}`)}); err != nil {
		t.Fatal(err)
	}
	// A distinctive sentence travels with the secret: if any of the
	// blocked event were stored, it would show up.
	canary := "Zephyrine ordered " + g.str(secUpperDigits, 12) + " crates of quince"
	blocked := defenseChat("locked", "locked-1", "c1", canary+". The key is "+oa.pasted+" and the id "+aws.pasted, "ok")
	clean := defenseChat("locked", "locked-2", "c1", "Zephyrine prefers the window seat on morning flights.", "Noted.")
	other := defenseChat("open", "open-1", "c1", "My key is "+oa.pasted+" for the staging box.", "Noted.")
	h.produce(blocked, clean, other)
	r := h.start("g-block")
	h.waitEvents(3, time.Minute)
	r.stop(t)

	// The clean event of the blocking bank and the other bank's event
	// (default policy: redact) are stored; the blocked one is not.
	if n := h.count(`SELECT count(*) FROM events WHERE event_key IN ('locked-2', 'open-1')`); n != 2 {
		t.Fatalf("%d of the 2 unblocked events stored", n)
	}
	if n := h.count(`SELECT count(*) FROM events WHERE event_key = 'locked-1'`); n != 0 {
		t.Fatal("blocked event recorded as ingested")
	}
	if n := h.count(`SELECT count(*) FROM dead_letters WHERE bank_id = 'locked' AND error_class = $1 AND error_stage = 'defense'`, event.ClassBlockedByPolicy); n != 1 {
		t.Fatalf("dead_letters rows for the blocked event: %d, want 1", n)
	}
	dump := h.defenseDump()
	secrets := []plantedSecret{oa, aws, {label: "canary", forbids: []string{canary, "quince"}}}
	assertNoSecrets(t, dump, secrets)
	for _, col := range []string{"memory_units.source_event_id", "chunks.event_key"} {
		if anyContains(dump[col], "locked-1") {
			t.Errorf("%s references the blocked event", col)
		}
	}
	if !anyContains(dump["chunks.text"], "window seat") {
		t.Error("the clean event of the blocking bank was not stored")
	}

	// The blocked event is audited: labels, action block, fingerprints.
	rows, err := pgtest.DB(h.st).Query(ctx, `SELECT label, action, fingerprint FROM defense_audit WHERE bank_id = 'locked' AND event_key = 'locked-1' ORDER BY label`)
	if err != nil {
		t.Fatal(err)
	}
	type auditRow struct{ Label, Action, Fingerprint string }
	audit, err := pgx.CollectRows(rows, pgx.RowToStructByPos[auditRow])
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 2 || audit[0].Label != "aws_access_key_id" || audit[1].Label != "openai_project_key" {
		t.Fatalf("blocked event audit = %+v, want aws_access_key_id and openai_project_key", audit)
	}
	for _, a := range audit {
		if a.Action != string(defense.ActionBlock) || len(a.Fingerprint) != 16 {
			t.Errorf("audit row %+v", a)
		}
	}
	// The same key in the other bank was redacted with the same salt: the
	// fingerprints match, so operators can see one key pasted twice.
	if n := h.count(`SELECT count(*) FROM defense_audit a JOIN defense_audit b ON a.fingerprint = b.fingerprint
		WHERE a.event_key = 'locked-1' AND b.event_key = 'open-1' AND b.action = 'redact'`); n != 1 {
		t.Errorf("fingerprints of one key in two events do not match (%d)", n)
	}

	// The DLQ keeps the record's key, headers and shape, but its value is
	// redacted: a blocked secret must not live on in the dead-letter
	// topic when the database keeps only its fingerprint (issue 15 item
	// 15). The fingerprints travel in a header and match the audit rows.
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.brokers...), kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) == 0 && pctx.Err() == nil {
		got = append(got, cl.PollFetches(pctx).Records()...)
	}
	if len(got) != 1 {
		t.Fatalf("DLQ has %d records, want the blocked event", len(got))
	}
	for _, s := range []plantedSecret{oa, aws} {
		for _, f := range s.forbids {
			if strings.Contains(string(got[0].Value), f) {
				t.Fatalf("the dead-lettered value still holds the raw %s", s.label)
			}
		}
	}
	var dead event.Event
	if err := json.Unmarshal(got[0].Value, &dead); err != nil {
		t.Fatalf("redacted dead letter is not an event: %v", err)
	}
	if dead.BankID != "locked" || dead.EventID != "locked-1" || len(dead.Messages) != 2 ||
		!strings.Contains(dead.Messages[0].Content, "Zephyrine ordered") || !strings.Contains(dead.Messages[0].Content, "[REDACTED:openai_project_key]") {
		t.Errorf("redacted dead letter lost the event around the secrets: %+v", dead)
	}
	if string(got[0].Key) != "k0" {
		t.Errorf("dead letter key %q, want the record's k0", got[0].Key)
	}
	hdr := map[string]string{}
	for _, hd := range got[0].Headers {
		hdr[hd.Key] = string(hd.Value)
	}
	if hdr[broker.HeaderErrorClass] != event.ClassBlockedByPolicy || hdr[broker.HeaderErrorStage] != "defense" {
		t.Errorf("DLQ headers class %q stage %q", hdr[broker.HeaderErrorClass], hdr[broker.HeaderErrorStage])
	}
	if hdr[pipeline.HeaderRedacted] != "true" {
		t.Errorf("dead letter not marked redacted: %v", hdr)
	}
	var findings []struct{ Label, Action, Fingerprint string }
	if err := json.Unmarshal([]byte(hdr[pipeline.HeaderFindings]), &findings); err != nil {
		t.Fatalf("findings header %q: %v", hdr[pipeline.HeaderFindings], err)
	}
	fps := map[string]string{}
	for _, f := range findings {
		fps[f.Label] = f.Fingerprint
	}
	for _, a := range audit {
		if fps[a.Label] != a.Fingerprint {
			t.Errorf("dead letter fingerprint of %s = %q, audit has %q", a.Label, fps[a.Label], a.Fingerprint)
		}
	}
	msg := hdr[broker.HeaderErrorMessage]
	if !strings.Contains(msg, "openai_project_key") || strings.Contains(msg, oa.pasted) || strings.Contains(msg, aws.pasted) {
		t.Errorf("DLQ error message %q must name the label and never the value", msg)
	}
}
