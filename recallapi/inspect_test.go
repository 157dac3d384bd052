package recallapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/broker"
	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/store"
)

// inspected is a bank written through PersistBatch with what the
// inspection routes explain: chunks, tags, a link, co-mentioned entities.
type inspected struct {
	f1, f2, f3, chunk, alice, bob, lisbon uuid.UUID
	at                                    time.Time
}

func seedInspect(t *testing.T, st *store.Store, bank string) inspected {
	t.Helper()
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	s := inspected{f1: store.DeriveID(bank, "i1"), f2: store.DeriveID(bank, "i2"), f3: store.DeriveID(bank, "i3"),
		chunk: store.DeriveID(bank, "ic1"), alice: store.DeriveID(bank, "alice"), bob: store.DeriveID(bank, "bob"),
		lisbon: store.DeriveID(bank, "lisbon"), at: at}
	vec := make([]float32, testDim)
	vec[0] = 1
	ent := func(id uuid.UUID, name, kind string) store.EntityRow {
		return store.EntityRow{ID: id, Name: name, Kind: kind, Seen: at, Mentions: 1,
			Aliases: []store.AliasRow{{Key: strings.ToLower(name), Alias: name}}}
	}
	ev := store.EventRecord{BankID: bank, EventKey: "ev-1", DocumentID: "doc-1", Topic: "memstream.events", Partition: 2, Offset: 41,
		Context:  "chat",
		Chunks:   []store.ChunkRow{{ID: s.chunk, Text: "Alice: Bob and I moved to Lisbon. I like green tea.", Speaker: "Alice", StartedAt: at}},
		Entities: []store.EntityRow{ent(s.alice, "Alice", "person"), ent(s.bob, "Bob", "person"), ent(s.lisbon, "Lisbon", "place")},
		Facts: []store.FactRow{
			{ID: s.f1, FactType: "world", Text: "Alice and Bob moved to Lisbon", Embedding: vec, MentionedAt: at, IdemKey: "i1",
				ChunkID: s.chunk, MessageIndex: 0, Tags: []string{"trip"}, EntityIDs: []uuid.UUID{s.alice, s.bob, s.lisbon}},
			{ID: s.f2, FactType: "experience", Text: "Alice likes green tea", Embedding: vec, MentionedAt: at.Add(time.Hour), IdemKey: "i2",
				ChunkID: s.chunk, MessageIndex: 0, EntityIDs: []uuid.UUID{s.alice}},
			{ID: s.f3, FactType: "world", Text: "Bob lives in Lisbon", Embedding: vec, MentionedAt: at.Add(48 * time.Hour), IdemKey: "i3",
				ChunkID: s.chunk, MessageIndex: 0, EntityIDs: []uuid.UUID{s.bob, s.lisbon}},
		},
		Links: []store.LinkRow{{From: s.f1, To: s.f2, Type: "causes", Weight: 0.75}},
	}
	if _, err := st.PersistBatch(context.Background(), []store.EventRecord{ev}); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestInspectMemoryRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	s := seedInspect(t, e.st, "b1")
	other := seedInspect(t, e.st, "b2")
	const b = "/v1/default/banks/b1"

	p := ok(t, e.call("GET", b+"/memories/"+s.f1.String()+"/provenance", "", ""), "provenance")
	ev, _ := p.body["event"].(map[string]any)
	if ev == nil || ev["event_key"] != "ev-1" || ev["topic"] != "memstream.events" || ev["offset"].(float64) != 41 || ev["facts"].(float64) != 3 {
		t.Fatalf("provenance event: %s", p.raw)
	}
	if d, _ := p.body["document"].(map[string]any); d == nil || d["id"] != "doc-1" {
		t.Fatalf("provenance document: %s", p.raw)
	}
	if c, _ := p.body["chunk"].(map[string]any); c == nil || !strings.Contains(c["text"].(string), "moved to Lisbon") || c["speaker"] != "Alice" {
		t.Fatalf("provenance chunk: %s", p.raw)
	}
	if ents := p.body["entities"].([]any); len(ents) != 3 || ents[0].(map[string]any)["kind"] != "person" {
		t.Fatalf("provenance entities: %s", p.raw)
	}
	var causes map[string]any
	for _, l := range p.body["links"].([]any) {
		if l := l.(map[string]any); l["link_type"] == "causes" {
			causes = l
		}
	}
	if causes == nil || causes["direction"] != "out" || causes["memory"].(map[string]any)["id"] != s.f2.String() || causes["weight"].(float64) != 0.75 {
		t.Fatalf("provenance links lack f1 causes f2: %s", p.raw)
	}
	// The link seen from the other end.
	p2 := ok(t, e.call("GET", b+"/memories/"+s.f2.String()+"/provenance", "", ""), "provenance f2")
	found := false
	for _, l := range p2.body["links"].([]any) {
		if l := l.(map[string]any); l["link_type"] == "causes" && l["direction"] == "in" {
			found = true
		}
	}
	if !found {
		t.Fatalf("f2 does not show the incoming causes link: %s", p2.raw)
	}
	if r := e.call("GET", b+"/memories/"+other.f1.String()+"/provenance", "", ""); r.status != 404 {
		t.Fatalf("another bank's memory through b1: %d %s", r.status, r.raw)
	}

	look := ok(t, e.call("POST", b+"/memories/lookup", fmt.Sprintf(`{"ids":[%q,%q,%q]}`, s.f1, other.f2, uuid.New()), ""), "lookup")
	if it := items(t, look); len(it) != 1 || it[0]["id"] != s.f1.String() || it[0]["text"] != "Alice and Bob moved to Lisbon" {
		t.Fatalf("lookup must return b1's memory only: %s", look.raw)
	}
	if r := e.call("POST", b+"/memories/lookup", fmt.Sprintf(`{"ids":[%q,"nope"]}`, s.f1), ""); r.status != 400 || r.errField() != "ids[1]" {
		t.Fatalf("lookup of a bad id: %d %s", r.status, r.raw)
	}

	// The list's console filters: entity, tags, time.
	for _, c := range []struct {
		query string
		want  []uuid.UUID
	}{
		{"entity=" + s.bob.String(), []uuid.UUID{s.f3, s.f1}},
		{"entity=" + s.bob.String() + "&type=world&tags=trip", []uuid.UUID{s.f1}},
		{"tags=trip,other", []uuid.UUID{s.f1}},
		{"from=" + url.QueryEscape(s.at.Add(30*time.Minute).Format(time.RFC3339)), []uuid.UUID{s.f3, s.f2}},
		{"from=" + url.QueryEscape(s.at.Format(time.RFC3339)) + "&to=" + url.QueryEscape(s.at.Add(2*time.Hour).Format(time.RFC3339)), []uuid.UUID{s.f2, s.f1}},
	} {
		r := ok(t, e.call("GET", b+"/memories/list?"+c.query, "", ""), "list "+c.query)
		it := items(t, r)
		if len(it) != len(c.want) || int(r.body["total"].(float64)) != len(c.want) {
			t.Fatalf("list %s: %s", c.query, r.raw)
		}
		for i, w := range c.want {
			if it[i]["id"] != w.String() {
				t.Fatalf("list %s item %d = %v, want %s", c.query, i, it[i]["text"], w)
			}
		}
	}
	for q, field := range map[string]string{"entity=bob": "entity", "from=yesterday": "from", "to=1": "to"} {
		if r := e.call("GET", b+"/memories/list?"+q, "", ""); r.status != 400 || r.errField() != field {
			t.Fatalf("list %s: %d %s, want 400 naming %s", q, r.status, r.raw, field)
		}
	}

	g := ok(t, e.call("GET", b+"/entities/"+s.bob.String()+"/graph", "", ""), "graph")
	nodes := g.body["nodes"].([]any)
	if len(nodes) != 2 || nodes[0].(map[string]any)["name"] != "Lisbon" || nodes[0].(map[string]any)["weight"].(float64) != 2 ||
		nodes[1].(map[string]any)["name"] != "Alice" || nodes[1].(map[string]any)["weight"].(float64) != 1 {
		t.Fatalf("Bob's neighbours: %s", g.raw)
	}
	if edges := g.body["edges"].([]any); len(edges) != 1 || edges[0].(map[string]any)["weight"].(float64) != 1 {
		t.Fatalf("the Alice–Lisbon edge among Bob's neighbours: %s", g.raw)
	}
	if r := e.call("GET", b+"/entities/"+other.bob.String()+"/graph", "", ""); r.status != 404 {
		t.Fatalf("another bank's entity graph: %d", r.status)
	}
	if r := e.call("GET", b+"/entities/"+s.bob.String()+"/graph?limit=0", "", ""); r.status != 400 || r.errField() != "limit" {
		t.Fatalf("graph limit=0: %d %s", r.status, r.raw)
	}
}

func TestActivityRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	s := seedInspect(t, e.st, "b1")
	const b = "/v1/default/banks/b1"
	sum := func(r resp, k string) (n float64) {
		for _, x := range r.body["buckets"].([]any) {
			n += x.(map[string]any)[k].(float64)
		}
		return n
	}
	last := func(r resp, k string) float64 {
		bs := r.body["buckets"].([]any)
		return bs[len(bs)-1].(map[string]any)[k].(float64)
	}
	a := ok(t, e.call("GET", b+"/activity?minutes=10&buckets=20", "", ""), "activity")
	if n := len(a.body["buckets"].([]any)); n != 20 || a.body["step_seconds"].(float64) != 30 {
		t.Fatalf("activity shape: %d buckets, step %v", n, a.body["step_seconds"])
	}
	if sum(a, "events") != 1 || sum(a, "facts") != 3 || sum(a, "consolidated") != 0 || last(a, "backlog") != 3 || last(a, "backlog_peak") != 3 {
		t.Fatalf("before consolidation: %s", a.raw)
	}
	if _, err := pgtest.DB(e.st).Exec(t.Context(), `INSERT INTO unit_consolidations (unit_id, bank_id, consolidated_at) SELECT id, bank_id, now() FROM memory_units WHERE id = ANY($1)`, []uuid.UUID{s.f1, s.f2}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.RecordDeadLetter(t.Context(), "memstream.events", 0, 7, "b1", "schema_violation", "decode"); err != nil {
		t.Fatal(err)
	}
	a = ok(t, e.call("GET", b+"/activity?minutes=10&buckets=20", "", ""), "activity after")
	if sum(a, "consolidated") != 2 || last(a, "backlog") != 1 || sum(a, "dead_letters") != 1 || last(a, "backlog_peak") < 1 {
		t.Fatalf("after consolidating two facts: %s", a.raw)
	}
	// A fact consolidated ten seconds after it was stored, five minutes ago:
	// the backlog at the bucket's end misses it, its peak does not.
	if _, err := pgtest.DB(e.st).Exec(t.Context(), `WITH u AS (UPDATE memory_units SET created_at = now() - interval '5 minutes' WHERE id = $1 RETURNING id, bank_id)
		INSERT INTO unit_consolidations (unit_id, bank_id, consolidated_at) SELECT id, bank_id, now() - interval '5 minutes' + interval '10 seconds' FROM u`, s.f3); err != nil {
		t.Fatal(err)
	}
	a = ok(t, e.call("GET", b+"/activity?minutes=10&buckets=20", "", ""), "activity burst")
	burst := false
	for _, x := range a.body["buckets"].([]any) {
		x := x.(map[string]any)
		if x["backlog_peak"].(float64) > x["backlog"].(float64) {
			burst = true
		}
	}
	if !burst || last(a, "backlog") != 0 {
		t.Fatalf("a burst consolidated within its bucket shows in no peak: %s", a.raw)
	}
	// A window that ends before the facts were written sees none.
	if _, err := pgtest.DB(e.st).Exec(t.Context(), `WITH d AS (DELETE FROM unit_consolidations) UPDATE memory_units SET created_at = now() - interval '3 hours'`); err != nil {
		t.Fatal(err)
	}
	a = ok(t, e.call("GET", b+"/activity?minutes=60&buckets=6", "", ""), "activity old facts")
	if sum(a, "facts") != 0 || a.body["buckets"].([]any)[0].(map[string]any)["backlog"].(float64) != 3 {
		t.Fatalf("facts created before the window count in the backlog only: %s", a.raw)
	}
	for q, field := range map[string]string{"buckets=0": "buckets", "minutes=99999999": "minutes", "buckets=x": "buckets"} {
		if r := e.call("GET", b+"/activity?"+q, "", ""); r.status != 400 || r.errField() != field {
			t.Fatalf("activity %s: %d %s", q, r.status, r.raw)
		}
	}
}

func TestMentalModelPageRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	const b = "/v1/default/banks/b1"
	m := ok(t, e.call("POST", b+"/mental-models", `{"name":"tea","source_query":"What does Alice drink?","content":"- green tea"}`, ""), "create")
	r := e.call("GET", b+"/mental-models/"+m.body["id"].(string)+"/page", "", "")
	page := string(r.raw)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/markdown") ||
		!strings.HasPrefix(page, "---\ntitle: \"tea\"\nquestion: \"What does Alice drink?\"\n") || !strings.HasSuffix(page, "- green tea\n") {
		t.Fatalf("page: %d %q", r.status, page)
	}
	if r := e.call("GET", b+"/mental-models/"+uuid.NewString()+"/page", "", ""); r.status != 404 {
		t.Fatalf("page of an unknown model: %d", r.status)
	}
}

// TestDeadLetterRoutes runs the dead-letter routes on kfake: the record is
// read back from the dead-letter topic, shown redacted, and replayed once.
func TestDeadLetterRoutes(t *testing.T) {
	kafka, err := broker.StartEmbedded(broker.EmbeddedDeps{Logger: slog.New(slog.DiscardHandler)},
		broker.EmbeddedConfig{Addr: "127.0.0.1:0", Topics: []string{"memstream.events", "memstream.events.dlq"}, Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer kafka.Close()
	prod, err := broker.NewProducer(broker.ProducerDeps{}, broker.ProducerConfig{Brokers: []string{kafka.Addr()}, ClientID: "test-producer"})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	scanner, err := defense.NewScanner(defense.ScannerConfig{EnableEmail: true, EnablePhone: true})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOpts{})
	archive, err := broker.NewDeadLetterArchive(broker.ArchiveDeps{Client: prod}, broker.ArchiveConfig{Brokers: []string{kafka.Addr()}, ClientID: "test-console",
		DLQTopic: "memstream.events.dlq", DefaultTopic: "memstream.events"})
	if err != nil {
		t.Fatal(err)
	}
	e.srv.d.DeadLetters = archive
	e.srv.d.Redact = scanner.RedactAll
	ctx := t.Context()

	// Dead-letter two records as the pipeline does: to the topic, then the row.
	dl, err := broker.NewDeadLetters(broker.DeadLetterDeps{Client: prod}, broker.DeadLetterConfig{Topic: "memstream.events.dlq"})
	if err != nil {
		t.Fatal(err)
	}
	values := []string{
		`{"bank_id":"b1","event_id":"card","content":"card 4111 1111 1111 1111, mail a@example.com"}`,
		`{"bank_id":"b1","event_id":"other","content":"fine"}`,
	}
	for i, v := range values {
		src := &kgo.Record{Topic: "memstream.events", Partition: 1, Offset: int64(10 + i), Key: []byte("b1/doc"), Value: []byte(v),
			Headers: []kgo.RecordHeader{{Key: "trace-id", Value: []byte("t-" + fmt.Sprint(i))}}}
		class := []string{event.ClassBlockedByPolicy, event.ClassExtractFailed}[i]
		if err := dl.DeadLetter(ctx, src, &event.Error{Class: class, Stage: "defense", Msg: "blocked: credit_card"}, "b1"); err != nil {
			t.Fatal(err)
		}
		if err := e.st.RecordDeadLetter(ctx, src.Topic, src.Partition, src.Offset, "b1", class, "defense"); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.st.RecordDeadLetter(ctx, "memstream.events", 0, 99, "bank-b", event.ClassSchema, "decode"); err != nil {
		t.Fatal(err)
	}
	const b = "/v1/default/banks/b1"
	list := ok(t, e.call("GET", b+"/dead-letters", "", ""), "list")
	if list.body["total"].(float64) != 2 || len(items(t, list)) != 2 || len(list.body["classes"].([]any)) != 2 {
		t.Fatalf("b1 dead letters: %s", list.raw)
	}
	cls := ok(t, e.call("GET", b+"/dead-letters?class="+event.ClassBlockedByPolicy, "", ""), "list class")
	if it := items(t, cls); len(it) != 1 || it[0]["offset"].(float64) != 10 || cls.body["total"].(float64) != 1 {
		t.Fatalf("class filter: %s", cls.raw)
	}
	one := ok(t, e.call("GET", b+"/dead-letters/memstream.events/1/10", "", ""), "get")
	rec, _ := one.body["record"].(map[string]any)
	if rec == nil {
		t.Fatalf("record not read back from the dead-letter topic: %s", one.raw)
	}
	if v := rec["value"].(string); strings.Contains(v, "4111") || strings.Contains(v, "a@example.com") || !strings.Contains(v, "[REDACTED:credit_card]") {
		t.Fatalf("value not redacted: %s", v)
	}
	heads := map[string]string{}
	for _, h := range rec["headers"].([]any) {
		h := h.(map[string]any)
		heads[h["key"].(string)] = h["value"].(string)
	}
	if heads[broker.HeaderErrorClass] != event.ClassBlockedByPolicy || heads[broker.HeaderSourceOffset] != "10" || heads["trace-id"] != "t-0" {
		t.Fatalf("headers: %v", heads)
	}
	if r := e.call("GET", b+"/dead-letters/memstream.events/1/12", "", ""); r.status != 404 {
		t.Fatalf("unknown dead letter: %d", r.status)
	}
	if r := e.call("GET", b+"/dead-letters/memstream.events/x/10", "", ""); r.status != 400 || r.errField() != "partition" {
		t.Fatalf("bad partition: %d %s", r.status, r.raw)
	}
	// bank-b's key sees none of b1's, and may not replay (admin scope).
	if r := e.call("GET", b+"/dead-letters", "", readerBKey); r.status != 403 {
		t.Fatalf("reader of bank-b listing b1: %d", r.status)
	}
	if r := e.call("POST", "/v1/default/banks/bank-b/dead-letters/replay", `{"class":"schema_violation"}`, writerBKey); r.status != 403 {
		t.Fatalf("a write key replaying: %d %s", r.status, r.raw)
	}
	if r := e.call("POST", b+"/dead-letters/replay", `{}`, ""); r.status != 400 || r.errField() != "records" {
		t.Fatalf("replay of nothing: %d %s", r.status, r.raw)
	}

	rp := ok(t, e.call("POST", b+"/dead-letters/replay", `{"records":[{"topic":"memstream.events","partition":1,"offset":10}]}`, ""), "replay")
	if rp.body["replayed"].(float64) != 1 || rp.body["skipped"].(float64) != 0 {
		t.Fatalf("replay: %s", rp.raw)
	}
	again := ok(t, e.call("POST", b+"/dead-letters/replay", `{"records":[{"topic":"memstream.events","partition":1,"offset":10}]}`, ""), "replay again")
	if again.body["replayed"].(float64) != 0 || again.body["skipped"].(float64) != 1 {
		t.Fatalf("a second replay must not produce the record again: %s", again.raw)
	}
	byClass := ok(t, e.call("POST", b+"/dead-letters/replay", `{"class":"`+event.ClassExtractFailed+`"}`, ""), "replay class")
	if byClass.body["replayed"].(float64) != 1 {
		t.Fatalf("replay by class: %s", byClass.raw)
	}
	if it := items(t, ok(t, e.call("GET", b+"/dead-letters", "", ""), "list after")); it[0]["replayed_at"] == nil || it[1]["replayed_at"] == nil {
		t.Fatalf("replayed dead letters show no replayed_at: %v", it)
	}

	// The source topic now holds both records as first produced: same key,
	// value and headers, no dead-letter headers.
	cons, err := kgo.NewClient(kgo.SeedBrokers(kafka.Addr()), kgo.ConsumeTopics("memstream.events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []*kgo.Record
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for len(got) < 2 && pctx.Err() == nil {
		got = append(got, cons.PollFetches(pctx).Records()...)
	}
	if len(got) != 2 {
		t.Fatalf("source topic holds %d replayed records, want 2", len(got))
	}
	for _, r := range got {
		if string(r.Key) != "b1/doc" || (string(r.Value) != values[0] && string(r.Value) != values[1]) {
			t.Errorf("replayed record changed: key %q value %q", r.Key, r.Value)
		}
		// The one memstream header a replay adds is the original record's
		// idempotency key, so that a replay done twice stores it once.
		var own []kgo.RecordHeader
		for _, h := range r.Headers {
			switch {
			case h.Key == event.HeaderIdempotencyKey:
				if !strings.HasPrefix(string(h.Value), "memstream.events/1/1") {
					t.Errorf("replayed record's idempotency key %q is not its dead letter's source position", h.Value)
				}
			case strings.HasPrefix(h.Key, "memstream."):
				t.Errorf("replayed record keeps dead-letter header %s", h.Key)
			default:
				own = append(own, h)
			}
		}
		if len(own) != 1 || own[0].Key != "trace-id" {
			t.Errorf("replayed record lost its own headers: %v", r.Headers)
		}
	}
}
