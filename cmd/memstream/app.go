package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	rungroup "github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	openai "github.com/sashabaranov/go-openai"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kprom"

	"github.com/memstream/memstream/bankindex"
	"github.com/memstream/memstream/broker"
	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/console"
	"github.com/memstream/memstream/consolidate"
	"github.com/memstream/memstream/consumer"
	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/extract"
	"github.com/memstream/memstream/internal/lifetime"
	"github.com/memstream/memstream/llm"
	"github.com/memstream/memstream/llmtrace"
	"github.com/memstream/memstream/mcpserver"
	"github.com/memstream/memstream/ops"
	"github.com/memstream/memstream/pgserver"
	"github.com/memstream/memstream/pipeline"
	"github.com/memstream/memstream/priority"
	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/recallapi"
	"github.com/memstream/memstream/reflect"
	"github.com/memstream/memstream/rerank"
	"github.com/memstream/memstream/retention"
	"github.com/memstream/memstream/simscale"
	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/tokens"
)

// app is the wired process: main builds it, runs it and stops it.
type app struct {
	cfg config.Config
	log *slog.Logger
	reg *prometheus.Registry
	pg  *pgserver.Server
	st  *store.Store
	// readSt is database.read_url's server (a streaming replica) that the
	// API's recall reads from; nil reads from st.
	readSt *store.Store
	kafka  *broker.Embedded
	prod   *kgo.Client
	pipe   *pipeline.Pipeline
	cons   *consumer.Consumer
	api    *recallapi.Server
	// worker consolidates (when runWorker) and refreshes mental models.
	worker    *consolidate.Worker
	runWorker bool
	// bankIdx keeps the largest banks' own HNSW indexes (worker role).
	bankIdx *bankindex.Maintainer
	// trace records the LLM requests of every bank (nil:
	// llm.trace_max_per_bank 0).
	trace *llmtrace.Recorder
	// prune bounds the trace and the audit tables (every role).
	prune *retention.Pruner
	ops   *ops.Server
	// apiAddr receives the bound HTTP address once listening.
	apiAddr chan string
}

// openStore starts the managed PostgreSQL server when configured, connects
// and migrates.
func openStore(ctx context.Context, cfg config.Config, log *slog.Logger) (*store.Store, *pgserver.Server, error) {
	url := cfg.Database.URL
	var pg *pgserver.Server
	if cfg.Database.Embedded() {
		var err error
		pg, err = pgserver.Start(ctx, pgserver.Deps{Logger: log}, pgserver.Config{DataDir: cfg.PostgresDataDir(), Port: cfg.Database.EmbeddedPort})
		if err != nil {
			return nil, nil, fmt.Errorf("database.url embedded: %w", err)
		}
		url = pg.URL()
	}
	st, err := store.Open(ctx, store.Deps{Logger: log}, store.Config{URL: url, MaxConns: cfg.Database.MaxConns, Dim: cfg.Embed.Dim, Embedder: embed.Key(cfg.Embed)})
	if err != nil {
		return nil, pg, err
	}
	if _, err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, pg, err
	}
	return st, pg, nil
}

// commandStore loads the configuration and opens the store for a one-shot
// command (migrate, consolidate, export, defense rescan). The returned
// close function closes the pool and stops a managed server it started,
// unless another process (serve) uses that server by then; a server it
// found running is never stopped.
func commandStore(ctx context.Context, path string, sets overrides, stderr io.Writer) (config.Config, *slog.Logger, *store.Store, func(), error) {
	cfg, err := loadConfig(path, sets)
	if err != nil {
		return cfg, nil, nil, nil, err
	}
	log := cfg.Log.NewLogger(stderr)
	st, pg, err := openStore(ctx, cfg, log)
	closeAll := func() {
		if st != nil {
			st.Close()
		}
		if pg != nil {
			// A one-shot command beside a running server reused that
			// server: it stops only one it started, and only if nobody
			// started using it meanwhile.
			_ = pg.Release(context.WithoutCancel(ctx))
		}
	}
	if err != nil {
		closeAll()
		return cfg, log, nil, nil, err
	}
	return cfg, log, st, closeAll, nil
}

