// Package broker connects memstream to Kafka: it runs the embedded
// in-process broker (kfake, with its log persisted under data_dir/kafka)
// when no brokers are configured, ensures the event and dead-letter topics
// exist, and provides the producer side: event publishing for retain and
// `memstream produce`, dead-letter writes with error headers, and the
// replay of dead letters to their source topic (`memstream dlq replay`).
package broker
