package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DeadLetterRecord is a record read back from the dead-letter topic.
type DeadLetterRecord struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp time.Time
	Key       []byte
	Value     []byte
	Headers   []kgo.RecordHeader
}

// DeadLetterArchive reads dead letters back from the dead-letter topic
// and replays them to their source topic, for the console.
type DeadLetterArchive struct {
	cl           *kgo.Client
	brokers      []string
	clientID     string
	topic        string
	defaultTopic string
	// MaxScan bounds the records one Find reads (default 20 000).
	MaxScan int
}

// ArchiveDeps are what a DeadLetterArchive replays through.
type ArchiveDeps struct {
	// Client produces the replays (a NewProducer client: acks=all).
	Client *kgo.Client
}

// ArchiveConfig says where a DeadLetterArchive reads and replays.
type ArchiveConfig struct {
	// Brokers and ClientID are those of the archive's own consumer.
	Brokers  []string
	ClientID string
	// DLQTopic is the dead-letter topic read.
	DLQTopic string
	// DefaultTopic receives the replays of records without a source topic
	// header.
	DefaultTopic string
}

// NewDeadLetterArchive reads cfg.DLQTopic through a consumer of its own
// and produces replays through deps.Client.
func NewDeadLetterArchive(deps ArchiveDeps, cfg ArchiveConfig) (*DeadLetterArchive, error) {
	if deps.Client == nil {
		return nil, fmt.Errorf("broker: dead-letter archive: nil client")
	}
	if cfg.DLQTopic == "" {
		return nil, fmt.Errorf("broker: dead-letter archive: empty dead-letter topic")
	}
	return &DeadLetterArchive{cl: deps.Client, brokers: cfg.Brokers, clientID: cfg.ClientID, topic: cfg.DLQTopic, defaultTopic: cfg.DefaultTopic, MaxScan: 20000}, nil
}

// findSlack is how long before the database row's time the search starts:
// the dead letter is produced before its row is written, and clocks of the
// broker and the database may differ a little.
const findSlack = 2 * time.Minute

// Find returns the dead letter whose memstream.source.* headers name the
// source position, searching the dead-letter topic from shortly before
// near (when the record was dead-lettered). It returns nil and no error
// when the record is not there (retention removed it, or it lies beyond
// MaxScan records).
func (a *DeadLetterArchive) Find(ctx context.Context, srcTopic string, srcPartition int32, srcOffset int64, near time.Time) (*DeadLetterRecord, error) {
	adm := kadm.NewClient(a.cl)
	starts, err := adm.ListOffsetsAfterMilli(ctx, near.Add(-findSlack).UnixMilli(), a.topic)
	if err != nil {
		return nil, fmt.Errorf("dead letter %s/%d@%d: offsets of %s: %w", srcTopic, srcPartition, srcOffset, a.topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, a.topic)
	if err != nil {
		return nil, fmt.Errorf("dead letter %s/%d@%d: end offsets of %s: %w", srcTopic, srcPartition, srcOffset, a.topic, err)
	}
	assign := map[int32]kgo.Offset{}
	remaining := map[int32]int64{} // partition → end offset
	starts.Each(func(o kadm.ListedOffset) {
		end, ok := ends.Lookup(o.Topic, o.Partition)
		if o.Err != nil || !ok || end.Err != nil || o.Offset < 0 || o.Offset >= end.Offset {
			return
		}
		assign[o.Partition] = kgo.NewOffset().At(o.Offset)
		remaining[o.Partition] = end.Offset
	})
	if len(assign) == 0 {
		return nil, nil
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(a.brokers...), kgo.ClientID(a.clientID),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{a.topic: assign}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("dead letter reader: %w", err)
	}
	defer cons.Close()
	want := [3]string{srcTopic, strconv.Itoa(int(srcPartition)), strconv.FormatInt(srcOffset, 10)}
	scanned := 0
	for len(remaining) > 0 && scanned < a.MaxScan {
		fetches := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("dead letter %s/%d@%d: %w", srcTopic, srcPartition, srcOffset, err)
		}
		var fetchErr error
		fetches.EachError(func(t string, p int32, err error) {
			if fetchErr == nil && !errors.Is(err, context.Canceled) {
				fetchErr = fmt.Errorf("dead letter reader: fetch %s/%d: %w", t, p, err)
			}
		})
		if fetchErr != nil {
			return nil, fetchErr
		}
		var found *kgo.Record
		fetches.EachRecord(func(r *kgo.Record) {
			scanned++
			if end, ok := remaining[r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
			if found == nil && sourceOf(r) == want {
				found = r
			}
		})
		if found != nil {
			return &DeadLetterRecord{Topic: found.Topic, Partition: found.Partition, Offset: found.Offset,
				Timestamp: found.Timestamp, Key: found.Key, Value: found.Value, Headers: found.Headers}, nil
		}
	}
	return nil, nil
}

func sourceOf(r *kgo.Record) [3]string {
	var s [3]string
	for _, h := range r.Headers {
		switch h.Key {
		case HeaderSourceTopic:
			s[0] = string(h.Value)
		case HeaderSourcePartition:
			s[1] = string(h.Value)
		case HeaderSourceOffset:
			s[2] = string(h.Value)
		}
	}
	return s
}

// Replay re-produces the records to their source topics as the producer
// first sent them: the same key, value and headers, without the
// dead-letter headers. It returns once Kafka acknowledged all of them.
func (a *DeadLetterArchive) Replay(ctx context.Context, recs []*DeadLetterRecord) error {
	out := make([]*kgo.Record, 0, len(recs))
	for _, r := range recs {
		out = append(out, stripDLQ(&kgo.Record{Key: r.Key, Value: r.Value, Headers: r.Headers}, a.defaultTopic))
	}
	if err := a.cl.ProduceSync(ctx, out...).FirstErr(); err != nil {
		return fmt.Errorf("replay %d dead letters: %w", len(out), err)
	}
	return nil
}