// newGate builds the defense gate with the database's fingerprint salt
// (or the configured one), so that serve, every replica and a rescan
// fingerprint the same value alike.
func newGate(ctx context.Context, cfg config.Config, st *store.Store, reg prometheus.Registerer, log *slog.Logger) (*defense.Gate, error) {
	salt := cfg.Defense.AuditSalt
	if salt == "" {
		var err error
		if salt, err = st.AuditSalt(ctx); err != nil {
			return nil, err
		}
	}
	return defense.NewGate(defense.GateDeps{Registerer: reg, Logger: log}, defense.GateConfig{FingerprintSalt: []byte(salt),
		Scanner: defense.ScannerConfig{EnableEmail: cfg.Defense.EnableEmail, EnablePhone: cfg.Defense.EnablePhone}})
}

func basePolicy(cfg config.Config) defense.Policy {
	return defense.Policy{Default: defense.Action(cfg.Defense.DefaultAction), EnableEmail: cfg.Defense.EnableEmail, EnablePhone: cfg.Defense.EnablePhone}
}

// start wires every component the roles need. On error it stops what it
// already started.
func start(ctx context.Context, cfg config.Config, rl config.Roles, reg *prometheus.Registry, log *slog.Logger) (a *app, err error) {
	a = &app{cfg: cfg, log: log, reg: reg, apiAddr: make(chan string, 1)}
	defer func() {
		if err != nil {
			a.stop(context.Background())
		}
	}()
	a.st, a.pg, err = openStore(ctx, cfg, log)
	if err != nil {
		return a, err
	}
	brokers := cfg.Kafka.Brokers
	topics := append(append([]string{}, cfg.Kafka.Topics...), cfg.Kafka.DLQTopic)
	if cfg.Kafka.Embedded() {
		a.kafka, err = broker.StartEmbedded(broker.EmbeddedDeps{Logger: log}, broker.EmbeddedConfig{Addr: cfg.Kafka.EmbeddedAddr,
			DataDir: cfg.KafkaDataDir(), Topics: topics, Partitions: cfg.Kafka.EmbeddedPartitions})
		if err != nil {
			return a, err
		}
		brokers = []string{a.kafka.Addr()}
	}
	prodMetrics := kprom.NewMetrics("memstream_kafka", kprom.Registerer(reg), kprom.WithClientLabel())
	a.prod, err = broker.NewProducer(broker.ProducerDeps{Hooks: []kgo.Hook{prodMetrics}}, broker.ProducerConfig{Brokers: brokers, ClientID: cfg.Kafka.ClientID + "-producer"})
	if err != nil {
		return a, fmt.Errorf("kafka.brokers: %w", err)
	}
	if err := broker.EnsureTopics(ctx, a.prod, int32(cfg.Kafka.EmbeddedPartitions), topics...); err != nil {
		log.Warn("could not ensure topics (they may be managed externally)", slog.Any("error", err))
	}
	emb, err := embed.FromConfig(cfg.Embed)
	if err != nil {
		return a, err
	}
	scale, err := simscale.Load(ctx, a.st, emb, embed.Key(cfg.Embed))
	if err != nil {
		return a, fmt.Errorf("embed: %w", err)
	}
	gate, err := newGate(ctx, cfg, a.st, reg, log)
	if err != nil {
		return a, err
	}
	llmGate, err := newLLMGate(cfg, reg)
	if err != nil {
		return a, err
	}
	// Also without an LLM: what an earlier run with one recorded is still
	// pruned (offline sends no requests, so nothing new is recorded).
	if a.trace, err = llmtrace.New(llmtrace.Deps{Store: a.st, Registerer: reg, Logger: log.With("component", "llmtrace")}, llmtrace.Config{
		Provider: cfg.LLM.Provider, Model: cfg.LLM.Model, Retention: cfg.LLM.TraceRetention, MaxPerBank: cfg.LLM.TraceMaxPerBank}); err != nil {
		return a, err
	}
	// Every process prunes, whatever its roles (see package retention).
	if a.prune, err = retention.New(retention.Deps{Registerer: reg, Logger: log.With("component", "retention")}, retention.Config{},
		llmtrace.RetentionRule(a.trace, a.st, cfg.LLM.TraceRetention),
		retention.Age("audit_log", cfg.HTTP.AuditRetention, a.st.PruneAudit),
		retention.Age("defense_audit", cfg.Defense.AuditRetention, a.st.PruneDefenseAudit)); err != nil {
		return a, err
	}
	// Reflect and consolidation reach the LLM holding a slot of the gate,
	// each request recorded in its bank's trace.
	llmHTTP := llmGate.HTTPClient(a.trace.Transport(nil))
	policies, err := pipeline.NewCachedPolicies(pipeline.PolicyDeps{Loader: a.st}, pipeline.PolicyConfig{Base: basePolicy(cfg), TTL: 5 * time.Second})
	if err != nil {
		return a, err
	}
	var ex pipeline.Extractor
	if rl.Ingest || rl.API {
		if ex, err = newExtractor(cfg, llmGate, a.trace, reg, log); err != nil {
			return a, err
		}
	}
	if rl.Ingest {
		res, err := pipeline.NewStoreResolver(pipeline.StoreResolverDeps{Source: a.st})
		dl, dlErr := broker.NewDeadLetters(broker.DeadLetterDeps{Client: a.prod}, broker.DeadLetterConfig{Topic: cfg.Kafka.DLQTopic})
		if err = errors.Join(err, dlErr); err != nil {
			return a, err
		}
		a.pipe, err = pipeline.New(pipeline.Deps{Gate: gate, Policies: policies, Extractor: ex, Embedder: emb, Resolver: res, Store: a.st,
			DeadLetter: dl, Registerer: reg, Logger: log},
			pipeline.Config{
				Lanes: cfg.Pipeline.PersistWorkers, ChannelSize: cfg.Pipeline.ChannelSize, BatchSize: cfg.Pipeline.BatchSize,
				BatchWait: cfg.Pipeline.BatchWait, ChunkMaxChars: cfg.Pipeline.ChunkMaxChars, MaxEventBytes: cfg.Kafka.MaxEventBytes,
				MaxRetries: cfg.Pipeline.MaxRetries, LongEventBytes: cfg.Pipeline.LongEventBytes, LongLanes: cfg.Pipeline.LongLanes,
				UnitChunks: cfg.Pipeline.UnitChunks, MaxEventSeconds: time.Duration(cfg.Pipeline.MaxEventSeconds) * time.Second,
				MaxFactsPerEvent: cfg.Pipeline.MaxFactsPerEvent, MaxFactsPerChunk: cfg.Pipeline.MaxFactsPerChunk,
			})
		if err != nil {
			return a, err
		}
		consMetrics := kprom.NewMetrics("memstream_kafka_consumer", kprom.Registerer(reg))
		a.cons, err = consumer.New(consumer.Deps{Sink: a.pipe, Registerer: reg, Logger: log, Opts: []kgo.Opt{kgo.WithHooks(consMetrics)}},
			consumer.Config{
				Brokers: brokers, Topics: cfg.Kafka.Topics, Group: cfg.Kafka.Group, ClientID: cfg.Kafka.ClientID,
				MaxInflightRecords: cfg.Kafka.MaxInflightRecords, MaxInflightBytes: cfg.Kafka.MaxInflightBytes,
				CommitInterval: cfg.Kafka.CommitInterval, ShutdownTimeout: cfg.Kafka.ShutdownTimeout, LagInterval: 15 * time.Second,
			})
		if err != nil {
			return a, err
		}
	}
	// One token counter, so recall's and reflect's budgets agree.
	tok, err := tokens.New(tokens.Config{})
	if err != nil {
		return a, err
	}
	var rc, workerRC *recall.Recaller
	if rl.API || rl.Worker {
		rdeps := recall.Deps{Store: a.st, Embedder: emb, Clock: a.st, Tokens: tok, Registerer: reg, Logger: log}
		rcfg := recall.Config{Scale: scale}
		if cfg.Rerank.Provider == "http" {
			rr, err := rerank.NewHTTP(rerank.HTTPDeps{}, rerank.Config{URL: cfg.Rerank.URL, APIKey: cfg.Rerank.APIKey, Model: cfg.Rerank.Model, Timeout: cfg.Rerank.Timeout})
			if err != nil {
				return a, err
			}
			rdeps.Reranker = rr
		}
		// With a read replica, the API's recall reads from it; the worker
		// keeps reading the primary, where consolidation has just written.
		if rl.API && cfg.Database.ReadURL != "" {
			if a.readSt, err = store.Open(ctx, store.Deps{Logger: log.With("database", "read_url")}, store.Config{URL: cfg.Database.ReadURL, MaxConns: cfg.Database.MaxConns, Dim: cfg.Embed.Dim}); err != nil {
				return a, fmt.Errorf("database.read_url: %w", err)
			}
			wdeps := rdeps
			wdeps.Registerer = nil
			if workerRC, err = recall.New(wdeps, rcfg); err != nil {
				return a, err
			}
			rdeps.Store = a.readSt
		}
		if rc, err = recall.New(rdeps, rcfg); err != nil {
			return a, err
		}
		if workerRC == nil {
			workerRC = rc
		}
	}
	// The worker role runs consolidation; the api role needs the same
	// worker for on-demand mental-model refreshes.
	if (rl.Worker && cfg.Consolidation.Enabled) || rl.API {
		if a.worker, err = newConsolidationWorker(cfg, a.st, emb, scale, workerRC, llmHTTP, reg, log, nil); err != nil {
			return a, err
		}
		a.runWorker = rl.Worker && cfg.Consolidation.Enabled
	}
	if rl.Worker {
		d := cfg.Database
		if a.bankIdx, err = bankindex.New(bankindex.Deps{Store: a.st, Logger: log.With("component", "bankindex"), Registerer: reg}, bankindex.Config{
			Interval: d.BankIndexInterval,
			Policy: store.BankIndexPolicy{MinFacts: d.BankIndexMinFacts, MaxIndexes: d.BankIndexMax,
				MaxShare: store.BankIndexMaxShare, BuildMemory: store.BankIndexBuildMemory}}); err != nil {
			return a, err
		}
	}
	if rl.API {
		rf, err := newReflector(cfg, rc, a.st, tok, llmHTTP, reg, log)
		if err != nil {
			return a, err
		}
		ready := map[string]recallapi.Readiness{}
		for name, check := range a.readiness(rl) {
			ready[name] = check
		}
		var checkLLM recallapi.LLMChecker // /…/health/llm: does the configured LLM answer?
		if cfg.LLM.Provider == "openai" {
			checkLLM = llm.Check(cfg.LLM.BaseURL, cfg.LLM.APIKey, a.trace.Transport(nil))
		}
		ui, err := console.Handler()
		if err != nil {
			return a, err
		}
		// Dead letters are shown with every detector on, email and phone
		// included, whatever the bank's policy.
		redactor, err := defense.NewScanner(defense.ScannerConfig{EnableEmail: true, EnablePhone: true})
		pub, pubErr := broker.NewPublisher(broker.PublisherDeps{Client: a.prod}, broker.PublisherConfig{Topic: cfg.Kafka.Topics[0]})
		archive, archiveErr := broker.NewDeadLetterArchive(broker.ArchiveDeps{Client: a.prod}, broker.ArchiveConfig{Brokers: brokers,
			ClientID: cfg.Kafka.ClientID + "-console", DLQTopic: cfg.Kafka.DLQTopic, DefaultTopic: cfg.Kafka.Topics[0]})
		if err = errors.Join(err, pubErr, archiveErr); err != nil {
			return a, err
		}
		a.api, err = recallapi.New(recallapi.Deps{Store: a.st, Recaller: rc, Publisher: pub, Gate: gate,
			Ready: ready, Gatherer: reg, Registerer: reg, Logger: log, OnPolicyChange: policies.Invalidate,
			Reflector: rf, Refresher: a.worker, Listener: a.st, Console: ui, Embedder: emb, Extractor: ex, CheckLLM: checkLLM,
			DeadLetters: archive, Redact: redactor.RedactAll}, recallapi.Config{
			Addr: cfg.HTTP.Addr, MaxBodyBytes: cfg.HTTP.MaxBodyBytes, RetainWait: cfg.HTTP.RetainWait, MaxEventBytes: cfg.Kafka.MaxEventBytes,
			ReadTimeout: cfg.HTTP.ReadTimeout, WriteTimeout: cfg.HTTP.WriteTimeout, Auth: cfg.Auth, BasePolicy: basePolicy(cfg), Version: version,
			OperationLease: cfg.HTTP.OperationLease, AllowPrivateWebhooks: cfg.Webhooks.AllowPrivate,
			LLMTrace: cfg.LLM.TraceMaxPerBank > 0, Worker: rl.Worker, AuditLogOff: !cfg.HTTP.AuditLogEnabled,
		})
		if err != nil {
			return a, err
		}
		// /mcp serves the same memory as an MCP server; its tools call the
		// API's own routes, with the caller's key.
		mcpSrv, err := mcpserver.New(mcpserver.Deps{API: a.api.Handler(), Auth: a.api, Registerer: reg, Logger: log.With("component", "mcp")},
			mcpserver.Config{Version: version, MaxRequestBytes: cfg.HTTP.MaxBodyBytes})
		if err != nil {
			return a, err
		}
		a.api.Mount("/mcp", mcpSrv.Handler())
		a.api.Mount("/mcp/", mcpSrv.Handler())
	} else {
		// Ingest- and worker-only replicas serve probes and metrics too.
		if a.ops, err = ops.New(ops.Deps{Gatherer: reg, Ready: a.readiness(rl)}, ops.Config{Addr: cfg.HTTP.Addr}); err != nil {
			return a, err
		}
	}
	return a, nil
}

