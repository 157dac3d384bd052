package broker

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/event"
)

// TestDeadLetterArchiveFind finds a dead letter among others by its source
// headers, and answers nil (not an error) for one that is not there.
func TestDeadLetterArchiveFind(t *testing.T) {
	kafka, err := StartEmbedded(EmbeddedDeps{Logger: slog.New(slog.DiscardHandler)}, EmbeddedConfig{Addr: "127.0.0.1:0", Topics: []string{"src", "src.dlq"}, Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer kafka.Close()
	cl, err := NewProducer(ProducerDeps{}, ProducerConfig{Brokers: []string{kafka.Addr()}, ClientID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dl, err := NewDeadLetters(DeadLetterDeps{Client: cl}, DeadLetterConfig{Topic: "src.dlq"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		src := &kgo.Record{Topic: "src", Partition: int32(i % 3), Offset: int64(i), Key: []byte{byte('a' + i%26)}, Value: []byte{byte(i)}}
		if err := dl.DeadLetter(ctx, src, &event.Error{Class: event.ClassSchema, Stage: "decode", Msg: "bad"}, ""); err != nil {
			t.Fatal(err)
		}
	}
	a, err := NewDeadLetterArchive(ArchiveDeps{Client: cl}, ArchiveConfig{Brokers: []string{kafka.Addr()}, ClientID: "test-reader", DLQTopic: "src.dlq", DefaultTopic: "src"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Find(ctx, "src", 2, 17, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || len(got.Value) != 1 || got.Value[0] != 17 {
		t.Fatalf("Find src/2@17 = %+v", got)
	}
	if got, err := a.Find(ctx, "src", 2, 18, time.Now()); err != nil || got != nil {
		t.Fatalf("Find of a position never dead-lettered = %+v, %v; want nil, nil", got, err)
	}
	// Records older than the search window are not read at all.
	if got, err := a.Find(ctx, "src", 2, 17, time.Now().Add(time.Hour)); err != nil || got != nil {
		t.Fatalf("Find an hour later = %+v, %v; want nil, nil", got, err)
	}
}
