// Package extract turns chunks of conversation into facts, the batch-extract
// stage of the ingest pipeline (defense → chunk → batch-extract → resolve →
// persist).
//
// Fact is the contract between extraction and everything after it: the
// resolver maps Entities to canonical entities, persist writes memory_units
// and memory_links from Causal, and recall filters on OccurredStart/End and
// MentionedAt. Every provider, the rule-based Offline extractor here or an
// LLM-backed one, returns the same type and passes Validate, so the rest of
// the pipeline never depends on which one ran.
//
// Offline is the default provider. It is deterministic (the same chunk
// always yields the same facts, which keeps replays idempotent) and fast
// enough to run on every message at ingest. Its rules, English and Chinese:
//   - sentences are segmented on . ! ? and 。！？ and line breaks, keeping
//     abbreviations (Dr., e.g.) and initials together;
//   - content-free sentences (hi, thanks!, ok, 好的, 谢谢) are dropped;
//   - a sentence in the first or second person is prefixed with its
//     speaker, "Alice: I moved to Shanghai", and otherwise kept verbatim;
//   - first person, or a subjectless action ("Booked the flight", 已经订好了),
//     makes an experience; anything else is world;
//   - entities are capitalised names, @handles, quoted titles, places and
//     organisations by suffix (市 省 区 县, Inc, 公司, 大学), major cities in
//     both scripts, Chinese names by surname, and 老X/小X;
//   - time expressions are resolved by package timeparse against the
//     message timestamp into OccurredStart/End; MentionedAt is always the
//     message timestamp;
//   - a causal cue splits a sentence into a cause fact and an effect fact.
package extract
