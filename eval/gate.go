package eval

// The regression gate of `make test` (TestEvalRegressionGate in
// cmd/memstream) runs Small() with GateSeed through embedded Kafka, the
// ingest pipeline, PostgreSQL and the HTTP recall API, with the offline
// extractor and the local embedder, and fails if overall turn-level
// recall_any@10 is below GateTurnRecallAny10.
//
// Measured 2026-11-30 (commit 0ff5716, no consolidation worker running)
// with
//
//	go test -c -o /tmp/cmdtest ./cmd/memstream
//	/tmp/cmdtest -test.run TestEvalRegressionGate -test.v   # 11 times
//
// (equivalently: memstream eval gen --seed 1 --out DIR && memstream eval run DIR).
// Turn-level recall_any@10 was 0.630 (34 of 54 answerable questions) in 7
// runs and 0.593 (32 of 54) in 4: the same binary ingests the same events
// into slightly different graphs, because temporal and entity links are
// drawn to whichever facts the two persist lanes have already committed.
// The threshold is the lower value minus 0.03, about two questions: enough
// to absorb that jitter, not enough to hide a lost question type. When
// recall improves, re-measure and raise it in the same commit.
const (
	GateSeed            = 1
	GateTurnRecallAny10 = 0.56
)
