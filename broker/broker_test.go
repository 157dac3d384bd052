package broker

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/event"
)

// An accepted event must survive a restart of the embedded broker: its log
// lives in DataDir with synced writes.
func TestEmbeddedBrokerKeepsEventsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := EmbeddedConfig{Addr: "127.0.0.1:0", DataDir: dir, Topics: []string{"ev", "ev.dlq"}, Partitions: 2}
	e, err := StartEmbedded(EmbeddedDeps{Logger: log}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	prod, err := NewProducer(ProducerDeps{}, ProducerConfig{Brokers: []string{e.Addr()}, ClientID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := NewPublisher(PublisherDeps{Client: prod}, PublisherConfig{Topic: "ev"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events := []event.Event{
		{BankID: "alice", DocumentID: "d1", Content: "I live in Shanghai"},
		{BankID: "alice", DocumentID: "d1", Content: "I moved last week"},
		{BankID: "bob", Content: "no document"},
	}
	pos, err := pub.Publish(ctx, events)
	if err != nil {
		t.Fatal(err)
	}
	if len(pos) != len(events) || pos[0].Topic != "ev" || pos[1].Offset <= pos[0].Offset && pos[1].Partition == pos[0].Partition {
		t.Fatalf("positions %+v: want one per event, on topic ev, increasing within a partition", pos)
	}
	prod.Close()
	e.Close()

	e2, err := StartEmbedded(EmbeddedDeps{Logger: log}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e2.Addr()), kgo.ConsumeTopics("ev"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	keys := map[string]int{}
	for n := 0; n < len(events) && ctx.Err() == nil; {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			keys[string(r.Key)]++
			n++
		})
	}
	if keys["alice/d1"] != 2 || keys["bob"] != 1 {
		t.Fatalf("after restart got keys %v, want alice/d1×2 and bob×1", keys)
	}
}

func TestEnsureTopicsIsIdempotent(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := StartEmbedded(EmbeddedDeps{Logger: log}, EmbeddedConfig{Addr: "127.0.0.1:0", Topics: []string{"a"}, Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cl, err := NewProducer(ProducerDeps{}, ProducerConfig{Brokers: []string{e.Addr()}, ClientID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if err := EnsureTopics(ctx, cl, 3, "a", "b"); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
}

func TestSplitPort(t *testing.T) {
	for addr, want := range map[string]int{"127.0.0.1:9092": 9092, ":0": 0, "[::1]:19092": 19092} {
		if _, p, err := splitPort(addr); err != nil || p != want {
			t.Errorf("splitPort(%q) = %d, %v", addr, p, err)
		}
	}
	for _, bad := range []string{"nohost", "h:99999", "h:x"} {
		if _, _, err := splitPort(bad); err == nil {
			t.Errorf("splitPort(%q) accepted", bad)
		}
	}
}
