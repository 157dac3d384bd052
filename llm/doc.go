// Package llm is the OpenAI-compatible fact extractor of the ingest
// pipeline's extract stage (llm.provider = openai).
//
// It packs several chunks into one chat-completion call with a strict JSON
// schema, keeps at most llm.concurrency calls in flight across the whole
// process, retries 429, 5xx, timeouts and connection errors with
// exponential backoff and jitter, repairs or re-asks once when the answer is
// not valid, and finally falls back to the offline extractor for the chunks
// of a call that still failed: an LLM outage slows extraction down and makes
// it coarser, but never loses a record. Only the end of the caller's context
// makes Extract fail.
package llm
