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

// NewPublisher produces to topic through cl.
func NewPublisher(cl *kgo.Client, topic string) *Publisher { return &Publisher{cl: cl, topic: topic} }

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
