package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/event"
)

// EmbeddedConfig configures the in-process broker.
type EmbeddedConfig struct {
	Addr       string // host:port to listen on
	DataDir    string // where the log is kept; empty keeps it in memory
	Topics     []string
	Partitions int
}

// EmbeddedDeps are what the in-process broker reports to.
type EmbeddedDeps struct {
	Logger *slog.Logger
}

// Embedded is a running in-process broker.
type Embedded struct {
	cluster *kfake.Cluster
	addr    string
}

// StartEmbedded starts kfake on cfg.Addr with synced writes to cfg.DataDir,
// so events accepted but not yet ingested survive a crash.
func StartEmbedded(deps EmbeddedDeps, cfg EmbeddedConfig) (*Embedded, error) {
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	port := 0
	if cfg.Addr != "" {
		_, p, err := splitPort(cfg.Addr)
		if err != nil {
			return nil, fmt.Errorf("kafka.embedded_addr %q: %w", cfg.Addr, err)
		}
		port = p
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = 1
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.DefaultNumPartitions(cfg.Partitions),
		kfake.ClusterID("memstream-embedded"),
		kfake.SeedTopics(int32(cfg.Partitions), cfg.Topics...),
	}
	if cfg.DataDir != "" {
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("embedded kafka data dir %s: %w", cfg.DataDir, err)
		}
		opts = append(opts, kfake.DataDir(cfg.DataDir), kfake.SyncWrites())
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("start embedded kafka on %s: %w", cfg.Addr, err)
	}
	addrs := c.ListenAddrs()
	log.Info("embedded kafka started", slog.String("addr", addrs[0]), slog.String("data_dir", cfg.DataDir))
	return &Embedded{cluster: c, addr: addrs[0]}, nil
}

// Addr is the broker's listen address.
func (e *Embedded) Addr() string { return e.addr }

// Cluster exposes kfake's control functions for fault-injection tests.
func (e *Embedded) Cluster() *kfake.Cluster { return e.cluster }

// Close stops the broker, flushing its log.
func (e *Embedded) Close() { e.cluster.Close() }

func splitPort(addr string) (string, int, error) {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			p, err := strconv.Atoi(addr[i+1:])
			if err != nil || p < 0 || p > 65535 {
				return "", 0, fmt.Errorf("bad port")
			}
			return addr[:i], p, nil
		}
	}
	return "", 0, fmt.Errorf("missing port")
}

// EnsureTopics creates the topics that do not exist yet.
func EnsureTopics(ctx context.Context, cl *kgo.Client, partitions int32, topics ...string) error {
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopics(ctx, partitions, -1, nil, topics...)
	if err != nil {
		return fmt.Errorf("create topics %v: %w", topics, err)
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", r.Topic, r.Err)
		}
	}
	return nil
}

// ProducerDeps are what a producer reports to.
type ProducerDeps struct {
	// Hooks observe the client (e.g. kprom metrics); optional.
	Hooks []kgo.Hook
}

// ProducerConfig says which cluster a producer writes to.
type ProducerConfig struct {
	Brokers  []string
	ClientID string
}

// NewProducer returns a client for producing events: idempotent, acks=all,
// so a record it reports as written is durably in the log.
func NewProducer(deps ProducerDeps, cfg ProducerConfig) (*kgo.Client, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID(cfg.ClientID),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.ProducerBatchMaxBytes(16 << 20),
		kgo.MaxBufferedRecords(100000),
	}
	for _, h := range deps.Hooks {
		opts = append(opts, kgo.WithHooks(h))
	}
	return kgo.NewClient(opts...)
}

// Dead-letter header names (SPEC §3).
const (
	HeaderErrorClass      = "memstream.error.class"
	HeaderErrorMessage    = "memstream.error.message"
	HeaderErrorStage      = "memstream.error.stage"
	HeaderSourceTopic     = "memstream.source.topic"
	HeaderSourcePartition = "memstream.source.partition"
	HeaderSourceOffset    = "memstream.source.offset"
)

// DeadLetters writes failed records to the dead-letter topic.
type DeadLetters struct {
	cl    *kgo.Client
	topic string
}

// DeadLetterDeps are what DeadLetters writes through.
type DeadLetterDeps struct {
	// Client produces the dead letters (a NewProducer client: acks=all).
	Client *kgo.Client
}

// DeadLetterConfig names the dead-letter topic.
type DeadLetterConfig struct {
	Topic string
}

// NewDeadLetters writes to cfg.Topic through deps.Client.
func NewDeadLetters(deps DeadLetterDeps, cfg DeadLetterConfig) (*DeadLetters, error) {
	if deps.Client == nil {
		return nil, fmt.Errorf("broker: dead letters: nil client")
	}
	if cfg.Topic == "" {
		return nil, fmt.Errorf("broker: dead letters: empty topic")
	}
	return &DeadLetters{cl: deps.Client, topic: cfg.Topic}, nil
}

// DeadLetter produces the record with its original key, value and headers
// plus the error headers, and returns once Kafka acknowledged it.
func (d *DeadLetters) DeadLetter(ctx context.Context, r *kgo.Record, e *event.Error, _ string) error {
	headers := append([]kgo.RecordHeader(nil), r.Headers...)
	msg := e.Msg
	if len(msg) > 1024 {
		msg = msg[:1024]
	}
	headers = append(headers,
		kgo.RecordHeader{Key: HeaderErrorClass, Value: []byte(e.Class)},
		kgo.RecordHeader{Key: HeaderErrorMessage, Value: []byte(msg)},
		kgo.RecordHeader{Key: HeaderErrorStage, Value: []byte(e.Stage)},
		kgo.RecordHeader{Key: HeaderSourceTopic, Value: []byte(r.Topic)},
		kgo.RecordHeader{Key: HeaderSourcePartition, Value: []byte(strconv.Itoa(int(r.Partition)))},
		kgo.RecordHeader{Key: HeaderSourceOffset, Value: []byte(strconv.FormatInt(r.Offset, 10))},
	)
	out := &kgo.Record{Topic: d.topic, Key: r.Key, Value: r.Value, Headers: headers}
	if err := d.cl.ProduceSync(ctx, out).FirstErr(); err != nil {
		return fmt.Errorf("dead-letter %s/%d@%d to %s: %w", r.Topic, r.Partition, r.Offset, d.topic, err)
	}
	return nil
}
