// Package eval is memstream's offline, LongMemEval-style benchmark.
//
// It sits beside the pipeline rather than inside it: Generate plants facts,
// preferences, knowledge updates, temporal clues, multi-session answers,
// unanswerable questions and Chinese alias questions in synthetic
// multi-session chats, and writes them as SPEC §3 events plus a labelled
// question file. Whoever drives the benchmark (the `memstream eval` command)
// publishes the events to Kafka, then hands a Recaller that calls the recall
// API to Run, which asks every question and scores the ranked results with
// LongMemEval's retrieval metrics at turn and session level.
//
// Everything here is deterministic for a seed and needs neither a database
// nor a network, so the generator and the scorer can be tested on their own
// and two runs of the benchmark are comparable (for example in the ablation
// table that compares recall arms).
package eval
