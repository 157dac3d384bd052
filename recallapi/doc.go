// Package recallapi is memstream's HTTP API, route-compatible with
// Hindsight's REST API (SPEC §5): retain (which produces to Kafka, the one
// write path), recall, bank profiles, stats, health, readiness, metrics
// and the OpenAPI description. Errors are JSON with a code, a message and
// the offending field.
package recallapi
