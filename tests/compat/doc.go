// Package compat is the Hindsight compatibility suite (issue 14, SPEC §5):
// Hindsight's own published Python client, hindsight-client 1.1.0, and the
// hindsight-langgraph integration, installed from PyPI into a cached
// virtualenv, drive a real `memstream serve`. compat_test.go starts the
// server and runs the pytest suite beside it; docs/COMPATIBILITY.md shows
// what it measured, and the test holds the two to each other.
package compat
