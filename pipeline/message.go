package pipeline

import "github.com/twmb/franz-go/pkg/kgo"

// Message is one Kafka record handed to the pipeline. Ack must be called
// exactly once, and only after everything derived from the record is
// committed in PostgreSQL or the record is acknowledged by the dead-letter
// topic: the consumer's offset commit follows it.
type Message struct {
	Record *kgo.Record
	Ack    func()
}