// readiness lists the checks /health/ready runs for the roles: PostgreSQL
// for every role, the brokers only for ingest, so that a Kafka outage does
// not take API replicas serving recall out of their load balancer.
func (a *app) readiness(rl config.Roles) map[string]func(context.Context) error {
	ready := map[string]func(context.Context) error{"database": a.st.Ping}
	if a.readSt != nil {
		ready["read_database"] = a.readSt.Ping
	}
	if rl.Ingest {
		ready["kafka"] = func(ctx context.Context) error { return a.prod.Ping(ctx) }
		// A stuck lane or a provider refusing its key fails readiness,
		// naming the lane, record and error.
		ready["ingest"] = a.pipe.Ready
	}
	return ready
}

// newLLMGate is the one budget of concurrent calls to the configured LLM
// (llm.concurrency) that extraction, reflect and consolidation share, live
// calls ahead of consolidation's; nil without an LLM.
func newLLMGate(cfg config.Config, reg prometheus.Registerer) (*priority.Gate, error) {
	if cfg.LLM.Provider != "openai" {
		return nil, nil
	}
	g, err := priority.NewGate(priority.GateDeps{Registerer: reg}, priority.GateConfig{Name: "llm", Slots: cfg.LLM.Concurrency})
	if err != nil {
		return nil, fmt.Errorf("llm.concurrency: %w", err)
	}
	return g, nil
}

