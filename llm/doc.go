// Package llm is the OpenAI-compatible fact extractor of the ingest
// pipeline's extract stage (llm.provider = openai).
//
// It packs several chunks of one bank into one chat-completion call with a
// strict JSON schema (each call a row of that bank's LLM trace, package
// llmtrace), keeps at most llm.concurrency calls in flight across the whole
// process, and retries 429, 5xx, timeouts and connection errors with
// exponential backoff and jitter. It repairs small slips in an answer and
// re-asks once when the answer is not valid; only an answer that is still
// invalid falls back to the offline extractor, counted in
// memstream_llm_fallback_chunks_total and logged at most once a minute.
//
// Every other failure is returned, classified (*Error): an outage
// (Transient) or a bad key or model (Unavailable) stalls ingest instead of
// degrading it silently, and an input the server refuses fails only that
// input (InputRejected, in an *extract.BatchError).
package llm
