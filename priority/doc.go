// Package priority lets live work go ahead of background work where both
// compete for a scarce resource: the LLM's concurrent calls and the local
// embedding model's forward passes.
//
// Live work is what a user or a stream waits for: recall, reflect, and the
// extraction and embedding of retained events. Background work is
// consolidation (and what it triggers, such as mental-model refreshes). A
// context says which it is (WithClass, Of); live is the default, so only
// the consolidation worker marks its context.
//
// A Gate has a fixed number of slots. When one frees, the oldest live
// waiter gets it; background work may also be capped below the slot count,
// so that live work finds a slot without waiting for background calls to
// end. Strict priority would starve background work under a saturating
// live load and let the consolidation backlog grow without bound, which is
// the failure memstream exists to avoid: after MaxBypass live grants pass
// over a waiting background request, the next slot is its.
package priority
