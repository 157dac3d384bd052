// Package layout holds the repository's layout rules as a test (issue 17):
// the read side never imports the ingest pipeline, SQL lives in package
// store only, cmd/memstream stays small enough to be wiring, and the
// benchmarks' entry points live in internal/bench, and docs/DESIGN.md's
// package map names every package. It has no code of its own;
// `go test ./internal/layout` checks the tree it sits in.
package layout
