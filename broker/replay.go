package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/event"
)

// DLQReplayGroup is the consumer group whose committed offsets record how far
// the DLQ has been replayed. It is never a live group member: offsets are
// committed as a simple (member-less) group, so an operator can inspect or
// reset it with the ordinary Kafka group tools.
const DLQReplayGroup = "memstream-dlq-replay"

// dlqHeaderPrefixes are the headers the dead-letter writer adds; replay strips
// them so the re-produced record is byte-for-byte what the producer sent.
var dlqHeaderPrefixes = []string{"memstream.error.", "memstream.source."}

// retryKafka retries fn while Kafka answers with a retriable error, as a
// fresh cluster does (COORDINATOR_NOT_AVAILABLE) until its offsets topic
// exists, for up to a minute.
func retryKafka(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(time.Minute)
	wait := 100 * time.Millisecond
	for {
		err := fn()
		if err == nil || !kerr.IsRetriable(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// ReplayConfig says what to replay from the dead-letter topic.
type ReplayConfig struct {
	Brokers  []string
	ClientID string
	DLQTopic string
	// DefaultTopic receives records that lack the memstream.source.topic header.
	DefaultTopic string
	Group        string
	// FromOffset, when >= 0, overrides the group's committed offset on every
	// partition (clamped to the partition's log start).
	FromOffset int64
	// Limit caps the records replayed; 0 means no cap.
	Limit int
	// Bank, when set, replays only records whose bank_id matches.
	Bank string
	// IdleTimeout ends the run when no fetch returns anything for this long
	// although the end offsets are not reached (e.g. aborted transactions).
	IdleTimeout time.Duration
}

// ReplayResult counts what a replay did.
type ReplayResult struct {
	Replayed int
	Skipped  int
}

// ReplayDLQ reads the DLQ from the group's position (or cfg.FromOffset) up
// to the end offsets it saw at start, so records that fail again and return
// to the DLQ during the run are not replayed in a loop. After each fetch it
// produces the stripped records synchronously and only then commits, so a
// crash replays a record twice at worst; idempotent persistence (event ids)
// makes that harmless.
//
// With a bank filter a partition's committed offset stops advancing at the
// first record of another bank, so those records stay replayable by a later
// unfiltered run; the records of the bank after it may then be replayed again
// by that run, which is harmless for the same reason.
func ReplayDLQ(ctx context.Context, cl *kgo.Client, cfg ReplayConfig) (ReplayResult, error) {
	var res ReplayResult
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 10 * time.Second
	}
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, cfg.DLQTopic)
	if err != nil {
		return res, fmt.Errorf("dlq replay: list end offsets of %s: %w", cfg.DLQTopic, err)
	}
	if err := ends.Error(); err != nil {
		return res, fmt.Errorf("dlq replay: end offsets of %s: %w", cfg.DLQTopic, err)
	}
	starts, err := adm.ListStartOffsets(ctx, cfg.DLQTopic)
	if err != nil {
		return res, fmt.Errorf("dlq replay: list start offsets of %s: %w", cfg.DLQTopic, err)
	}
	var committed kadm.OffsetResponses
	err = retryKafka(ctx, func() (err error) {
		committed, err = adm.FetchOffsets(ctx, cfg.Group)
		return err
	})
	if errors.Is(err, kerr.GroupIDNotFound) {
		// Never committed before (some brokers say so instead of
		// returning no offsets): start from the log start.
		committed, err = nil, nil
	}
	if err != nil {
		return res, fmt.Errorf("dlq replay: fetch offsets of group %s: %w", cfg.Group, err)
	}

	// Per partition: where to start, where to stop, and whether the commit
	// watermark is still contiguous (no record of another bank skipped).
	type part struct {
		next, end  int64
		contiguous bool
		commit     int64 // offset to commit, -1: nothing new
	}
	parts := map[int32]*part{}
	assign := map[int32]kgo.Offset{}
	ends.Each(func(e kadm.ListedOffset) {
		start := int64(0)
		if s, ok := starts.Lookup(e.Topic, e.Partition); ok && s.Offset > 0 {
			start = s.Offset
		}
		if c, ok := committed.Lookup(e.Topic, e.Partition); ok && c.Err == nil && c.At >= 0 {
			start = max(start, c.At)
		}
		if cfg.FromOffset >= 0 {
			start = cfg.FromOffset
			if s, ok := starts.Lookup(e.Topic, e.Partition); ok && s.Offset > start {
				start = s.Offset
			}
		}
		if start >= e.Offset {
			return
		}
		parts[e.Partition] = &part{next: start, end: e.Offset, contiguous: true, commit: -1}
		assign[e.Partition] = kgo.NewOffset().At(start)
	})
	if len(parts) == 0 {
		return res, nil
	}

	// A separate, group-less consumer: partitions are assigned directly at
	// the computed offsets, and progress is committed through kadm.
	cons, err := kgo.NewClient(
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID(cfg.ClientID),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.DLQTopic: assign}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(time.Second),
	)
	if err != nil {
		return res, fmt.Errorf("dlq replay: consumer: %w", err)
	}
	defer cons.Close()

	done := func() bool {
		if cfg.Limit > 0 && res.Replayed >= cfg.Limit {
			return true
		}
		for _, p := range parts {
			if p.next < p.end {
				return false
			}
		}
		return true
	}
	lastProgress := time.Now()
	for !done() {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fetches := cons.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return res, err
		}
		var fetchErr error
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && fetchErr == nil {
				fetchErr = fmt.Errorf("dlq replay: fetch %s/%d: %w", t, p, err)
			}
		})
		if fetchErr != nil {
			return res, fetchErr
		}
		var out []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) {
			p := parts[r.Partition]
			if p == nil || r.Offset < p.next || r.Offset >= p.end || (cfg.Limit > 0 && res.Replayed+len(out) >= cfg.Limit) {
				return
			}
			p.next = r.Offset + 1
			if cfg.Bank != "" && recordBank(r) != cfg.Bank {
				res.Skipped++
				p.contiguous = false
				return
			}
			out = append(out, stripDLQ(r, cfg.DefaultTopic))
			if p.contiguous {
				p.commit = r.Offset + 1
			}
		})
		if len(out) > 0 || fetches.NumRecords() > 0 {
			lastProgress = time.Now()
		} else if time.Since(lastProgress) > cfg.IdleTimeout {
			// Control records (transaction markers) occupy offsets but are
			// never returned; treat a partition whose remaining offsets
			// yield nothing as done.
			break
		}
		if len(out) > 0 {
			if err := cl.ProduceSync(ctx, out...).FirstErr(); err != nil {
				return res, fmt.Errorf("dlq replay: produce: %w", err)
			}
			res.Replayed += len(out)
		}
		var commit kadm.Offsets
		for pn, p := range parts {
			if p.commit >= 0 {
				commit.AddOffset(cfg.DLQTopic, pn, p.commit, -1)
				p.commit = -1
			}
		}
		if len(commit) > 0 {
			if err := retryKafka(ctx, func() error { return adm.CommitAllOffsets(ctx, cfg.Group, commit) }); err != nil {
				return res, fmt.Errorf("dlq replay: commit group %s: %w", cfg.Group, err)
			}
		}
	}
	return res, nil
}

