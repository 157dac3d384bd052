package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/broker"
	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/consumer"
	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/extract"
	"github.com/memstream/memstream/llm"
	"github.com/memstream/memstream/pgserver"
	"github.com/memstream/memstream/pipeline"
	"github.com/memstream/memstream/store"
)

// IngestConfig is what `memstream bench ingest` runs: N synthetic chat
// events through an in-process Kafka broker (kfake) and the full ingest
// pipeline into PostgreSQL, then a COPY of the resulting memory_units rows
// into a fresh copy of the same indexed table in the same run. With
// LLMLatency set, the extractor is the openai provider talking to an
// in-process fake OpenAI-compatible server with that latency, once per
// LLMConcurrency × LLMChunksPerCall combination.
type IngestConfig struct {
	Events, Banks, Partitions, Lanes, BatchSize int
	// LatencyEvents is the size of the paced latency phase.
	LatencyEvents int
	Seed          uint64
	// DatabaseURL is a server to use (a fresh schema is created and
	// dropped); empty starts a managed one under a temporary directory.
	DatabaseURL                      string
	LLMLatency                       time.Duration
	LLMConcurrency, LLMChunksPerCall []int
	// Embedders are the embedding providers of the offline mode, run one
	// after another on the same events, each into fresh tables of the same
	// dimension, so their rates are comparable. Empty means the one
	// configuration default.
	Embedders []string
	// Dim is the vector size of every run (the hash embedder makes any
	// size; the local model only its own).
	Dim int
}

// IngestDeps are what main supplies: the embedder of a provider, built
// fresh for each pipeline ("" means the configured one), and the base
// defense policy.
type IngestDeps struct {
	NewEmbedder func(provider string, dim int) (embed.Embedder, error)
	BasePolicy  defense.Policy
}

