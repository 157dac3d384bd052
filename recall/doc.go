// Package recall answers "what do I remember about X?" for an agent: the
// read side of memstream (SPEC §5, POST …/memories/recall).
//
// The write side (consumer → extract → store.PersistBatch) leaves facts in
// memory_units with an embedding, a tsvector, occurrence times, entities and
// links. No single way of looking them up is enough, so a [Recaller] runs
// four retrievers ("arms") concurrently, each on its own connection and under
// its own timeout:
//
//   - semantic: nearest neighbours of the query embedding through the HNSW
//     index, with pgvector's iterative scan so that the bank, type and tag
//     filters cannot starve the result (a plain HNSW scan filters after the
//     fact and may return fewer rows than asked);
//   - keyword: a full-text OR query over the informative query terms,
//     weighted by their rarity in the bank, for ids, numbers and names that
//     embeddings blur;
//   - graph: entities named in the query (through the alias table, so
//     "Zhang Wei", 张伟 and 老张 meet) and entities of the top semantic hits,
//     expanded over unit_entities and memory_links;
//   - temporal: facts whose occurrence (or mention) falls in the periods the
//     query names ("last Saturday", 上个月), ranked by similarity and
//     closeness. Without a time expression it returns nothing.
//
// A failed or slow arm degrades the answer instead of failing it; the trace
// says which arm failed and why. The candidate lists are fused (reciprocal
// rank fusion by default, or round-robin interleaving), hydrated in one
// query, re-scored from the fused rank and the similarity, weighed by
// recency, with duplicates collapsed and the switchable ranking
// heuristics applied (Request.Off; each is kept only while the held-out
// ablation shows it helps), and cut to the caller's token budget, counted with the cl100k
// tokenizer that the agent's model family uses.
//
// The arms' statements live in package store (store/recall.go), behind
// the small Store interface declared here; recall decides what to ask and
// how to score the answers. User text reaches PostgreSQL only as bound
// parameters (through plainto_tsquery for the keyword arm).
package recall
