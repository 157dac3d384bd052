// Package llmtrace records every request memstream sends to its LLM, one
// row per HTTP request, for the bank it was made for: what Hindsight's
// GET …/llm-requests and …/llm-requests/stats serve.
//
// Callers bind who a request is for to its context (Start: bank and
// operation, one trace id per run; WithScope: the kind of call), and the
// Recorder's Transport, under every OpenAI-compatible client, turns each
// request into a row: model, status, latency, the provider's token usage
// and finish reason, and the error of a failed one. A request whose
// context names no bank is not recorded. Prompts and answers are not
// kept: they hold the bank's content, which lives in its facts under
// their own deletion rules.
//
// Recording never fails or holds up a call: rows go into a bounded buffer
// that Run writes in batches; a full buffer drops the row and a failed
// write drops its batch, both counted in memstream_llm_trace_dropped_total
// and logged at most once a minute. Run also prunes the table by age
// (llm.trace_retention) and to each bank's newest llm.trace_max_per_bank
// rows.
package llmtrace