// RunIngest runs the ingest benchmark: one JSON line to stdout, progress
// and a summary to stderr.
func RunIngest(ctx context.Context, deps IngestDeps, f IngestConfig, stdout, stderr io.Writer) error {
	if f.LatencyEvents == 0 {
		f.LatencyEvents = min(max(f.Events/10, 100), 2000)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if f.LLMLatency > 0 {
		env, err := openBenchEnv(ctx, deps, f.DatabaseURL, f.Dim, stderr, log)
		if err != nil {
			return err
		}
		defer env.close()
		return benchIngestLLM(ctx, env, f, stdout, stderr)
	}
	providers := f.Embedders
	if len(providers) == 0 {
		providers = []string{""}
	}
	var results []ingestResult
	for _, p := range providers {
		// A fresh database (or schema) per provider: the second run must
		// not start with the first one's rows and index.
		env, err := openBenchEnv(ctx, deps, f.DatabaseURL, f.Dim, stderr, log)
		if err != nil {
			return err
		}
		env.provider = p
		res, err := benchIngestOffline(ctx, env, f, stdout, stderr)
		env.close()
		if err != nil {
			return err
		}
		results = append(results, res)
	}
	if len(results) > 1 {
		fmt.Fprintf(stderr, "\nembedders, same events, same run:\n")
		for _, r := range results {
			fmt.Fprintf(stderr, "  %-6s %6.0f facts/s (%.2fx the first), embedding %.2f ms per fact (summed over lanes), p50 latency %.0f ms\n",
				r.Embedder, r.FactsPerS, r.FactsPerS/results[0].FactsPerS, r.EmbedMsPerFact, r.P50Ms)
		}
	}
	return nil
}

// timedEmbedder sums the time the pipeline spends embedding documents and
// the texts it embeds: the cost of the model per fact.
type timedEmbedder struct {
	embed.Embedder
	nanos, texts atomic.Int64
}

func (t *timedEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	start := time.Now()
	v, err := t.Embedder.EmbedDocuments(ctx, texts)
	t.nanos.Add(int64(time.Since(start)))
	t.texts.Add(int64(len(texts)))
	return v, err
}

// benchEnv is the database side of a bench run.
type benchEnv struct {
	deps    IngestDeps
	cfg     config.Config
	log     *slog.Logger
	stderr  io.Writer
	tmp     string
	pg      *pgserver.Server
	st      *store.Store
	pgMajor string
	drop    func()
	// provider is the embedding provider of the run; "" is the configured.
	provider string
}

func openBenchEnv(ctx context.Context, deps IngestDeps, dbURL string, dim int, stderr io.Writer, log *slog.Logger) (*benchEnv, error) {
	env := &benchEnv{deps: deps, cfg: config.Default(), log: log, stderr: stderr, drop: func() {}}
	if dim > 0 {
		env.cfg.Embed.Dim = dim
	}
	tmp, err := pgserver.TempDir("memstream-bench-ingest-")
	if err != nil {
		return nil, err
	}
	env.tmp = tmp
	ok := false
	defer func() {
		if !ok {
			env.close()
		}
	}()
	if dbURL == "" {
		port, err := pgserver.FreePort()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(stderr, "bench ingest: starting a managed PostgreSQL in %s on port %d\n", tmp, port)
		env.pg, err = pgserver.Start(ctx, pgserver.Deps{Logger: log}, pgserver.Config{DataDir: filepath.Join(tmp, "postgres"), Port: port})
		if err != nil {
			return nil, err
		}
		dbURL = env.pg.URL()
	} else {
		// A fresh schema keeps the run's tables and indexes empty at the
		// start, like the managed server's.
		var raw [4]byte
		_, _ = rand.Read(raw[:])
		schema := "bench_ingest_" + hex.EncodeToString(raw[:])
		base := dbURL
		if dbURL, err = store.CreateSchema(ctx, base, schema, false); err != nil {
			return nil, fmt.Errorf("--database-url: %w", err)
		}
		env.drop = func() { _ = store.DropSchema(context.Background(), base, schema) }
	}
	env.st, err = store.Open(ctx, store.Deps{Logger: log}, store.Config{URL: dbURL, MaxConns: env.cfg.Database.MaxConns, Dim: env.cfg.Embed.Dim})
	if err != nil {
		return nil, err
	}
	if _, err := env.st.Migrate(ctx); err != nil {
		return nil, err
	}
	env.pgMajor, _ = env.st.ServerVersion(ctx)
	ok = true
	return env, nil
}

func (e *benchEnv) close() {
	if e.st != nil {
		e.st.Close()
	}
	e.drop()
	if e.pg != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = e.pg.Stop(ctx)
		cancel()
	}
	if e.tmp != "" {
		_ = os.RemoveAll(e.tmp)
	}
}

// benchEvent is one synthetic event and its record key.
type benchEvent struct {
	key, id, bank string
	value         []byte
}

var (
	ingestNames  = []string{"Alice", "Bruno", "Chen Jing", "Dmitri", "Elena", "Farah", "Gustavo", "Hana"}
	ingestPlaces = []string{"Lisbon", "Shanghai", "Berlin", "Nairobi", "Toronto", "Kyoto", "Melbourne", "Oslo"}
	ingestEN     = []string{
		"I moved to %[2]s last March because my company opened an office there.",
		"My sister %[1]s is visiting next weekend, so I booked a table at the harbour restaurant.",
		"We finally shipped the billing migration yesterday after three weeks of testing.",
		"I prefer window seats on long flights and I always bring noise-cancelling headphones.",
		"%[1]s recommended the book \"Thinking in Systems\" and I started reading it on the train.",
		"The project review with %[1]s is on Thursday at 10am in the %[2]s office.",
		"I have been running 5 km every morning since I hurt my knee in January.",
		"Our team lead %[1]s wants the quarterly report before the board meeting in %[2]s.",
		"Thanks, that sounds great!",
		"I switched to a vegetarian diet two months ago and I feel much better.",
		"Can you remind me to renew my passport before the trip to %[2]s in June?",
		"The apartment in %[2]s has a small balcony, which is why I liked it.",
	}
	ingestZH = []string{
		"我上周六和张伟去了杭州，看了西湖。",
		"老张说他下个月要搬到%[2]s去工作。",
		"因为项目延期，所以我们把发布推迟到了三月。",
		"我昨天开始学游泳，教练是%[1]s推荐的。",
		"明天下午三点和李娜开会讨论预算。",
		"好的，谢谢！",
	}
	ingestAssistant = []string{
		"Noted. I will remind you the day before.",
		"That sounds like a good plan; I saved it to your notes.",
		"Got it. Do you want me to add it to your calendar?",
		"好的，我已经记下来了。",
	}
)

