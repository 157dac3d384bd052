package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memstream/memstream/internal/wait"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/memstream/memstream/pipeline"
)

// Sink receives records in partition order. Submit blocks while the
// pipeline is full, which is the first line of backpressure.
type Sink interface {
	Submit(ctx context.Context, m pipeline.Message) error
}

// Config configures a Consumer.
type Config struct {
	Brokers            []string
	Topics             []string
	Group              string
	ClientID           string
	MaxInflightRecords int
	MaxInflightBytes   int
	CommitInterval     time.Duration
	// ShutdownTimeout bounds the drain of in-flight records on Stop.
	ShutdownTimeout time.Duration
	// RevokeTimeout bounds the wait for in-flight records of revoked
	// partitions before their marks are committed.
	RevokeTimeout time.Duration
	// LagInterval is how often consumer lag is measured; 0 disables it.
	LagInterval time.Duration
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Group == "" {
		c.Group = "memstream-ingest"
	}
	if c.ClientID == "" {
		c.ClientID = "memstream"
	}
	if c.MaxInflightRecords <= 0 {
		c.MaxInflightRecords = 20000
	}
	if c.MaxInflightBytes <= 0 {
		c.MaxInflightBytes = 256 << 20
	}
	if c.CommitInterval <= 0 {
		c.CommitInterval = time.Second
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = 30 * time.Second
	}
	if c.RevokeTimeout <= 0 {
		c.RevokeTimeout = 10 * time.Second
	}
	return c
}

func (c Config) validate() error {
	if len(c.Brokers) == 0 {
		return errors.New("consumer: Brokers is empty")
	}
	if len(c.Topics) == 0 {
		return errors.New("consumer: Topics is empty")
	}
	return nil
}

type tp struct {
	topic     string
	partition int32
}

// Consumer is a group consumer with watermark commits.
type Consumer struct {
	cfg  Config
	cl   *kgo.Client
	sink Sink
	log  *slog.Logger
	m    *metrics

	mu     sync.Mutex
	tracks map[tp]*partitionTrack

	inflightRecords atomic.Int64
	inflightBytes   atomic.Int64
	inSink          atomic.Int64   // records handed to the sink and not yet acknowledged
	progress        wait.Broadcast // fires whenever a record is acknowledged or released
	stopping        atomic.Bool    // the final revoke of a shutdown does not wait again
	killed          atomic.Bool    // Kill: the final revoke commits nothing, as a crash would

	stopOnce sync.Once
	stopReq  chan struct{}   // closed by Stop
	stopCtx  context.Context // Stop's context, read after stopReq is closed
	finished chan struct{}   // closed when Run returns
}

type metrics struct {
	consumed   *prometheus.CounterVec
	commits    *prometheus.CounterVec
	inflight   prometheus.Gauge
	inflightB  prometheus.Gauge
	paused     prometheus.Gauge
	lag        *prometheus.GaugeVec
	rebalances *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		consumed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memstream_consumer_records_total", Help: "Records fetched and handed to the pipeline.",
		}, []string{"topic"}),
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memstream_consumer_commits_total", Help: "Offset commits by trigger and outcome.",
		}, []string{"trigger", "outcome"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "memstream_consumer_inflight_records", Help: "Records fetched but not yet persisted or dead-lettered.",
		}),
		inflightB: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "memstream_consumer_inflight_bytes", Help: "Bytes of in-flight records.",
		}),
		paused: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "memstream_consumer_paused", Help: "1 while fetching is paused for backpressure.",
		}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "memstream_consumer_lag_records", Help: "Committed-offset lag per partition.",
		}, []string{"topic", "partition"}),
		rebalances: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memstream_consumer_rebalance_events_total", Help: "Partition assignment changes by kind.",
		}, []string{"kind"}),
	}
	if reg != nil {
		reg.MustRegister(m.consumed, m.commits, m.inflight, m.inflightB, m.paused, m.lag, m.rebalances)
	}
	return m
}

// Deps are the consumer's collaborators.
type Deps struct {
	// Sink receives the records (the pipeline).
	Sink       Sink
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// Opts are appended to the Kafka client's options (kprom hooks, test
	// dialers, balancers).
	Opts []kgo.Opt
}