// newReflector builds reflect with the configured LLM (its calls through
// hc), or the offline extractive provider when none is configured.
func newReflector(cfg config.Config, rc *recall.Recaller, st *store.Store, tok *tokens.Counter, hc *http.Client, reg prometheus.Registerer, log *slog.Logger) (*reflect.Reflector, error) {
	var llm reflect.ChatCompleter
	if cfg.LLM.Provider == "openai" {
		oc := openai.DefaultConfig(cfg.LLM.APIKey)
		oc.BaseURL = cfg.LLM.BaseURL
		oc.HTTPClient = hc
		llm = openai.NewClientWithConfig(oc)
	}
	return reflect.New(reflect.Deps{Recaller: rc, Store: st, LLM: llm, Tokens: tok, Logger: log.With("component", "reflect"), Registerer: reg},
		reflect.Config{Model: cfg.LLM.Model, MaxIterations: cfg.Reflect.MaxIterations, Timeout: cfg.Reflect.Timeout,
			ContextTokens: cfg.Reflect.ContextTokens})
}

func newExtractor(cfg config.Config, gate *priority.Gate, trace *llmtrace.Recorder, reg prometheus.Registerer, log *slog.Logger) (pipeline.Extractor, error) {
	switch cfg.LLM.Provider {
	case "openai":
		ex, err := llm.New(llm.Deps{Registerer: reg, Logger: log.With("component", "llm"), Gate: gate, Trace: trace}, llm.Config{BaseURL: cfg.LLM.BaseURL, APIKey: cfg.LLM.APIKey, Model: cfg.LLM.Model,
			Concurrency: cfg.LLM.Concurrency, Timeout: cfg.LLM.Timeout, MaxRetries: cfg.LLM.MaxRetries,
			ChunksPerCall: cfg.LLM.ChunksPerCall})
		if err != nil {
			return nil, fmt.Errorf("llm: %w", err)
		}
		return ex, nil
	default:
		return extract.NewOffline(extract.OfflineConfig{})
	}
}