// benchSpan is the time the synthetic events spread over. Real chat
// history is spread over weeks; packing thousands of events into one
// second apart would put every fact of a bank inside one 24-hour temporal
// link window, a load no real agent produces.
const benchSpan = 90 * 24 * time.Hour

// genEvents builds n events of realistic chat size: 2-6 messages of 40-400
// characters, over banks×conversations, about one in five in Chinese,
// spread evenly over benchSpan.
func genEvents(n, banks int, seed uint64, prefix string, t0 time.Time) []benchEvent {
	r := mrand.New(mrand.NewPCG(seed, 0x5eed))
	out := make([]benchEvent, n)
	step := benchSpan / time.Duration(max(n, 1))
	for i := range out {
		bank := fmt.Sprintf("%sbank-%02d", prefix, r.IntN(banks))
		doc := fmt.Sprintf("conv-%03d", r.IntN(40))
		zh := r.IntN(5) == 0
		at := t0.Add(time.Duration(i) * step)
		nmsg := 2 + r.IntN(5)
		var msgs []map[string]string
		for m := 0; m < nmsg; m++ {
			target := 40 + r.IntN(361)
			var sb strings.Builder
			role, name := "user", ingestNames[r.IntN(len(ingestNames))]
			pool := ingestEN
			if zh {
				pool = ingestZH
			}
			if m%2 == 1 {
				role, name, pool = "assistant", "", ingestAssistant
			}
			for sb.Len() < target {
				if sb.Len() > 0 {
					sb.WriteByte(' ')
				}
				s := pool[r.IntN(len(pool))]
				if strings.Contains(s, "%[") {
					s = fmt.Sprintf(s, ingestNames[r.IntN(len(ingestNames))], ingestPlaces[r.IntN(len(ingestPlaces))])
				}
				sb.WriteString(s)
			}
			msgs = append(msgs, map[string]string{"role": role, "name": name, "content": sb.String(),
				"timestamp": at.Add(time.Duration(m) * 7 * time.Second).Format(time.RFC3339)})
		}
		id := fmt.Sprintf("%se%07d", prefix, i)
		v, _ := json.Marshal(map[string]any{"bank_id": bank, "event_id": id, "document_id": doc, "messages": msgs,
			"tags": []string{"bench"}})
		out[i] = benchEvent{key: bank + "/" + doc, id: id, bank: bank, value: v}
	}
	return out
}

// persistClock wraps the store and notes when each event's transaction
// committed (or its dead letter was counted): the "persisted" end of the
// end-to-end latency, and the completion signal of the run.
type persistClock struct {
	pipeline.Persister
	mu    sync.Mutex
	at    map[string]time.Time
	done  atomic.Int64
	dead  atomic.Int64
	facts atomic.Int64
}

func newPersistClock(p pipeline.Persister) *persistClock {
	return &persistClock{Persister: p, at: map[string]time.Time{}}
}

func (c *persistClock) PersistBatch(ctx context.Context, evs []store.EventRecord) (store.PersistResult, error) {
	res, err := c.Persister.PersistBatch(ctx, evs)
	if err == nil {
		now := time.Now()
		c.mu.Lock()
		for _, ev := range evs {
			if _, seen := c.at[ev.EventKey]; !seen {
				c.at[ev.EventKey] = now
				c.done.Add(1)
				c.facts.Add(int64(len(ev.Facts)))
			}
		}
		c.mu.Unlock()
	}
	return res, err
}