// New builds the consumer and its Kafka client.
func New(deps Deps, cfg Config) (*Consumer, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if deps.Sink == nil || deps.Logger == nil {
		return nil, errors.New("consumer: Deps.Sink and Deps.Logger are required")
	}
	sink, reg, log, extra := deps.Sink, deps.Registerer, deps.Logger, deps.Opts
	c := &Consumer{cfg: cfg, sink: sink, log: log, m: newMetrics(reg), tracks: map[tp]*partitionTrack{},
		stopReq: make(chan struct{}), finished: make(chan struct{})}
	opts := []kgo.Opt{
		// Rebalances wait while a poll's records are registered in their
		// partitions' tracks (see poll), so no record of a revoked
		// assignment ever enters the track of the next one.
		kgo.BlockRebalanceOnPoll(),
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID(cfg.ClientID),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Topics...),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.OnPartitionsAssigned(c.onAssigned),
		kgo.OnPartitionsRevoked(c.onRevoked),
		kgo.OnPartitionsLost(c.onLost),
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("consumer: kafka client: %w", err)
	}
	c.cl = cl
	return c, nil
}

// Client exposes the underlying client for readiness checks.
func (c *Consumer) Client() *kgo.Client { return c.cl }

func (c *Consumer) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, ps := range assigned {
		for _, p := range ps {
			c.tracks[tp{t, p}] = newPartitionTrack()
		}
	}
	c.m.rebalances.WithLabelValues("assigned").Inc()
	c.log.Info("partitions assigned", slog.Any("partitions", assigned))
}

// onRevoked stops handing over the revoked partitions' records, waits
// (up to RevokeTimeout, or until ctx ends) for those already in the
// pipeline, commits their marks, and forgets them. Whatever is still in
// flight after the wait is redelivered to the next owner, and idempotent
// persistence makes that harmless. During shutdown the drain has already
// waited, so the final revoke only commits.
func (c *Consumer) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	if c.killed.Load() {
		c.forget(revoked)
		return
	}
	c.m.rebalances.WithLabelValues("revoked").Inc()
	trs := c.tracksOf(revoked)
	for _, tr := range trs {
		tr.close()
	}
	if !c.stopping.Load() {
		wctx, cancel := context.WithTimeout(ctx, c.cfg.RevokeTimeout)
		c.waitUntil(wctx, func() bool {
			n := 0
			for _, tr := range trs {
				n += tr.inSink()
			}
			return n == 0
		})
		cancel()
	}
	c.commit(ctx, "revoke", revoked)
	c.forget(revoked)
	c.log.Info("partitions revoked", slog.Any("partitions", revoked))
}

// waitUntil blocks until cond holds or ctx ends, waking on every
// acknowledgement instead of polling.
func (c *Consumer) waitUntil(ctx context.Context, cond func() bool) bool {
	for {
		ch := c.progress.C()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return cond()
		}
	}
}

func (c *Consumer) tracksOf(parts map[string][]int32) []*partitionTrack {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*partitionTrack
	for t, ps := range parts {
		for _, p := range ps {
			if tr := c.tracks[tp{t, p}]; tr != nil {
				out = append(out, tr)
			}
		}
	}
	return out
}

func (c *Consumer) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	c.m.rebalances.WithLabelValues("lost").Inc()
	c.forget(lost)
	c.log.Warn("partitions lost", slog.Any("partitions", lost))
}

func (c *Consumer) forget(parts map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, ps := range parts {
		for _, p := range ps {
			k := tp{t, p}
			if tr := c.tracks[k]; tr != nil {
				recs, bytes := tr.revoke()
				c.release(recs, bytes)
				delete(c.tracks, k)
			}
		}
	}
}

func (c *Consumer) release(records, bytes int) {
	if records != 0 || bytes != 0 {
		c.inflightRecords.Add(-int64(records))
		c.inflightBytes.Add(-int64(bytes))
		c.m.inflight.Set(float64(c.inflightRecords.Load()))
		c.m.inflightB.Set(float64(c.inflightBytes.Load()))
	}
	c.progress.Fire()
}

// commit commits the marks of the given partitions (all when nil).
func (c *Consumer) commit(ctx context.Context, trigger string, only map[string][]int32) {
	offsets := map[string]map[int32]kgo.EpochOffset{}
	var touched []*partitionTrack
	c.mu.Lock()
	for k, tr := range c.tracks {
		if only != nil && !contains(only[k.topic], k.partition) {
			continue
		}
		off, epoch, ok := tr.commitMark()
		if !ok {
			continue
		}
		if offsets[k.topic] == nil {
			offsets[k.topic] = map[int32]kgo.EpochOffset{}
		}
		offsets[k.topic][k.partition] = kgo.EpochOffset{Epoch: epoch, Offset: off}
		touched = append(touched, tr)
	}
	c.mu.Unlock()
	if len(offsets) == 0 {
		return
	}
	var commitErr error
	c.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			commitErr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if e := kerrFor(p.ErrorCode); e != nil {
					commitErr = fmt.Errorf("topic %s partition %d: %w", t.Topic, p.Partition, e)
				}
			}
		}
	})
	if commitErr != nil {
		for _, tr := range touched {
			tr.markUncommitted()
		}
		c.m.commits.WithLabelValues(trigger, "error").Inc()
		c.log.Warn("offset commit failed; will retry", slog.String("trigger", trigger), slog.Any("error", commitErr))
		return
	}
	c.m.commits.WithLabelValues(trigger, "ok").Inc()
	c.log.Debug("offsets committed", slog.String("trigger", trigger), slog.Any("offsets", offsets))
}

