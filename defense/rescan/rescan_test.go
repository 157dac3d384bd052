package rescan_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/defense/rescan"
	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/text"
)

// fakeSecrets generates pattern-valid, never-real credentials at run time,
// so the repository holds no credential-shaped literals.
type fakeSecrets struct{ r *rand.Rand }

func (f fakeSecrets) str(cs string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = cs[f.r.IntN(len(cs))]
	}
	// Keep letters and digits mixed, as real keys are, using only bytes
	// of cs so the result stays pattern-valid.
	b[n/2] = cs[strings.IndexAny(cs, "0123456789")]
	b[n/3] = cs[0]
	return string(b)
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func (f fakeSecrets) openAIProject() string { return "sk-proj-" + f.str(alnum, 120) }
func (f fakeSecrets) awsKeyID() string      { return "AKIA" + f.str("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16) }
func (f fakeSecrets) pemBody() []string {
	lines := make([]string, 6)
	for i := range lines {
		lines[i] = f.str(alnum+"+/", 64)
	}
	return lines
}
func pemBlock(body []string) string {
	return "-----BEGIN RSA PRIVATE KEY-----\n" + strings.Join(body, "\n") + "\n-----END RSA PRIVATE KEY-----"
}

// rescanFixture is a bank stored under an allow-everything policy: its
// facts, chunk, evidence and mental model still hold raw secrets.
type rescanFixture struct {
	st                 *store.Store
	db                 *pgxpool.Pool // the test's own, for arranging and asserting rows
	url                string
	bank               string
	mentalModel        store.UUID
	keyFact, ctxFact   store.UUID // redact targets
	pemFact, cleanFact store.UUID
	openai, aws        string
	pem                []string
	gate               *defense.Gate
	emb                *embed.Hash
}

// migratedStore opens a store on a schema of its own, migrated, closed
// when the test ends.
func migratedStore(t *testing.T) (*store.Store, string) {
	t.Helper()
	url, _ := pgtest.Schema(t)
	st, err := store.Open(context.Background(), store.Deps{Logger: slog.New(slog.DiscardHandler)}, store.Config{URL: url, Dim: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st, url
}

func newRescanFixture(t *testing.T) *rescanFixture {
	t.Helper()
	st, url := migratedStore(t)
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("secret seed %d", seed)
	fs := fakeSecrets{rand.New(rand.NewPCG(seed, 7))}
	fx := &rescanFixture{st: st, db: pgtest.Pool(t, url), url: url, bank: "vault", openai: fs.openAIProject(), aws: fs.awsKeyID(), pem: fs.pemBody()}
	var err error
	if fx.emb, err = embed.NewHash(64); err != nil {
		t.Fatal(err)
	}
	if fx.gate, err = defense.NewGate(defense.GateDeps{}, defense.GateConfig{FingerprintSalt: []byte("rescan-test-salt-0123456789")}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutBank(ctx, store.Bank{ID: fx.bank, Name: "vault", Skepticism: 3, Literalism: 3, Empathy: 3,
		DefensePolicy: json.RawMessage(`{"default":"allow"}`)}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	keyText := "Alice said the staging key is " + fx.openai + " for the 我的服务 project"
	pemText := "Alice pasted her deploy key:\n" + pemBlock(fx.pem)
	cleanText := "Alice prefers green tea over coffee"
	vecs, err := fx.emb.EmbedDocuments(ctx, []string{keyText, "Alice uses the AWS console", pemText, cleanText})
	if err != nil {
		t.Fatal(err)
	}
	ent := store.DeriveID(fx.bank, "entity", "person", "alice")
	fx.keyFact, fx.ctxFact = store.DeriveID(fx.bank, "e1#f0"), store.DeriveID(fx.bank, "e1#f1")
	fx.pemFact, fx.cleanFact = store.DeriveID(fx.bank, "e1#f2"), store.DeriveID(fx.bank, "e1#f3")
	fact := func(id store.UUID, idem, body, context string, v []float32) store.FactRow {
		return store.FactRow{ID: id, FactType: "world", Text: body, Context: context, Embedding: v,
			SearchAux: text.Aux(body, []string{"Alice"}), MentionedAt: at, IdemKey: idem, EntityIDs: []store.UUID{ent}}
	}
	// The offline extractor takes a pasted key id for a name (it is
	// capitalised), so a bank stored without redaction has an entity, an
	// alias and search_aux words made of the key.
	keyEnt := store.DeriveID(fx.bank, "entity", "other", fx.aws)
	ctxFact := fact(fx.ctxFact, "e1#f1", "Alice uses the AWS console", "key id "+fx.aws, vecs[1])
	ctxFact.EntityIDs = append(ctxFact.EntityIDs, keyEnt)
	ctxFact.SearchAux = text.Aux(ctxFact.Text, []string{"Alice", "Ali", "key " + fx.openai, fx.aws})
	ctxFact.Tags = []string{"ops", "key:" + fx.aws}
	ctxFact.Metadata = map[string]string{"speaker": "Alice", "pasted": "the id is " + fx.aws}
	ev := store.EventRecord{
		BankID: fx.bank, EventKey: "e1", DocumentID: "d1", Context: "ops chat, key id " + fx.aws,
		Tags: []string{"ops"}, Metadata: map[string]string{"ticket": "see " + fx.openai, "channel": "ops"},
		Chunks: []store.ChunkRow{{ID: store.DeriveID(fx.bank, "e1", "c0"), Text: keyText + "\n" + pemText, StartedAt: at}},
		Entities: []store.EntityRow{
			{ID: ent, Name: "Alice", Kind: "person", Seen: at, Mentions: 4, Aliases: []store.AliasRow{
				{Key: "alice", Alias: "Alice"}, {Key: "ali", Alias: "Ali"}, {Key: "key " + strings.ToLower(fx.openai), Alias: "key " + fx.openai}}},
			{ID: keyEnt, Name: fx.aws, Kind: "other", Seen: at, Mentions: 1, Aliases: []store.AliasRow{{Key: strings.ToLower(fx.aws), Alias: fx.aws}}},
		},
		Facts: []store.FactRow{
			fact(fx.keyFact, "e1#f0", keyText, "", vecs[0]),
			ctxFact,
			fact(fx.pemFact, "e1#f2", pemText, "", vecs[2]),
			fact(fx.cleanFact, "e1#f3", cleanText, "", vecs[3]),
		},
	}
	if _, err := st.PersistBatch(ctx, []store.EventRecord{ev}); err != nil {
		t.Fatal(err)
	}
	// An observation citing the key fact verbatim, and a mental model that
	// quoted the key: derived texts hold the secret too.
	obs := store.DeriveID(fx.bank, "obs", "1")
	mm := store.DeriveID(fx.bank, "mm", "1")
	fx.mentalModel = mm
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO memory_units (id, bank_id, fact_type, text, mentioned_at, idempotency_key)
			VALUES ($1, $2, 'observation', 'Alice shares credentials in chat', now(), 'obs1')`, []any{obs, fx.bank}},
		{`INSERT INTO observation_evidence (observation_id, memory_id, quote, evidence_at) VALUES ($1, $2, $3, now())`,
			[]any{obs, fx.keyFact, "the staging key is " + fx.openai}},
		{`INSERT INTO observation_history (observation_id, action, new_text) VALUES ($1, 'create', $2)`,
			[]any{obs, "Alice's key is " + fx.openai}},
		{`INSERT INTO mental_models (id, bank_id, name, source_query, content) VALUES ($1, $2, 'creds', 'what keys?', $3)`,
			[]any{mm, fx.bank, "Keys seen: " + fx.openai + " and " + fx.aws}},
		{`INSERT INTO mental_model_history (mental_model_id, content) VALUES ($1, $2)`,
			[]any{mm, "Keys seen: " + fx.openai}},
	} {
		if _, err := fx.db.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	return fx
}

// dump returns every text-like value stored for the bank, lower-cased, in
// a stable order, so two dumps can be compared and searched.
func (fx *rescanFixture) dump(t *testing.T) string {
	t.Helper()
	var out []string
	rows, err := fx.db.Query(context.Background(), `
		SELECT concat_ws('|', id, text, context, array_to_string(tags, ','), metadata, embedding::text, search_aux, search_tsv::text, state, invalid_reason) FROM memory_units
		UNION ALL SELECT concat_ws('|', id, text, encode(content_hash, 'hex')) FROM chunks
		UNION ALL SELECT concat_ws('|', id, context, array_to_string(tags, ','), metadata) FROM documents
		UNION ALL SELECT concat_ws('|', id, canonical_name) FROM entities
		UNION ALL SELECT concat_ws('|', entity_id, alias_key, alias) FROM entity_aliases
		UNION ALL SELECT concat_ws('|', observation_id, quote) FROM observation_evidence
		UNION ALL SELECT concat_ws('|', id, old_text, new_text) FROM observation_history
		UNION ALL SELECT concat_ws('|', id, content) FROM mental_models
		UNION ALL SELECT concat_ws('|', id, content) FROM mental_model_history
		UNION ALL SELECT concat_ws('|', event_key, label, action, fingerprint) FROM defense_audit
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.ToLower(s))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, "\n")
}

func (fx *rescanFixture) policy(t *testing.T, raw string) defense.Policy {
	t.Helper()
	ctx := context.Background()
	b, err := fx.st.GetBank(ctx, fx.bank)
	if err != nil {
		t.Fatal(err)
	}
	b.DefensePolicy = json.RawMessage(raw)
	if _, err := fx.st.PutBank(ctx, b); err != nil {
		t.Fatal(err)
	}
	stored, err := fx.st.BankPolicy(ctx, fx.bank)
	if err != nil {
		t.Fatal(err)
	}
	p, err := defense.MergePolicy(defense.DefaultPolicy(), stored)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (fx *rescanFixture) unit(t *testing.T, id store.UUID) (text, ctxText, emb, aux, state, reason string) {
	t.Helper()
	var r *string
	err := fx.db.QueryRow(context.Background(),
		`SELECT text, context, embedding::text, search_aux, state, invalid_reason FROM memory_units WHERE id = $1`, id).
		Scan(&text, &ctxText, &emb, &aux, &state, &r)
	if err != nil {
		t.Fatal(err)
	}
	if r != nil {
		reason = *r
	}
	return
}

func TestRescanRedactsInvalidatesAndReembeds(t *testing.T) {
	t.Parallel()
	fx := newRescanFixture(t)
	ctx := context.Background()
	raws := append([]string{fx.openai, fx.aws}, fx.pem...)
	before := fx.dump(t)
	for _, s := range raws[:2] {
		if !strings.Contains(before, strings.ToLower(s)) {
			t.Fatalf("fixture does not hold the raw secret; the test would prove nothing")
		}
	}
	_, _, keyEmbBefore, _, _, _ := fx.unit(t, fx.keyFact)
	_, _, ctxEmbBefore, ctxAuxBefore, _, _ := fx.unit(t, fx.ctxFact)
	_, _, cleanEmbBefore, _, _, _ := fx.unit(t, fx.cleanFact)

	// Under the policy the facts were stored with, nothing changes.
	allow := fx.policy(t, `{"default":"allow"}`)
	rep, err := rescan.Run(ctx, rescan.Deps{Store: fx.st, Gate: fx.gate, Embedder: fx.emb}, rescan.Config{BankID: fx.bank, Policy: allow, BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	for tgt, n := range rep.Changed {
		if n != 0 {
			t.Errorf("allow policy changed %d %s rows", n, tgt)
		}
	}
	if rep.Findings["openai_project_key"] == 0 || rep.Actions["allow"] == 0 {
		t.Errorf("allow rescan found nothing: %+v", rep)
	}
	before = fx.dump(t) // now with the allow run's audit rows

	// Dry run under the new policy: counts, and not one byte written.
	strict := fx.policy(t, `{"default":"redact","labels":{"private_key_block":"block"}}`)
	dry, err := rescan.Run(ctx, rescan.Deps{Store: fx.st, Gate: fx.gate}, rescan.Config{BankID: fx.bank, Policy: strict, DryRun: true, BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := fx.dump(t); got != before {
		t.Fatal("dry run wrote to the database")
	}
	wantChanged := map[string]int{
		store.RescanTargetUnits: 3, store.RescanTargetChunks: 1, store.RescanTargetDocuments: 1, store.RescanTargetEvidence: 1,
		store.RescanTargetObsHistory: 1, store.RescanTargetMentalModels: 1, store.RescanTargetMMHistory: 1,
		store.RescanTargetEntities: 1, store.RescanTargetAliases: 2,
	}
	for tgt, n := range wantChanged {
		if dry.Changed[tgt] != n {
			t.Errorf("dry run: %s would change %d rows, want %d (report %+v)", tgt, dry.Changed[tgt], n, dry)
		}
	}
	if dry.Invalidated != 1 || dry.Findings["private_key_block"] != 2 || dry.Findings["aws_access_key_id"] != 7 || dry.Actions["block"] != 2 {
		t.Errorf("dry run counts: %+v", dry)
	}
	if dry.Scanned[store.RescanTargetUnits] != 5 || dry.Reembedded != 0 || dry.AuditRows != 0 {
		t.Errorf("dry run scanned/wrote: %+v", dry)
	}

	// The real run. API replicas cache mental models: the rescan must
	// announce its rewrite on the channel they listen to.
	lc, err := pgx.Connect(ctx, fx.url)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close(ctx)
	if _, err := lc.Exec(ctx, "LISTEN "+store.MentalModelChannel); err != nil {
		t.Fatal(err)
	}
	var progress int
	rep, err = rescan.Run(ctx, rescan.Deps{Store: fx.st, Gate: fx.gate, Embedder: fx.emb}, rescan.Config{BankID: fx.bank, Policy: strict, BatchSize: 2,
		Progress: func(rescan.Progress) { progress++ }})
	if err != nil {
		t.Fatal(err)
	}
	for tgt, n := range wantChanged {
		if rep.Changed[tgt] != n {
			t.Errorf("%s: changed %d rows, want %d", tgt, rep.Changed[tgt], n)
		}
	}
	if rep.Invalidated != 1 || rep.Reembedded != 2 || rep.Conflicts != 0 || rep.AuditRows == 0 || progress < 4 {
		t.Errorf("report %+v, %d progress calls", rep, progress)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if n, err := lc.WaitForNotification(wctx); err != nil || n.Payload != fx.bank+"/"+fx.mentalModel.String() {
		t.Errorf("no cache eviction notice for the redacted mental model: %v %v", n, err)
	}
	after := fx.dump(t)
	for i, s := range raws {
		if strings.Contains(after, strings.ToLower(s)) {
			t.Errorf("raw secret %d still stored after rescan", i)
		}
	}
	for _, m := range []string{"[redacted:openai_project_key]", "[redacted:aws_access_key_id]", "[redacted:private_key_block]"} {
		if !strings.Contains(after, m) {
			t.Errorf("marker %s missing after rescan", m)
		}
	}

	keyText, _, keyEmbAfter, keyAux, state, _ := fx.unit(t, fx.keyFact)
	if strings.Contains(keyText, fx.openai) || !strings.Contains(keyText, defense.RedactionMarker("openai_project_key")) || state != "valid" {
		t.Errorf("key fact: %q state %s", keyText, state)
	}
	if keyEmbAfter == keyEmbBefore {
		t.Error("key fact embedding not recomputed")
	}
	want, _ := fx.emb.EmbedDocuments(ctx, []string{keyText})
	if got := fx.vec(t, fx.keyFact); !closeVec(got, want[0]) {
		t.Error("key fact embedding is not the embedding of its redacted text")
	}
	if keyAux != text.Aux(keyText, []string{"Alice", "Ali"}) {
		t.Errorf("search_aux %q not rebuilt from redacted text and entity names", keyAux)
	}
	// Context, tags and metadata change, the text does not: those fields
	// are redacted and the embedding (of the unchanged text) stays, while
	// search_aux loses the names of the removed entity and alias.
	marker := defense.RedactionMarker("aws_access_key_id")
	ctxText, ctxCtx, ctxEmbAfter, ctxAuxAfter, _, _ := fx.unit(t, fx.ctxFact)
	if ctxCtx != "key id "+marker || ctxEmbAfter != ctxEmbBefore {
		t.Errorf("context-only fact: context redacted %v, embedding kept %v", ctxCtx == "key id "+marker, ctxEmbAfter == ctxEmbBefore)
	}
	if ctxAuxAfter == ctxAuxBefore || ctxAuxAfter != text.Aux(ctxText, []string{"Alice", "Ali"}) {
		t.Errorf("search_aux of a fact linked to a removed entity was not rebuilt")
	}
	var ents, aliases int
	if err := fx.db.QueryRow(ctx, `SELECT (SELECT count(*) FROM entities), (SELECT count(*) FROM entity_aliases)`).Scan(&ents, &aliases); err != nil || ents != 1 || aliases != 2 {
		t.Errorf("after rescan: %d entities, %d aliases (%v); want Alice with Alice and Ali", ents, aliases, err)
	}
	var tags []string
	var meta map[string]string
	if err := fx.db.QueryRow(ctx, `SELECT tags, metadata FROM memory_units WHERE id = $1`, fx.ctxFact).Scan(&tags, &meta); err != nil {
		t.Fatal(err)
	}
	if strings.Join(tags, ",") != "ops,key:"+marker || meta["pasted"] != "the id is "+marker || meta["speaker"] != "Alice" {
		// Values are not printed: on failure they may hold the secret.
		t.Errorf("fact tags or metadata not redacted field by field (%d tags, %d metadata keys)", len(tags), len(meta))
	}
	_, _, _, _, pemState, pemReason := fx.unit(t, fx.pemFact)
	if pemState != "invalidated" || pemReason != "blocked_by_policy: private_key_block" {
		t.Errorf("blocked fact: state %s reason %q", pemState, pemReason)
	}
	if _, _, cleanEmbAfter, _, _, _ := fx.unit(t, fx.cleanFact); cleanEmbAfter != cleanEmbBefore {
		t.Error("clean fact re-embedded")
	}
	var hashOK bool
	if err := fx.db.QueryRow(ctx, `SELECT bool_and(content_hash = sha256(convert_to(text, 'UTF8'))) FROM chunks`).Scan(&hashOK); err != nil || !hashOK {
		t.Errorf("chunk content_hash does not follow the redacted text (%v)", err)
	}
	var audits int
	if err := fx.db.QueryRow(ctx, `SELECT count(*) FROM defense_audit WHERE bank_id = $1 AND action IN ('redact', 'block') AND length(fingerprint) = 16`, fx.bank).Scan(&audits); err != nil || audits == 0 {
		t.Errorf("no redact/block audit rows with fingerprints (%d, %v)", audits, err)
	}

	// A second run finds only markers: nothing left to change.
	again, err := rescan.Run(ctx, rescan.Deps{Store: fx.st, Gate: fx.gate, Embedder: fx.emb}, rescan.Config{BankID: fx.bank, Policy: strict})
	if err != nil {
		t.Fatal(err)
	}
	for tgt, n := range again.Changed {
		if n != 0 {
			t.Errorf("second rescan changed %d %s rows", n, tgt)
		}
	}
	if again.Invalidated != 0 || len(again.Findings) != 0 {
		t.Errorf("second rescan: %+v", again)
	}
}

func (fx *rescanFixture) vec(t *testing.T, id store.UUID) []float32 {
	t.Helper()
	var s string
	if err := fx.db.QueryRow(context.Background(), `SELECT embedding::vector::text FROM memory_units WHERE id = $1`, id).Scan(&s); err != nil {
		t.Fatal(err)
	}
	var v []float32
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// closeVec compares at half precision.
func closeVec(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if d := a[i] - b[i]; d > 2e-3 || d < -2e-3 {
			return false
		}
	}
	return true
}

func TestRescanValidates(t *testing.T) {
	t.Parallel()
	st := &store.Store{}
	if _, err := rescan.Run(context.Background(), rescan.Deps{Store: st}, rescan.Config{}); err == nil || !strings.Contains(err.Error(), "bank_id") {
		t.Fatalf("missing bank not refused: %v", err)
	}
	bad := defense.Policy{Default: "shred"}
	if _, err := rescan.Run(context.Background(), rescan.Deps{Store: st}, rescan.Config{BankID: "b", Policy: bad}); err == nil || !strings.Contains(err.Error(), "policy.default") {
		t.Fatalf("bad policy not refused: %v", err)
	}
}
