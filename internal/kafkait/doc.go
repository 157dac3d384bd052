// Package kafkait holds memstream's integration tests against a real Apache
// Kafka broker: the pipeline's delivery guarantees (exactly-once effect,
// replay, dead-lettering, DLQ replay) and scale-out with several `memstream
// serve --roles ingest` processes in one consumer group, killed, added and
// restarted while events stream in.
//
// The tests run only when KAFKA_BROKERS names the seed brokers
// (comma-separated host:port); scripts/kafka-broker.sh starts a suitable
// single-node KRaft broker and prints the variable, and scripts/ci-kafka.sh
// wraps start, test and stop. Without it every test skips with a message
// saying so. PostgreSQL comes from internal/pgtest, one fresh schema per test.
// Each test creates its own uniquely named topics and deletes them at the end,
// so the suite can run against a broker that other tests share.
package kafkait
