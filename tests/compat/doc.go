// Package compat is the Hindsight compatibility suite (issue 14, SPEC §5):
// Hindsight's own published Python client, hindsight-client 1.1.0, and the
// hindsight-langgraph integration, installed from PyPI into a cached
// virtualenv, drive a real `memstream serve`; so does Hindsight's
// TypeScript client, @vectorize-io/hindsight-client 0.9.1 from npm
// (ts/, compat_ts_test.go). The tests start the server and run each suite
// beside it; docs/COMPATIBILITY.md shows what they measured, and the tests
// hold the two to each other.
package compat