// stripDLQ rebuilds the record the producer originally sent: same key, value
// and headers, minus the dead-letter headers, addressed to its source topic.
// It adds one header, the idempotency key the original record had
// (source topic/partition/offset), unless an earlier replay set it: the
// copy gets a new offset, and without the header an event without
// event_id would be a new event each time it is replayed.
func stripDLQ(r *kgo.Record, defaultTopic string) *kgo.Record {
	out := &kgo.Record{Topic: defaultTopic, Key: r.Key, Value: r.Value}
	var srcTopic, srcPartition, srcOffset string
	hasKey := false
	for _, h := range r.Headers {
		switch h.Key {
		case HeaderSourceTopic:
			srcTopic = string(h.Value)
			if len(h.Value) > 0 {
				out.Topic = srcTopic
			}
		case HeaderSourcePartition:
			srcPartition = string(h.Value)
		case HeaderSourceOffset:
			srcOffset = string(h.Value)
		case event.HeaderIdempotencyKey:
			hasKey = len(h.Value) > 0
		}
		if hasAnyPrefix(h.Key, dlqHeaderPrefixes) {
			continue
		}
		out.Headers = append(out.Headers, h)
	}
	if !hasKey && srcTopic != "" && srcPartition != "" && srcOffset != "" {
		out.Headers = append(out.Headers, kgo.RecordHeader{Key: event.HeaderIdempotencyKey,
			Value: []byte(srcTopic + "/" + srcPartition + "/" + srcOffset)})
	}
	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// recordBank finds the bank of a dead-lettered record: bank_id in the JSON
// value, else the part of the recommended key (bank_id/document_id) before
// the slash. Records that are not JSON objects usually still carry the key.
func recordBank(r *kgo.Record) string {
	var v struct {
		BankID string `json:"bank_id"`
	}
	if json.Unmarshal(r.Value, &v) == nil && v.BankID != "" {
		return v.BankID
	}
	if i := bytes.IndexByte(r.Key, '/'); i > 0 {
		return string(r.Key[:i])
	}
	return string(r.Key)
}
