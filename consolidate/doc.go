// Package consolidate turns facts into evidence-backed observations: the
// background "worker" role of memstream, after persist in the pipeline.
//
// PersistBatch enqueues a per-bank wake-up job in the same transaction as
// the facts; the Worker claims jobs from the store's SKIP LOCKED queue and
// drains the bank's unconsolidated facts (the consolidation_queue) in
// batches. One statement fetches, for every fact of a batch, candidate
// observations of the same scope (bank and exact tag set) from three
// rankings — similarity, keyword/entity overlap, and the fact's
// subject|attribute slot — fused by interleaving so that the semantic
// near-twin is never crowded out. An Adjudicator (offline rules by
// default, or an OpenAI-compatible model) then decides CREATE / UPDATE /
// DELETE with a reason, group by group in fact order; a view of what the
// batch has decided so far corrects each fact's candidates, so a fact sees
// what the facts before it did exactly as when facts are applied one by
// one. The batch's decisions are applied in one transaction together with
// marking its facts consolidated, so a crash mid-batch never applies a
// change twice.
//
// Observations keep every supporting fact as verbatim evidence, a history
// of their changes (nothing is hard-deleted) and a Trend label computed
// from evidence times. After a bank drains, its mental models are
// refreshed (at most once per minimum interval) with an extractive,
// cited summary of their best observations; WritePages exports them as
// markdown knowledge pages.
package consolidate
