package kafkait

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/broker"
	"github.com/memstream/memstream/consumer"
	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/extract"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/pipeline"
	"github.com/memstream/memstream/store"
)

// envBrokers names the environment variable that selects this suite.
const envBrokers = "KAFKA_BROKERS"

// dim keeps embeddings small: the tests are about delivery, not recall.
const dim = 64

// brokers returns the seed brokers or skips the test.
func brokers(t testing.TB) []string {
	t.Helper()
	v := strings.TrimSpace(os.Getenv(envBrokers))
	if v == "" {
		t.Skipf("skipping real-Kafka test: %s is not set (run scripts/ci-kafka.sh, or: export \"$(scripts/kafka-broker.sh start)\")", envBrokers)
	}
	var out []string
	for _, b := range strings.Split(v, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// harness is one test's broker topics, schema and clients.
type harness struct {
	t       *testing.T
	brokers []string
	topic   string
	dlq     string
	dbURL   string
	st      *store.Store
	prod    *kgo.Client
	adm     *kadm.Client
	log     *slog.Logger
}

// newHarness creates partitions-wide topic and DLQ topics named after the
// test, a fresh migrated schema and a producer. Everything is removed when
// the test ends.
func newHarness(t *testing.T, partitions int32) *harness {
	t.Helper()
	bs := brokers(t)
	dbURL, _ := pgtest.Schema(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	st, err := store.Open(ctx, store.Deps{Logger: log}, store.Config{URL: dbURL, MaxConns: 8, Dim: dim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	pgtest.Attach(t, st, dbURL)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	prod, err := broker.NewProducer(broker.ProducerDeps{}, broker.ProducerConfig{Brokers: bs, ClientID: "kafkait-producer"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	h := &harness{t: t, brokers: bs, dbURL: dbURL, st: st, prod: prod, adm: kadm.NewClient(prod), log: log}
	base := fmt.Sprintf("kafkait.%s.%d", strings.ToLower(strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())), time.Now().UnixNano())
	h.topic, h.dlq = base, base+".dlq"
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := h.adm.CreateTopics(cctx, partitions, 1, nil, h.topic, h.dlq)
	if err != nil {
		t.Fatalf("create topics on %v: %v", bs, err)
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil {
			t.Fatalf("create topic %s: %v", r.Topic, r.Err)
		}
	}
	t.Cleanup(func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := h.adm.DeleteTopics(dctx, h.topic, h.dlq); err != nil {
			t.Logf("delete topics: %v", err)
		}
	})
	h.waitTopicReady(partitions)
	return h
}

// waitTopicReady waits until every partition has a leader, so the first
// produce does not race topic creation.
func (h *harness) waitTopicReady(partitions int32) {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		md, err := h.adm.Metadata(context.Background(), h.topic, h.dlq)
		ok := err == nil
		if ok {
			for _, name := range []string{h.topic, h.dlq} {
				td, found := md.Topics[name]
				if !found || td.Err != nil || int32(len(td.Partitions)) != partitions {
					ok = false
					continue
				}
				for _, p := range td.Partitions {
					if p.Leader < 0 || p.Err != nil {
						ok = false
					}
				}
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("topics %s, %s not ready: %v", h.topic, h.dlq, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// running is an in-process ingester: pipeline plus consumer.
type running struct {
	pipe   *pipeline.Pipeline
	cons   *consumer.Consumer
	cancel context.CancelFunc
	done   chan error // the consumer's Run
	pdone  chan error // the pipeline's Run
}

// start runs an in-process ingester in group, wired as cmd/memstream wires
// it, with a short commit interval.
func (h *harness) start(group string) *running {
	h.t.Helper()
	emb, err := embed.NewHash(dim)
	if err != nil {
		h.t.Fatal(err)
	}
	gate, err := defense.NewGate(defense.GateDeps{Registerer: prometheus.NewRegistry(), Logger: h.log}, defense.GateConfig{FingerprintSalt: []byte("kafkait-fingerprint-salt")})
	if err != nil {
		h.t.Fatal(err)
	}
	res, err := pipeline.NewStoreResolver(pipeline.StoreResolverDeps{Source: h.st})
	if err != nil {
		h.t.Fatal(err)
	}
	policies, err := pipeline.NewCachedPolicies(pipeline.PolicyDeps{Loader: h.st}, pipeline.PolicyConfig{Base: defense.DefaultPolicy(), TTL: time.Second})
	if err != nil {
		h.t.Fatal(err)
	}
	dl, err := broker.NewDeadLetters(broker.DeadLetterDeps{Client: h.prod}, broker.DeadLetterConfig{Topic: h.dlq})
	if err != nil {
		h.t.Fatal(err)
	}
	ex, err := extract.NewOffline(extract.OfflineConfig{})
	if err != nil {
		h.t.Fatal(err)
	}
	p, err := pipeline.New(pipeline.Deps{
		Gate: gate, Policies: policies,
		Extractor: ex, Embedder: emb, Resolver: res, Store: h.st,
		DeadLetter: dl, Logger: h.log,
	}, pipeline.Config{Lanes: 3, BatchSize: 64, BatchWait: 20 * time.Millisecond, MaxEventBytes: 1 << 20})
	if err != nil {
		h.t.Fatal(err)
	}
	cons, err := consumer.New(consumer.Deps{Sink: p, Logger: h.log}, consumer.Config{Brokers: h.brokers, Topics: []string{h.topic}, Group: group,
		CommitInterval: 200 * time.Millisecond, ShutdownTimeout: 20 * time.Second})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{pipe: p, cons: cons, cancel: cancel, done: make(chan error, 1), pdone: make(chan error, 1)}
	go func() { r.pdone <- p.Run(ctx) }()
	go func() { r.done <- cons.Run(ctx) }()
	return r
}

// stop drains gracefully, as the process does on SIGTERM: the consumer
// first (drain, commit, leave), then the pipeline, under one deadline.
func (r *running) stop(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.cons.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-r.done; err != nil {
		t.Fatal(err)
	}
	if err := r.pipe.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	r.cancel()
	<-r.pdone
}

// crash abandons everything in flight without committing.
func (r *running) crash() {
	r.pipe.Abort()
	r.cons.Kill()
	r.cancel()
	<-r.done
	<-r.pdone
}

// flightEvent is a chat event whose flight number QXnnnnn becomes exactly one fact,
// so duplicates and gaps are countable in memory_units.
func flightEvent(bank string, i int) []byte {
	b, _ := json.Marshal(map[string]any{
		"bank_id": bank, "event_id": fmt.Sprintf("%s-e%05d", bank, i), "document_id": docOf(i),
		"messages": []map[string]string{
			{"role": "user", "name": "Alice", "content": fmt.Sprintf("I booked flight number QX%05d to Lisbon for the conference.", i), "timestamp": "2026-11-01T10:00:00Z"},
			{"role": "assistant", "content": "Noted, I will remind you the day before.", "timestamp": "2026-11-01T10:00:05Z"},
		},
	})
	return b
}

func docOf(i int) string { return fmt.Sprintf("conv-%d", i%61) }

// records builds events [from, to) of bank keyed as the publisher keys them.
func (h *harness) records(bank string, from, to int) []*kgo.Record {
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Topic: h.topic, Key: broker.RecordKey(bank, docOf(i)), Value: flightEvent(bank, i)})
	}
	return recs
}

func (h *harness) produce(recs ...*kgo.Record) {
	h.t.Helper()
	if err := h.prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) count(q string, args ...any) int {
	h.t.Helper()
	var n int
	if err := pgtest.DB(h.st).QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// waitCount polls q until it reaches want.
func (h *harness) waitCount(want int, timeout time.Duration, q string, args ...any) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		n := h.count(q, args...)
		if n >= want {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%q reached %d of %d after %s", q, n, want, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// committed sums the group's committed offsets over the events topic.
func (h *harness) committed(group string) int64 {
	offs, err := h.adm.FetchOffsets(context.Background(), group)
	if err != nil {
		return 0
	}
	var total int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == h.topic && o.At > 0 {
			total += o.At
		}
	})
	return total
}

// waitCommitted waits until the group's commits cover want records of the
// topic: proof that the watermark moved past all of them.
func (h *harness) waitCommitted(group string, want int, timeout time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := h.committed(group)
		if got >= int64(want) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("group %s committed %d of %d records after %s", group, got, want, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

const (
	qFacts    = `SELECT count(DISTINCT substring(text from 'QX[0-9]{5}')) FROM memory_units WHERE text ~ 'QX[0-9]{5}'`
	qDupFacts = `SELECT count(*) FROM (SELECT substring(text from 'QX[0-9]{5}') f FROM memory_units WHERE text ~ 'QX[0-9]{5}' GROUP BY 1 HAVING count(*) > 1) d`
)

// checkExactlyOnce asserts that bank has exactly n events and n distinct
// flight facts, none stored twice.
func (h *harness) checkExactlyOnce(bank string, n int) {
	h.t.Helper()
	if got := h.count(`SELECT count(*) FROM events WHERE bank_id = $1`, bank); got != n {
		h.t.Errorf("events of %s = %d, want %d", bank, got, n)
	}
	// Each row records the offset it came from: n rows from n distinct
	// records of this topic means no event was taken from a duplicate.
	if got := h.count(`SELECT count(DISTINCT (partition, "offset")) FROM events WHERE bank_id = $1 AND topic = $2`, bank, h.topic); got != n {
		h.t.Errorf("distinct source offsets of %s = %d, want %d", bank, got, n)
	}
	if got := h.count(qFacts); got != n {
		h.t.Errorf("distinct flight facts = %d, want %d", got, n)
	}
	if dup := h.count(qDupFacts); dup != 0 {
		h.t.Errorf("%d flight facts stored more than once", dup)
	}
}

// snapshot counts every table that a replay must not grow.
func (h *harness) snapshot() map[string]int {
	out := map[string]int{}
	for _, t := range []string{"events", "documents", "chunks", "memory_units", "entities", "entity_aliases", "unit_entities", "memory_links", "defense_audit"} {
		out[t] = h.count("SELECT count(*) FROM " + t)
	}
	return out
}