// run blocks until ctx ends or a component fails, then stops everything in
// order within one kafka.shutdown_timeout: readiness fails, the consumer
// stops fetching, drains, commits and leaves the group, the pipeline
// abandons (unacknowledged) whatever is still stuck, HTTP and the worker
// stop, then the clients, the pool and the database server close.
//
// Each component is an actor of a run group: the first to return (or the
// signal) interrupts all of them, in the order they are added, so the
// order above is the order of g.Add.
func (a *app) run(ctx context.Context) error {
	// The components run on their own context: cancelling it is the hard
	// stop at the end of the shutdown, not the signal.
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRun()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx)) // the shutdown deadline, set when it begins
	defer func() { cancel() }()
	sctxOf := func() context.Context { return sctx }
	var g rungroup.Group
	quit := make(chan struct{})
	g.Add(func() error {
		select {
		case <-ctx.Done():
		case <-quit:
		}
		return nil
	}, func(err error) {
		if err != nil {
			a.log.Error("component failed; shutting down", slog.Any("error", err))
		}
		sctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), a.cfg.Kafka.ShutdownTimeout)
		if a.api != nil {
			a.api.SetDraining()
		}
		if a.ops != nil {
			a.ops.SetDraining()
		}
		close(quit)
	})
	if a.cons != nil {
		g.Add(lifetime.Named("consumer", a.cons.Run, runCtx), func(error) {
			if err := a.cons.Stop(sctx); err != nil {
				a.log.Warn("consumer did not stop within kafka.shutdown_timeout", slog.Any("error", err))
			}
		})
	}
	if a.pipe != nil {
		g.Add(lifetime.Named("pipeline", a.pipe.Run, runCtx), func(error) {
			if err := a.pipe.Stop(sctx); err != nil {
				a.log.Warn("pipeline work abandoned at the shutdown deadline; Kafka redelivers it", slog.Any("error", err))
			}
		})
	}
	if a.api != nil {
		g.Add(lifetime.Named("http", func(ctx context.Context) error {
			addr, err := a.api.Listen()
			if err != nil {
				return err
			}
			a.apiAddr <- addr
			return a.api.Run(ctx)
		}, runCtx), lifetime.Interrupt("http", a.api.Stop, sctxOf, a.log))
	}
	if a.runWorker {
		g.Add(lifetime.Named("consolidation worker", a.worker.Run, runCtx), lifetime.Interrupt("consolidation worker", a.worker.Stop, sctxOf, a.log))
	}
	if a.bankIdx != nil {
		g.Add(lifetime.Named("bank index maintainer", a.bankIdx.Run, runCtx), lifetime.Interrupt("bank index maintainer", a.bankIdx.Stop, sctxOf, a.log))
	}
	if a.trace != nil {
		// After every caller of the LLM has stopped: it writes their last rows.
		g.Add(lifetime.Named("llm trace", a.trace.Run, runCtx), lifetime.Interrupt("llm trace", a.trace.Stop, sctxOf, a.log))
	}
	g.Add(lifetime.Named("retention", a.prune.Run, runCtx), lifetime.Interrupt("retention", a.prune.Stop, sctxOf, a.log))
	if a.ops != nil {
		g.Add(lifetime.Named("http", a.ops.Run, runCtx), lifetime.Interrupt("http", a.ops.Stop, sctxOf, a.log))
	}
	// Last: the hard stop of whatever is still running.
	g.Add(func() error { <-runCtx.Done(); return nil }, func(error) { cancelRun() })
	err := g.Run()
	a.stop(sctx)
	return err
}

