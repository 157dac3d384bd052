// Package pipeline turns Kafka records into persisted memory.
//
// Records flow through lanes; each lane is a chain of stages joined by
// bounded channels: prepare (decode, validate, defense, chunk) →
// extract (batched fact extraction and embedding) → persist (entity
// resolution and idempotent transactions, which also enqueue
// consolidation). A record's key picks its shared lane, so records with one
// key keep their order; a long record goes to a long lane, cut into units,
// so that it never holds a shared lane.
//
// Every stage reports its result per record (BatchError): a record whose
// failure is its own goes to the dead-letter topic with error headers and
// the rest of its batch goes on, while an outage (the database, an LLM or
// embedding provider) stalls the records and retries them until it passes.
// A record is acknowledged to the consumer only after its last transaction
// commits or its dead letter is acknowledged by Kafka. A watchdog reports
// lanes that make no progress (Ready, /health/ready).
//
// New builds a pipeline, Run runs it, Submit feeds it; Stop drains it
// within a deadline, Abort drops its work as a crash would.
package pipeline