func (c *persistClock) RecordDeadLetter(ctx context.Context, topic string, partition int32, offset int64, bankID, class, stage string) error {
	c.dead.Add(1)
	return c.Persister.RecordDeadLetter(ctx, topic, partition, offset, bankID, class, stage)
}

func (c *persistClock) when(key string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.at[key]
	return t, ok
}

// firstSubmit passes records to the pipeline and notes when the first one
// arrived, so the consumer group's join time is not counted as ingest time.
type firstSubmit struct {
	*pipeline.Pipeline
	once sync.Once
	at   atomic.Pointer[time.Time]
}

func (f *firstSubmit) Submit(ctx context.Context, m pipeline.Message) error {
	f.once.Do(func() { now := time.Now(); f.at.Store(&now) })
	return f.Pipeline.Submit(ctx, m)
}

// ingestRig is one broker + pipeline + consumer, wired as app.start wires
// them, with offline providers unless an extractor is given.
type ingestRig struct {
	cluster *kfake.Cluster
	prod    *kgo.Client
	pipe    *pipeline.Pipeline
	cons    *consumer.Consumer
	clock   *persistClock
	sink    *firstSubmit
	reg     *prometheus.Registry
	cancel  context.CancelFunc
	done    chan error
	pdone   chan error
	topic   string
	emb     *timedEmbedder
}

func startRig(ctx context.Context, env *benchEnv, f IngestConfig, ex pipeline.Extractor, reg *prometheus.Registry) (*ingestRig, error) {
	cfg := env.cfg
	topic, dlqTopic := cfg.Kafka.Topics[0], cfg.Kafka.DLQTopic
	rig := &ingestRig{topic: topic, reg: reg, done: make(chan error, 1), pdone: make(chan error, 1)}
	var err error
	rig.cluster, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(f.Partitions), topic, dlqTopic))
	if err != nil {
		return nil, fmt.Errorf("kfake: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			rig.stop()
		}
	}()
	rig.prod, err = broker.NewProducer(broker.ProducerDeps{}, broker.ProducerConfig{Brokers: rig.cluster.ListenAddrs(), ClientID: "bench-producer"})
	if err != nil {
		return nil, err
	}
	inner, err := env.deps.NewEmbedder(env.provider, env.cfg.Embed.Dim)
	if err != nil {
		return nil, err
	}
	rig.emb = &timedEmbedder{Embedder: inner}
	gate, err := defense.NewGate(defense.GateDeps{Registerer: reg, Logger: env.log}, defense.GateConfig{FingerprintSalt: []byte("bench-ingest-fingerprint-salt"),
		Scanner: defense.ScannerConfig{EnableEmail: cfg.Defense.EnableEmail, EnablePhone: cfg.Defense.EnablePhone}})
	if err != nil {
		return nil, err
	}
	res, err := pipeline.NewStoreResolver(pipeline.StoreResolverDeps{Source: env.st})
	if err != nil {
		return nil, err
	}
	policies, err := pipeline.NewCachedPolicies(pipeline.PolicyDeps{Loader: env.st}, pipeline.PolicyConfig{Base: env.deps.BasePolicy, TTL: 5 * time.Second})
	if err != nil {
		return nil, err
	}
	dl, err := broker.NewDeadLetters(broker.DeadLetterDeps{Client: rig.prod}, broker.DeadLetterConfig{Topic: dlqTopic})
	if err != nil {
		return nil, err
	}
	if ex == nil {
		if ex, err = extract.NewOffline(extract.OfflineConfig{}); err != nil {
			return nil, err
		}
	}
	rig.clock = newPersistClock(env.st)
	rig.pipe, err = pipeline.New(pipeline.Deps{Gate: gate, Policies: policies, Extractor: ex,
		Embedder: rig.emb, Resolver: res, Store: rig.clock, DeadLetter: dl, Registerer: reg, Logger: env.log},
		pipeline.Config{
			Lanes: f.Lanes, ChannelSize: cfg.Pipeline.ChannelSize, BatchSize: f.BatchSize, BatchWait: cfg.Pipeline.BatchWait,
			ChunkMaxChars: cfg.Pipeline.ChunkMaxChars, MaxEventBytes: cfg.Kafka.MaxEventBytes, MaxRetries: cfg.Pipeline.MaxRetries,
			LongEventBytes: cfg.Pipeline.LongEventBytes, LongLanes: cfg.Pipeline.LongLanes, UnitChunks: cfg.Pipeline.UnitChunks,
			MaxFactsPerEvent: cfg.Pipeline.MaxFactsPerEvent, MaxFactsPerChunk: cfg.Pipeline.MaxFactsPerChunk,
		})
	if err != nil {
		return nil, err
	}
	rig.sink = &firstSubmit{Pipeline: rig.pipe}
	rig.cons, err = consumer.New(consumer.Deps{Sink: rig.sink, Registerer: reg, Logger: env.log}, consumer.Config{
		Brokers: rig.cluster.ListenAddrs(), Topics: []string{topic}, Group: cfg.Kafka.Group, ClientID: "bench-ingest",
		MaxInflightRecords: cfg.Kafka.MaxInflightRecords, MaxInflightBytes: cfg.Kafka.MaxInflightBytes,
		CommitInterval: cfg.Kafka.CommitInterval, ShutdownTimeout: cfg.Kafka.ShutdownTimeout, LagInterval: time.Minute,
	})
	if err != nil {
		return nil, err
	}
	ok = true
	return rig, nil
}

