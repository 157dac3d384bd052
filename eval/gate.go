package eval

// The regression gate of `make test` (TestEvalRegressionGate in
// cmd/memstream) runs Small() with GateSeed through embedded Kafka, the
// ingest pipeline, the consolidation worker, PostgreSQL and the HTTP recall
// API, with the offline extractor and the local embedder, and fails if
// overall turn-level recall_any@10 is below GateTurnRecallAny10.
//
// Measured 2026-11-30 at commit e435efe (consolidation worker wired in,
// observations credited with their evidence turns) with
//
//	go test -c -o /tmp/cmdtest ./cmd/memstream
//	for i in $(seq 6); do /tmp/cmdtest -test.run TestEvalRegressionGate -test.v | grep recall_any; done
//
// (equivalently: memstream eval gen --seed 1 --out DIR && memstream eval run DIR):
// 0.574 (31 of 54 answerable questions) in 6 of 6 runs. Before the
// consolidation worker existed the same test gave 0.593 or 0.630 from run
// to run, because temporal and entity links are drawn to whichever facts
// the two persist lanes have already committed; session-level recall still
// varies between 0.815 and 0.870. The threshold is the measured value
// minus 0.03, about two questions: enough to absorb that jitter, not
// enough to hide a lost question type. When recall improves, re-measure
// and raise it in the same commit.
const (
	GateSeed            = 1
	GateTurnRecallAny10 = 0.54
)