func contains(ps []int32, p int32) bool {
	for _, x := range ps {
		if x == p {
			return true
		}
	}
	return false
}

// Run polls and feeds the sink until ctx ends or Stop is called, committing
// marks on a period. Then it stops fetching, waits for the records in the
// pipeline until the shutdown deadline (Stop's context, or ShutdownTimeout
// after ctx ended), commits, leaves the group and closes the client.
func (c *Consumer) Run(ctx context.Context) error {
	defer close(c.finished)
	var wg sync.WaitGroup
	commitCtx, stopCommits := context.WithCancel(context.WithoutCancel(ctx))
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(c.cfg.CommitInterval)
		defer t.Stop()
		for {
			select {
			case <-commitCtx.Done():
				return
			case <-t.C:
				c.commit(commitCtx, "periodic", nil)
			}
		}
	}()
	if c.cfg.LagInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.lagLoop(commitCtx)
		}()
	}
	pollCtx, stopPoll := context.WithCancel(ctx)
	go func() {
		select {
		case <-c.stopReq:
			stopPoll()
		case <-pollCtx.Done():
		}
	}()
	err := c.poll(pollCtx)
	stopPoll()

	// One deadline for the whole shutdown: most of it for the records in
	// flight, the rest for the final commit and the leave.
	sctx, cancel := c.shutdownContext(ctx)
	defer cancel()
	c.closeTracks()
	dctx, cancelDrain := context.WithDeadline(sctx, drainDeadline(sctx))
	c.drain(dctx)
	cancelDrain()
	stopCommits()
	wg.Wait()
	if !c.killed.Load() {
		c.commit(sctx, "shutdown", nil)
	}
	c.stopping.Store(true)
	if lerr := c.cl.LeaveGroupContext(sctx); lerr != nil && !errors.Is(lerr, context.DeadlineExceeded) && !errors.Is(lerr, context.Canceled) {
		c.log.Warn("leaving the consumer group", slog.Any("error", lerr))
	}
	c.cl.Close()
	c.log.Info("consumer stopped", slog.Int64("inflight_left", c.inSink.Load()))
	return err
}

// Stop ends Run: fetching stops at once, and Run drains, commits and
// leaves within ctx's deadline. It returns when Run has returned, or
// ctx.Err() if ctx ends first.
func (c *Consumer) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() {
		c.stopCtx = ctx
		close(c.stopReq)
	})
	select {
	case <-c.finished:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// shutdownContext is Stop's context when Stop was called, otherwise a
// fresh ShutdownTimeout from now (Run's ctx has ended and cannot bound it).
func (c *Consumer) shutdownContext(ctx context.Context) (context.Context, context.CancelFunc) {
	select {
	case <-c.stopReq:
		if _, ok := c.stopCtx.Deadline(); ok {
			return context.WithCancel(context.WithoutCancel(c.stopCtx))
		}
	default:
	}
	return context.WithTimeout(context.WithoutCancel(ctx), c.cfg.ShutdownTimeout)
}

// drainDeadline leaves a fifth of what remains (at most 2 s) for the final
// commit and the leave.
func drainDeadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	reserve := min(time.Until(d)/5, 2*time.Second)
	return d.Add(-reserve)
}

// closeTracks stops every track from handing over records: after the poll
// loop ends, records it registered but never handed over stay below the
// mark and are fetched again by the next owner.
func (c *Consumer) closeTracks() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tr := range c.tracks {
		tr.close()
	}
}

// Kill closes the client without draining or committing: what a crash does.
// Tests use it to prove that redelivery after a crash loses and doubles
// nothing.
func (c *Consumer) Kill() {
	c.killed.Store(true)
	c.stopping.Store(true)
	c.closeTracks()
	c.cl.CloseAllowingRebalance()
}

// drain waits until every record handed to the sink is acknowledged, or ctx
// ends; what is left is redelivered after the restart.
func (c *Consumer) drain(ctx context.Context) {
	if c.killed.Load() {
		return
	}
	if !c.waitUntil(ctx, func() bool { return c.inSink.Load() == 0 }) {
		c.log.Warn("shutdown deadline reached with records in flight; they will be redelivered",
			slog.Int64("inflight", c.inSink.Load()))
	}
}