func (r *ingestRig) run(ctx context.Context) {
	cctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	go func() { r.pdone <- r.pipe.Run(cctx) }()
	go func() { r.done <- r.cons.Run(cctx) }()
}

func (r *ingestRig) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if r.cancel != nil {
		_ = r.cons.Stop(ctx)
		<-r.done
		_ = r.pipe.Stop(ctx)
		r.cancel()
		<-r.pdone
	} else if r.pipe != nil {
		_ = r.pipe.Stop(ctx)
	}
	if r.prod != nil {
		r.prod.Close()
	}
	if r.cluster != nil {
		r.cluster.Close()
	}
}

// produce writes events with their produce time as the record timestamp.
func (r *ingestRig) produce(ctx context.Context, evs []benchEvent) (map[string]time.Time, error) {
	sent := make(map[string]time.Time, len(evs))
	const chunk = 2000
	for lo := 0; lo < len(evs); lo += chunk {
		hi := min(lo+chunk, len(evs))
		recs := make([]*kgo.Record, 0, hi-lo)
		now := time.Now()
		for _, ev := range evs[lo:hi] {
			recs = append(recs, &kgo.Record{Topic: r.topic, Key: []byte(ev.key), Value: ev.value, Timestamp: now})
			sent[ev.id] = now
		}
		if err := r.prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return nil, fmt.Errorf("produce: %w", err)
		}
	}
	return sent, nil
}

// waitDone waits until want events are persisted or dead-lettered,
// printing progress.
func (r *ingestRig) waitDone(ctx context.Context, want int64, label string, stderr io.Writer) error {
	start := time.Now()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	last := time.Now()
	for {
		n := r.clock.done.Load() + r.clock.dead.Load()
		if n >= want {
			return nil
		}
		if time.Since(last) >= 3*time.Second {
			el := time.Since(start).Seconds()
			fmt.Fprintf(stderr, "  %s: %d/%d events (%.0f/s), %d facts\n", label, n, want, float64(n)/el, r.clock.facts.Load())
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-r.done:
			r.cancel = nil
			return fmt.Errorf("consumer stopped: %v", err)
		case <-tick.C:
		}
	}
}

// sinceFirst is the time from the first record reaching the pipeline to
// the last persist.
func (r *ingestRig) sinceFirst() float64 {
	first := r.sink.at.Load()
	if first == nil {
		return 0
	}
	r.clock.mu.Lock()
	defer r.clock.mu.Unlock()
	var last time.Time
	for _, t := range r.clock.at {
		if t.After(last) {
			last = t
		}
	}
	return last.Sub(*first).Seconds()
}

