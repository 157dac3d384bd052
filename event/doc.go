// Package event is the contract of a conversation event on Kafka (SPEC §3):
// its JSON shape, the rules it is validated against, its size limit and the
// error classes a rejected record is dead-lettered with.
//
// It is the one thing the ingest side (consumer, pipeline) and the HTTP
// retain path (recallapi, which produces events) share besides the store,
// so a retain is checked by exactly the rules the pipeline applies, and the
// read side never imports the pipeline.
package event
