// Package embed turns text into the dense vectors that memstream stores in
// pgvector and compares at recall time.
//
// The pipeline embeds every extracted fact once at ingest (the embed stage,
// after extract and before resolve), and the recall path embeds each query.
// Both sides must use the same provider, model and dimension, because vectors
// from different spaces are not comparable; the dimension is fixed by the
// database column, so every provider checks it.
//
// Three types live here:
//
//   - [Local] is the default provider ("local"). It needs no network or model
//     files: it hashes word and character n-grams into a fixed number of
//     buckets. It is deterministic across runs and machines, so tests,
//     benchmarks and the offline demo give stable results, and it is fast
//     enough that ingest is never waiting on it.
//   - [OpenAI] calls any OpenAI-compatible /v1/embeddings endpoint (OpenAI,
//     vLLM, Ollama, LM Studio, TEI), in batches, with retries.
//   - [Cached] puts an LRU cache in front of either, because agents repeat
//     themselves: the same names, greetings and queries come back often and
//     a remote call costs far more than a map lookup.
//
// The pipeline declares its own small Embedder interface; these concrete
// types satisfy it.
package embed