// inProcess is a memstream with every role running in this process, for
// commands that talk to it as a client would (demo, eval run).
type inProcess struct {
	a      *app
	addr   string
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// serveInProcess starts every role and returns once the API listens.
func serveInProcess(ctx context.Context, cfg config.Config, log *slog.Logger) (*inProcess, error) {
	a, err := start(ctx, cfg, config.AllRoles, newRegistry(), log)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	p := &inProcess{a: a, cancel: cancel, done: make(chan error, 1)}
	go func() { p.done <- a.run(runCtx) }()
	select {
	case p.addr = <-a.apiAddr:
		return p, nil
	case err := <-p.done:
		cancel()
		return nil, fmt.Errorf("in-process memstream stopped before serving: %w", err)
	}
}

// wait blocks until the run ends (ctx ended or a component failed).
func (p *inProcess) wait() error {
	p.once.Do(func() { p.err = <-p.done })
	return p.err
}

// stop ends the run and waits for it.
func (p *inProcess) stop() error {
	p.cancel()
	return p.wait()
}

// stop closes what start opened, in dependency order: pipeline, Kafka
// clients, broker, pool, database server.
func (a *app) stop(ctx context.Context) {
	if a.pipe != nil {
		// Normally stopped by run already; after a failed start this
		// ends a pipeline that never ran.
		_ = a.pipe.Stop(ctx)
	}
	if a.prod != nil {
		a.prod.Close()
	}
	if a.kafka != nil {
		a.kafka.Close()
	}
	if a.readSt != nil {
		a.readSt.Close()
	}
	if a.st != nil {
		a.st.Close()
	}
	if a.pg != nil {
		// The managed server stops in well under a second once the pool
		// is closed; it gets a few seconds even when the shutdown
		// deadline has passed, since leaving it running is worse.
		budget := 5 * time.Second
		if d, ok := ctx.Deadline(); ok && time.Until(d) > budget {
			budget = time.Until(d)
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
		if err := a.pg.Stop(sctx); err != nil {
			a.log.Warn("stopping managed postgres", slog.Any("error", err))
		}
		cancel()
	}
}
