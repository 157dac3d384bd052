// Package lifecycle tests what a real `memstream serve` process does across
// crashes and restarts, and what only a whole process shows: an operation
// left running by a SIGKILLed server is taken back and finished by the
// next one, and webhooks announce each event once whichever way it came
// in (HTTP retain or straight from Kafka). Each test builds the binary,
// runs it on free ports with its own data directory (embedded Kafka) and
// its own schema of the shared test PostgreSQL, and kills only processes
// it started.
package lifecycle
