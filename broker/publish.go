package broker

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/event"
)

// Publisher produces conversation events to the events topic.
type Publisher struct {
	cl    *kgo.Client
	topic string
}

// PublisherDeps are what a Publisher produces through.
type PublisherDeps struct {
	// Client produces the events (a NewProducer client: acks=all).
	Client *kgo.Client
}

// PublisherConfig names the events topic.
type PublisherConfig struct {
	Topic string
}

// NewPublisher produces to cfg.Topic through deps.Client.
func NewPublisher(deps PublisherDeps, cfg PublisherConfig) (*Publisher, error) {
	if deps.Client == nil {
		return nil, fmt.Errorf("broker: publisher: nil client")
	}
	if cfg.Topic == "" {
		return nil, fmt.Errorf("broker: publisher: empty topic")
	}
	return &Publisher{cl: deps.Client, topic: cfg.Topic}, nil
}

// RecordKey is the recommended record key, bank_id/document_id: records of
// one conversation land on one partition and keep their order.
func RecordKey(bankID, documentID string) []byte {
	if documentID == "" {
		return []byte(bankID)
	}
	return []byte(bankID + "/" + documentID)
}

// Publish produces the events and returns once Kafka acknowledged all,
// with the position each landed at.
func (p *Publisher) Publish(ctx context.Context, events []event.Event) ([]event.Position, error) {
	recs := make([]*kgo.Record, len(events))
	for i, ev := range events {
		v, err := json.Marshal(ev)
		if err != nil {
			return nil, fmt.Errorf("encode event %d: %w", i, err)
		}
		doc := ev.DocumentID
		if doc == "" {
			doc = ev.ConversationID
		}
		recs[i] = &kgo.Record{Topic: p.topic, Key: RecordKey(ev.BankID, doc), Value: v}
	}
	if err := p.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return nil, fmt.Errorf("produce to %s: %w", p.topic, err)
	}
	pos := make([]event.Position, len(recs))
	for i, r := range recs {
		pos[i] = event.Position{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	}
	return pos, nil
}