// polled is one record of a poll, registered in the track of the
// assignment it was fetched under.
type polled struct {
	r      *kgo.Record
	tr     *partitionTrack
	ticket int
}

func (c *Consumer) poll(ctx context.Context) error {
	for {
		if err := c.waitForRoom(ctx); err != nil {
			return nil
		}
		fetches := c.cl.PollRecords(ctx, 1000)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			// Records of this poll were never registered, so their
			// offsets are never committed.
			c.cl.AllowRebalance()
			return nil
		}
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				c.log.Warn("fetch error", slog.String("topic", t), slog.Int("partition", int(p)), slog.Any("error", err))
			}
		})
		// Rebalances are blocked from the poll until AllowRebalance, so
		// each record is registered in the track of the assignment it was
		// fetched under. Handing the records over may block for long on
		// backpressure; that happens with rebalances allowed again, and a
		// revoke in between closes the old track, so the rest of this poll
		// is dropped rather than fed to the partition's next track.
		batch := c.register(fetches)
		c.cl.AllowRebalance()
		for i, pr := range batch {
			if err := c.hand(ctx, pr); err != nil {
				c.abandon(batch[i:])
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
	}
}

func (c *Consumer) register(fetches kgo.Fetches) []polled {
	batch := make([]polled, 0, fetches.NumRecords())
	c.mu.Lock()
	defer c.mu.Unlock()
	records, bytes := 0, 0
	fetches.EachRecord(func(r *kgo.Record) {
		tr := c.tracks[tp{r.Topic, r.Partition}]
		if tr == nil {
			return // not ours (any more): its owner fetches it
		}
		size := len(r.Key) + len(r.Value)
		ticket, ok := tr.add(r.Offset, r.LeaderEpoch, size)
		if !ok {
			return
		}
		records++
		bytes += size
		batch = append(batch, polled{r: r, tr: tr, ticket: ticket})
	})
	c.inflightRecords.Add(int64(records))
	c.inflightBytes.Add(int64(bytes))
	c.m.inflight.Set(float64(c.inflightRecords.Load()))
	c.m.inflightB.Set(float64(c.inflightBytes.Load()))
	return batch
}

// abandon gives up records registered but not handed over: they stay
// below their track's mark and are fetched again after a restart.
func (c *Consumer) abandon(rest []polled) {
	for _, pr := range rest {
		pr.tr.close()
	}
}

// waitForRoom pauses fetching while the in-flight window is full and
// resumes once it has drained to half.
func (c *Consumer) waitForRoom(ctx context.Context) error {
	full := func() bool {
		return c.inflightRecords.Load() >= int64(c.cfg.MaxInflightRecords) || c.inflightBytes.Load() >= int64(c.cfg.MaxInflightBytes)
	}
	if !full() {
		return nil
	}
	c.cl.PauseFetchTopics(c.cfg.Topics...)
	c.m.paused.Set(1)
	defer func() {
		c.cl.ResumeFetchTopics(c.cfg.Topics...)
		c.m.paused.Set(0)
	}()
	c.waitUntil(ctx, func() bool {
		return c.inflightRecords.Load() <= int64(c.cfg.MaxInflightRecords/2) && c.inflightBytes.Load() <= int64(c.cfg.MaxInflightBytes/2)
	})
	return ctx.Err()
}

func (c *Consumer) hand(ctx context.Context, pr polled) error {
	r, tr := pr.r, pr.tr
	if !tr.hand(pr.ticket) {
		return nil // revoked meanwhile: the partition's owner fetches it again
	}
	c.inSink.Add(1)
	c.m.consumed.WithLabelValues(r.Topic).Inc()
	var once sync.Once
	ack := func() {
		once.Do(func() {
			records, bytes := tr.done(pr.ticket)
			c.inSink.Add(-1)
			c.release(records, bytes)
		})
	}
	if err := c.sink.Submit(ctx, pipeline.Message{Record: r, Ack: ack}); err != nil {
		once.Do(func() {
			tr.unhand(pr.ticket)
			c.inSink.Add(-1)
			c.progress.Fire()
		})
		return fmt.Errorf("submit %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
	}
	return nil
}

func (c *Consumer) lagLoop(ctx context.Context) {
	adm := kadm.NewClient(c.cl)
	t := time.NewTicker(c.cfg.LagInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		lags, err := adm.Lag(ctx, c.cfg.Group)
		if err != nil {
			continue
		}
		lags.Each(func(l kadm.DescribedGroupLag) {
			for _, ps := range l.Lag {
				for _, p := range ps {
					if p.Err == nil {
						c.m.lag.WithLabelValues(p.Topic, strconv.Itoa(int(p.Partition))).Set(float64(p.Lag))
					}
				}
			}
		})
	}
}