// stageSeconds sums the pipeline's per-stage time from its histogram: where
// the run's time went.
func (r *ingestRig) stageSeconds() map[string]float64 {
	out := map[string]float64{}
	mfs, _ := r.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "memstream_pipeline_stage_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "stage" {
					out[l.GetValue()] = m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	return out
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return sorted[i]
}

// ingestResult is the JSON line of the offline mode.
type ingestResult struct {
	Bench         string  `json:"bench"`
	Mode          string  `json:"mode"`
	Events        int     `json:"events"`
	DeadLettered  int64   `json:"dead_lettered"`
	Facts         int64   `json:"facts"`
	Seconds       float64 `json:"seconds"`
	EventsPerS    float64 `json:"events_per_s"`
	FactsPerS     float64 `json:"facts_per_s"`
	LatencyEvents int     `json:"latency_events"`
	LatencyRatePS float64 `json:"latency_offered_events_per_s"`
	P50Ms         float64 `json:"p50_ms"`
	P99Ms         float64 `json:"p99_ms"`
	CopyRows      int64   `json:"copy_rows"`
	CopySeconds   float64 `json:"copy_seconds"`
	CopyRowsPerS  float64 `json:"copy_rows_per_s"`
	RatioToCopy   float64 `json:"ratio_to_copy"`
	Lanes         int     `json:"lanes"`
	BatchSize     int     `json:"batch_size"`
	Partitions    int     `json:"partitions"`
	EmbedDim      int     `json:"embed_dim"`
	Embedder      string  `json:"embedder"`
	// EmbedSeconds is the time the lanes spent in the embedder in phase 1,
	// summed over lanes; EmbedMsPerFact divides it by the texts embedded.
	EmbedSeconds   float64 `json:"embed_seconds"`
	EmbedMsPerFact float64 `json:"embed_ms_per_fact"`
	PostgresServer string  `json:"postgres"`
	// StageSeconds is the time the lanes spent per stage in phase 1,
	// summed over lanes: what bounds the rate.
	StageSeconds map[string]float64 `json:"stage_seconds"`
}

