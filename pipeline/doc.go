// Package pipeline turns Kafka records into persisted memory.
//
// Records flow through lanes; each lane is a chain of stages joined by
// bounded channels: prepare (decode, validate, defense, chunk) →
// extract (batched fact extraction and embedding) → persist (entity
// resolution and one idempotent transaction per batch, which also enqueues
// consolidation). A record's key picks its lane, so records with one key
// keep their order. A record that cannot be processed goes to the
// dead-letter topic with error headers; the rest of its batch goes on. A
// record is acknowledged to the consumer only after its transaction commits
// or its dead letter is acknowledged by Kafka.
package pipeline
