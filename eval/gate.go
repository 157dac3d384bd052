package eval

// The regression gate of `make test` (TestEvalRegressionGate in
// cmd/memstream) runs Small() with GateSeed through embedded Kafka, the
// ingest pipeline, the consolidation worker, PostgreSQL and the HTTP recall
// API, with the offline extractor and the local embedder, and fails if
// overall turn-level recall_any@10 is below GateTurnRecallAny10.
//
// Measured 2026-11-30 at commit f0d74ca (duplicate collapse, tie-aware
// RRF, assistant chit-chat filter, attribute slots, Chinese nicknames,
// hub entities out of graph seeding) with
//
//	go test -c -o /tmp/cmdtest ./cmd/memstream
//	for i in $(seq 6); do /tmp/cmdtest -test.run TestEvalRegressionGate -test.v | grep recall_any; done
//
// (equivalently: memstream eval gen --seed 1 --out DIR && memstream eval run DIR):
// 0.778 (42 of 54 answerable questions) in 3 of 6 runs and 0.796 (43) in
// the other 3; `eval run` of the same dataset gave 0.796 twice. Results
// jitter by a question or two from run to run because temporal and entity
// links are drawn to whichever facts the two persist lanes have already
// committed, and observations to whatever consolidation has seen. The
// previous gate was 0.54 (measured 0.574 at e435efe). The threshold is the
// lowest measured value minus about two questions (0.04): enough to absorb
// that jitter, not enough to hide a lost question type. When recall
// improves, re-measure and raise it in the same commit.
const (
	GateSeed            = 1
	GateTurnRecallAny10 = 0.74
)