func benchIngestOffline(ctx context.Context, env *benchEnv, f IngestConfig, stdout, stderr io.Writer) (res ingestResult, err error) {
	t0 := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	evs := genEvents(f.Events, f.Banks, f.Seed, "", t0)
	rig, err := startRig(ctx, env, f, nil, prometheus.NewRegistry())
	if err != nil {
		return res, err
	}
	defer rig.stop()

	// Phase 1, throughput: the whole backlog is in Kafka before the
	// consumer starts, so the pipeline runs flat out.
	fmt.Fprintf(stderr, "bench ingest: producing %d events\n", len(evs))
	if _, err := rig.produce(ctx, evs); err != nil {
		return res, err
	}
	fmt.Fprintln(stderr, "bench ingest: phase 1 (throughput): consuming the backlog")
	rig.run(ctx)
	if err := rig.waitDone(ctx, int64(len(evs)), "throughput", stderr); err != nil {
		return res, err
	}
	elapsed := rig.sinceFirst()
	res = ingestResult{Bench: "ingest", Mode: "offline", Events: len(evs), DeadLettered: rig.clock.dead.Load(), Seconds: elapsed,
		Lanes: f.Lanes, BatchSize: f.BatchSize, Partitions: f.Partitions, EmbedDim: env.cfg.Embed.Dim, PostgresServer: env.pgMajor}
	if res.Facts, err = env.st.UnitCount(ctx, ""); err != nil {
		return res, fmt.Errorf("count facts: %w", err)
	}
	res.StageSeconds = rig.stageSeconds()
	res.Embedder = embedderName(rig.emb.Embedder)
	if n := rig.emb.texts.Load(); n > 0 {
		res.EmbedSeconds = float64(rig.emb.nanos.Load()) / 1e9
		res.EmbedMsPerFact = res.EmbedSeconds * 1000 / float64(n)
	}
	res.EventsPerS = float64(rig.clock.done.Load()) / elapsed
	res.FactsPerS = float64(res.Facts) / elapsed

	// Baseline: COPY the rows the run produced into a fresh copy of the
	// same indexed table, in the same database, right now.
	fmt.Fprintf(stderr, "bench ingest: baseline: COPY %d memory_units rows into a fresh indexed copy\n", res.Facts)
	var took time.Duration
	res.CopyRows, took, err = env.st.CopyBaseline(ctx, f.Lanes)
	res.CopySeconds = took.Seconds()
	if err != nil {
		return res, err
	}
	res.CopyRowsPerS = float64(res.CopyRows) / res.CopySeconds
	res.RatioToCopy = res.FactsPerS / res.CopyRowsPerS

	// Phase 2, latency: a paced stream at half the measured throughput,
	// produce timestamp → transaction committed, per event.
	rate := max(res.EventsPerS/2, 1)
	lat := genEvents(f.LatencyEvents, f.Banks, f.Seed+1, "lat-", t0.Add(benchSpan))
	res.LatencyEvents, res.LatencyRatePS = len(lat), rate
	fmt.Fprintf(stderr, "bench ingest: phase 2 (latency): %d events paced at %.0f/s\n", len(lat), rate)
	sent := make(map[string]time.Time, len(lat))
	interval := time.Duration(float64(time.Second) / rate)
	before := rig.clock.done.Load() + rig.clock.dead.Load()
	next := time.Now()
	for i, ev := range lat {
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		next = next.Add(interval)
		now := time.Now()
		sent[ev.id] = now
		rig.prod.Produce(ctx, &kgo.Record{Topic: rig.topic, Key: []byte(ev.key), Value: ev.value, Timestamp: now}, nil)
		if i%500 == 499 {
			fmt.Fprintf(stderr, "  latency: produced %d/%d\n", i+1, len(lat))
		}
	}
	if err := rig.prod.Flush(ctx); err != nil {
		return res, err
	}
	if err := rig.waitDone(ctx, before+int64(len(lat)), "latency", stderr); err != nil {
		return res, err
	}
	var ms []float64
	for id, at := range sent {
		if done, ok := rig.clock.when(id); ok {
			ms = append(ms, float64(done.Sub(at).Microseconds())/1000)
		}
	}
	slices.Sort(ms)
	res.P50Ms, res.P99Ms = percentile(ms, 0.50), percentile(ms, 0.99)

	b, _ := json.Marshal(res)
	fmt.Fprintln(stdout, string(b))
	fmt.Fprintf(stderr, `
ingest (offline extractor, %s embedder, %d-d embeddings, PostgreSQL %s, %d lanes × batch %d, %d partitions)
  events        %d in %.1fs → %.0f events/s (%d dead-lettered)
  facts         %d → %.0f facts/s
  latency       p50 %.0f ms, p99 %.0f ms (produce → committed; %d events at %.0f/s)
  COPY baseline %d rows in %.2fs → %.0f rows/s into the same indexed table, one connection per lane
  ratio_to_copy %.2f (target ≥ 0.70)
  lane time     prepare %.1fs, extract+embed %.1fs (embed alone %.1fs, %.2f ms per fact), persist %.1fs (summed over lanes)
`, res.Embedder, res.EmbedDim, res.PostgresServer, res.Lanes, res.BatchSize, res.Partitions, res.Events, res.Seconds, res.EventsPerS, res.DeadLettered,
		res.Facts, res.FactsPerS, res.P50Ms, res.P99Ms, res.LatencyEvents, res.LatencyRatePS, res.CopyRows, res.CopySeconds, res.CopyRowsPerS, res.RatioToCopy,
		res.StageSeconds["prepare"], res.StageSeconds["extract"], res.EmbedSeconds, res.EmbedMsPerFact, res.StageSeconds["persist"])
	return res, nil
}

// embedderName is the provider's own name, or its type.
func embedderName(e embed.Embedder) string {
	if n, ok := e.(interface{ Name() string }); ok {
		return n.Name()
	}
	return fmt.Sprintf("%T", e)
}

