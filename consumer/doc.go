// Package consumer reads conversation events from Kafka and hands them to
// the pipeline, committing offsets only behind a per-partition checkpoint
// watermark: an offset is committed once it and every earlier offset of its
// partition have been persisted or dead-lettered. It commits on a period,
// when partitions are revoked, and on shutdown, and it pauses fetching when
// too many records or bytes are in flight.
package consumer
