// Package chunk cuts a conversation into pieces small enough for one
// extraction call, the second stage of the ingest pipeline (defense → chunk →
// batch-extract → resolve → persist).
//
// Splitting is conversation-aware because facts are attributed to speakers
// and dated by message timestamps: a message that fits is never cut, so a
// sentence is never torn from the speaker who said it; consecutive messages
// are packed together up to the size limit so the extractor sees context and
// each call carries enough text; and every piece keeps its message index,
// role, name and timestamp in a Part, because the extractor resolves "I" to the
// speaker and "yesterday" against the message time.
//
// A message longer than the limit is split recursively by separator
// priority, like LangChain's RecursiveCharacterTextSplitter and the Hindsight
// chunker: paragraph, line, sentence end (. ! ? and 。！？), clause (；，;,),
// whitespace, and finally single characters. Separators stay attached to the
// piece they end, so the pieces of a message concatenate back to it exactly:
// nothing is lost or duplicated, which the fuzz test checks. Sizes count
// runes, not bytes, so Chinese text gets the same budget per character as
// English.
//
// Output is deterministic: the same messages always give the same chunks,
// which keeps chunk content hashes, and so replays, idempotent.
package chunk