// llmRun is one concurrency × chunks-per-call point of the LLM mode.
type llmRun struct {
	Concurrency   int     `json:"concurrency"`
	ChunksPerCall int     `json:"chunks_per_call"`
	Events        int     `json:"events"`
	Facts         int64   `json:"facts"`
	Calls         int64   `json:"llm_calls"`
	Seconds       float64 `json:"seconds"`
	EventsPerS    float64 `json:"events_per_s"`
	// IdealEventsPerS is what the LLM alone allows: concurrency ×
	// chunks per call / latency, at about one chunk per event.
	IdealEventsPerS float64 `json:"ideal_events_per_s"`
	SpeedupVsC1     float64 `json:"speedup_vs_concurrency_1"`
}

func benchIngestLLM(ctx context.Context, env *benchEnv, f IngestConfig, stdout, stderr io.Writer) error {
	var calls atomic.Int64
	srv := fakeLLM(f.LLMLatency, &calls)
	defer srv.Close()
	t0 := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	var runs []llmRun
	base := map[int]float64{}
	for _, cpc := range f.LLMChunksPerCall {
		for _, c := range f.LLMConcurrency {
			ideal := float64(c*cpc) / f.LLMLatency.Seconds()
			// About 10 s of LLM time per point, bounded by --events.
			n := min(max(int(ideal*10), 50), f.Events)
			prefix := fmt.Sprintf("c%d-k%d-", c, cpc)
			reg := prometheus.NewRegistry()
			ex, err := llm.New(llm.Deps{Registerer: reg, Logger: env.log}, llm.Config{BaseURL: srv.URL + "/v1", APIKey: "bench", Model: "bench-fake", Concurrency: c,
				ChunksPerCall: cpc, Timeout: f.LLMLatency*10 + 5*time.Second, MaxRetries: 2})
			if err != nil {
				return err
			}
			rig, err := startRig(ctx, env, f, ex, reg)
			if err != nil {
				ex.Close()
				return err
			}
			evs := genEvents(n, f.Banks, f.Seed, prefix, t0)
			if _, err := rig.produce(ctx, evs); err != nil {
				rig.stop()
				ex.Close()
				return err
			}
			fmt.Fprintf(stderr, "bench ingest: llm concurrency %d, %d chunks/call: %d events\n", c, cpc, n)
			before := calls.Load()
			rig.run(ctx)
			err = rig.waitDone(ctx, int64(n), fmt.Sprintf("c=%d k=%d", c, cpc), stderr)
			el := rig.sinceFirst()
			rig.stop()
			ex.Close()
			if err != nil {
				return err
			}
			run := llmRun{Concurrency: c, ChunksPerCall: cpc, Events: n, Facts: rig.clock.facts.Load(), Calls: calls.Load() - before,
				Seconds: el, EventsPerS: float64(n) / el, IdealEventsPerS: ideal}
			if _, ok := base[cpc]; !ok {
				base[cpc] = run.EventsPerS
			}
			run.SpeedupVsC1 = run.EventsPerS / base[cpc]
			runs = append(runs, run)
			fmt.Fprintf(stderr, "  → %.1f events/s (LLM-only bound %.1f), %d calls, ×%.1f vs first concurrency\n", run.EventsPerS, ideal, run.Calls, run.SpeedupVsC1)
		}
	}
	b, _ := json.Marshal(map[string]any{"bench": "ingest", "mode": "llm", "llm_latency_ms": f.LLMLatency.Milliseconds(),
		"lanes": f.Lanes, "batch_size": f.BatchSize, "runs": runs})
	fmt.Fprintln(stdout, string(b))
	fmt.Fprintf(stderr, "\ningest with a fake LLM at %s per call (%d lanes × batch %d)\n  conc  chunks/call  events  events/s  LLM bound  speedup\n", f.LLMLatency, f.Lanes, f.BatchSize)
	for _, r := range runs {
		fmt.Fprintf(stderr, "  %4d  %11d  %6d  %8.1f  %9.1f  ×%.1f\n", r.Concurrency, r.ChunksPerCall, r.Events, r.EventsPerS, r.IdealEventsPerS, r.SpeedupVsC1)
	}
	return nil
}
