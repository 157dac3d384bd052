// Package chaos holds memstream's bounded chaos test: a real `memstream
// serve` process against its own PostgreSQL server and an in-process
// Kafka (kfake), with broker faults injected, the database server
// restarted, the memstream process killed with SIGKILL and started again,
// a mix of poison records, a 1 MB event and retried retains. It checks
// that every event is stored once or dead-lettered, none lost and none
// doubled, and prints one summary line (`make test` shows it).
//
// The faults are triggered by progress (a share of the events stored),
// never by timers, and every assertion is about the final state, so the
// test is deterministic in what it checks; only its running time depends
// on the machine.
package chaos
