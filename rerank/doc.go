// Package rerank scores recall candidates with a cross-encoder served over
// HTTP (rerank.provider: http). It speaks the two common wire formats: the
// Text Embeddings Inference /rerank API ({query, texts} → [{index, score}])
// and the Cohere-style API ({query, documents} → {results: [{index,
// relevance_score}]}), so vLLM, TEI, Infinity, Jina or Cohere can serve it.
package rerank
