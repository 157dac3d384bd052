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
	drained         chan struct{} // signalled when the window shrinks
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

// New builds the consumer and its Kafka client. extra options (kprom hooks,
// test dialers) are appended to the client's.
func New(cfg Config, sink Sink, reg prometheus.Registerer, log *slog.Logger, extra ...kgo.Opt) (*Consumer, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Consumer{cfg: cfg, sink: sink, log: log, m: newMetrics(reg), tracks: map[tp]*partitionTrack{}, drained: make(chan struct{}, 1)}
	opts := []kgo.Opt{
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

// onRevoked waits (bounded) for the revoked partitions' in-flight records,
// commits their marks, and forgets them. Whatever is still in flight after
// the wait is redelivered to the next owner, and idempotent persistence
// makes that harmless.
func (c *Consumer) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	c.m.rebalances.WithLabelValues("revoked").Inc()
	deadline := time.Now().Add(c.cfg.RevokeTimeout)
	for time.Now().Before(deadline) && c.inflightOf(revoked) > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	c.commit(ctx, "revoke", revoked)
	c.forget(revoked)
	c.log.Info("partitions revoked", slog.Any("partitions", revoked))
}

func (c *Consumer) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	c.m.rebalances.WithLabelValues("lost").Inc()
	c.forget(lost)
	c.log.Warn("partitions lost", slog.Any("partitions", lost))
}

func (c *Consumer) inflightOf(parts map[string][]int32) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for t, ps := range parts {
		for _, p := range ps {
			if tr := c.tracks[tp{t, p}]; tr != nil {
				n += tr.inflight()
			}
		}
	}
	return n
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
	if records == 0 && bytes == 0 {
		return
	}
	c.inflightRecords.Add(-int64(records))
	c.inflightBytes.Add(-int64(bytes))
	c.m.inflight.Set(float64(c.inflightRecords.Load()))
	c.m.inflightB.Set(float64(c.inflightBytes.Load()))
	select {
	case c.drained <- struct{}{}:
	default:
	}
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

// Run polls and feeds the sink until ctx is cancelled, committing marks on
// a period. On cancellation it stops fetching, waits up to ShutdownTimeout
// for in-flight records, commits, leaves the group and closes the client.
func (c *Consumer) Run(ctx context.Context) error {
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
	err := c.poll(ctx)
	c.drain()
	stopCommits()
	wg.Wait()
	c.commit(context.Background(), "shutdown", nil)
	c.cl.LeaveGroup()
	c.cl.Close()
	c.log.Info("consumer stopped", slog.Int64("inflight_left", c.inflightRecords.Load()))
	return err
}

// Kill closes the client without draining or committing: what a crash does.
// Tests use it to prove that redelivery after a crash loses and doubles
// nothing.
func (c *Consumer) Kill() { c.cl.Close() }

func (c *Consumer) drain() {
	deadline := time.NewTimer(c.cfg.ShutdownTimeout)
	defer deadline.Stop()
	for c.inflightRecords.Load() > 0 {
		select {
		case <-deadline.C:
			c.log.Warn("shutdown deadline reached with records in flight; they will be redelivered",
				slog.Int64("inflight", c.inflightRecords.Load()))
			return
		case <-c.drained:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Consumer) poll(ctx context.Context) error {
	for {
		if err := c.waitForRoom(ctx); err != nil {
			return nil
		}
		fetches := c.cl.PollRecords(ctx, 1000)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			// Records of this poll were never handed over: they are not
			// tracked, so their offsets are never committed.
			return nil
		}
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				c.log.Warn("fetch error", slog.String("topic", t), slog.Int("partition", int(p)), slog.Any("error", err))
			}
		})
		var submitErr error
		fetches.EachRecord(func(r *kgo.Record) {
			if submitErr != nil {
				return
			}
			submitErr = c.submit(ctx, r)
		})
		if submitErr != nil {
			if ctx.Err() != nil {
				return nil
			}
			return submitErr
		}
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
	for c.inflightRecords.Load() > int64(c.cfg.MaxInflightRecords/2) || c.inflightBytes.Load() > int64(c.cfg.MaxInflightBytes/2) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.drained:
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

func (c *Consumer) submit(ctx context.Context, r *kgo.Record) error {
	k := tp{r.Topic, r.Partition}
	c.mu.Lock()
	tr := c.tracks[k]
	if tr == nil {
		// A record of a partition revoked between poll and hand-over: drop
		// it; its new owner will fetch it from the committed offset.
		c.mu.Unlock()
		return nil
	}
	size := len(r.Key) + len(r.Value)
	ticket := tr.add(r.Offset, r.LeaderEpoch, size)
	c.mu.Unlock()
	c.inflightRecords.Add(1)
	c.inflightBytes.Add(int64(size))
	c.m.inflight.Set(float64(c.inflightRecords.Load()))
	c.m.inflightB.Set(float64(c.inflightBytes.Load()))
	c.m.consumed.WithLabelValues(r.Topic).Inc()
	var once sync.Once
	ack := func() {
		once.Do(func() { c.release(tr.done(ticket)) })
	}
	if err := c.sink.Submit(ctx, pipeline.Message{Record: r, Ack: ack}); err != nil {
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
