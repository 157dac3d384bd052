// Package eval is memstream's offline, LongMemEval-style benchmark.
//
// It sits beside the pipeline rather than inside it: Generate plants facts,
// preferences, knowledge updates, temporal clues, multi-session answers,
// unanswerable questions and Chinese alias questions in synthetic
// multi-session chats, and writes them as SPEC §3 events plus a labelled
// question file. On request it also writes a dialogue part: chats between
// two named people, asked about in the third person (dialogue.go), and its
// tuning counterpart with a vocabulary of its own (dialogue-tuning, whose
// misses are written out). Whoever drives the benchmark (the `memstream eval` command)
// publishes the events to Kafka, then hands a Recaller that calls the recall
// API to Run, which asks every question and scores the ranked results with
// LongMemEval's retrieval metrics at turn and session level.
//
// APIRecaller is that Recaller: it calls the recall API and credits an
// observation with the turns of its evidence facts. EvidenceCoverage tells
// ingestion losses from ranking losses, Misses lists the failed questions
// with what recall returned instead, AblationVariants and Collapse drive
// the ablation, QualityBars checks a report against the current round's
// targets, and gate.go holds the threshold of the `make test` regression
// gate.
//
// Apart from APIRecaller, everything here is deterministic for a seed and
// needs neither a database nor a network, so the generator and the scorer
// can be tested on their own and two runs of the benchmark are comparable
// (for example in the ablation table that compares recall arms).
package eval
