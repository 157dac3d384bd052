// Package recallapi is memstream's HTTP API, route-compatible with
// Hindsight's REST API (SPEC §5): retain (which produces to Kafka, the one
// write path), recall, reflect, memories, observations, entities, mental
// models, documents, bank profiles, stats, health, readiness, metrics and
// the OpenAPI description.
//
// One route table (server.go) drives both the mux and /openapi.json, so
// the description cannot drift from the handlers; a test holds them to
// each other. Every route but health, readiness, metrics and the OpenAPI
// document needs a bearer key with the route's scope (read < write <
// admin) and the bank; keys are kept only as SHA-256 hashes and compared
// in constant time, and a key for another bank gets the same 403 whether
// or not the bank exists.
//
// Mental models are read far more often than written, so GET is served
// from an LRU cache. Writes evict locally and announce themselves with
// NOTIFY in their own transaction; Start runs a LISTEN loop that evicts
// on every replica.
//
// Errors are JSON {"error": {"code", "message", "field"}}, with the
// message again as Hindsight's "detail"; validation errors name the
// offending field.
package recallapi
