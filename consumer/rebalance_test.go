package consumer

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/memstream/memstream/pipeline"
)

// gatedSink acknowledges every record at once, except that the Submit of
// offset blockAt waits until release is closed.
type gatedSink struct {
	blockAt int64
	blocked chan struct{}
	release chan struct{}
	once    sync.Once

	mu   sync.Mutex
	seen []int64 // offsets in Submit order
}

func newGatedSink(blockAt int64) *gatedSink {
	return &gatedSink{blockAt: blockAt, blocked: make(chan struct{}), release: make(chan struct{})}
}

func (s *gatedSink) Submit(ctx context.Context, m pipeline.Message) error {
	s.mu.Lock()
	s.seen = append(s.seen, m.Record.Offset)
	s.mu.Unlock()
	if m.Record.Offset == s.blockAt {
		first := false
		s.once.Do(func() { first = true; close(s.blocked) })
		if first {
			select {
			case <-s.release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	m.Ack()
	return nil
}

// commitLog records the offsets a group commits for one partition, in the
// order the broker receives them.
type commitLog struct {
	mu   sync.Mutex
	offs []int64
}

func (l *commitLog) watch(c *kfake.Cluster, group string) {
	c.ControlKey(int16(kmsg.OffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.OffsetCommitRequest)
		if r.Group != group {
			return nil, nil, false
		}
		l.mu.Lock()
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				l.offs = append(l.offs, p.Offset)
			}
		}
		l.mu.Unlock()
		return nil, nil, false
	})
}

func (l *commitLog) snapshot() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.offs)
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A partition revoked and assigned again while the poll loop is still
// handing over an earlier poll's records must not receive the rest of that
// stale poll: its new track would see offsets go backwards, and the
// committed offset would jump ahead and then regress (issue 15 item 12).
// The rebalance is forced deterministically: an eager balancer, and a
// second member joining for another topic, so the first member's
// partition is revoked and handed straight back to it.
func TestStalePollNeverFeedsTheNextAssignment(t *testing.T) {
	const n = 300
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "ev", "other"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: "ev", Value: []byte(fmt.Sprint(i))})
	}
	if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var commits commitLog
	commits.watch(c, "g")

	sink := newGatedSink(50)
	reg := prometheus.NewRegistry()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cons, err := New(Deps{Sink: sink, Registerer: reg, Logger: log, Opts: []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())}},
		Config{Brokers: c.ListenAddrs(), Topics: []string{"ev"}, Group: "g",
			CommitInterval: 20 * time.Millisecond, RevokeTimeout: 200 * time.Millisecond, ShutdownTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cons.Run(ctx) }()
	select {
	case <-sink.blocked:
	case <-time.After(time.Minute):
		t.Fatal("the consumer never reached offset 50")
	}

	other, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("other"),
		kgo.Balancers(kgo.RangeBalancer()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	otherDone := make(chan struct{})
	go func() {
		defer close(otherDone)
		for ctx.Err() == nil && !other.PollFetches(ctx).IsClientClosed() {
		}
	}()
	assigned := cons.m.rebalances.WithLabelValues("assigned")
	waitFor(t, "the partition to be revoked and assigned again", time.Minute, func() bool { return testutil.ToFloat64(assigned) >= 2 })
	close(sink.release)

	waitFor(t, "the group to commit the end of the partition", time.Minute, func() bool {
		offs := commits.snapshot()
		return len(offs) > 0 && offs[len(offs)-1] == n
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	other.Close()
	<-otherDone

	offs := commits.snapshot()
	for i := 1; i < len(offs); i++ {
		if offs[i] < offs[i-1] {
			t.Fatalf("committed offset regressed from %d to %d (commits %v)", offs[i-1], offs[i], offs)
		}
	}
	sink.mu.Lock()
	seen := slices.Clone(sink.seen)
	sink.mu.Unlock()
	// After the blocked offset 50, the next record handed over must be 50
	// again (fetched anew for the new assignment), never the stale 51.
	i := slices.Index(seen, 50)
	if i < 0 || i+1 >= len(seen) || seen[i+1] != 50 {
		t.Fatalf("after the blocked offset 50 the sink got %v, want 50 redelivered from the new assignment", seen[i+1:min(i+5, len(seen))])
	}
}

// onRevoked waits for the revoked partitions' records in the pipeline, but
// not past the end of the context franz-go gives it (the client closing):
// it used to sleep in a loop until RevokeTimeout whatever happened.
func TestRevokeWaitEndsWithItsContext(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c := &Consumer{cfg: Config{RevokeTimeout: time.Hour}, log: log, m: newMetrics(nil), tracks: map[tp]*partitionTrack{}}
	tr := newPartitionTrack()
	c.tracks[tp{"ev", 0}] = tr
	ticket := mustAdd(t, tr, 0, 0, 1)
	if !tr.hand(ticket) {
		t.Fatal("hand failed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		c.onRevoked(ctx, nil, map[string][]int32{"ev": {0}})
		close(returned)
	}()
	cancel()
	select {
	case <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("onRevoked ignored its context and kept waiting for RevokeTimeout (1 h)")
	}
	if len(c.tracks) != 0 {
		t.Fatal("the revoked track was not forgotten")
	}
}
