// Package resolve decides which entity of a bank a name refers to. It is the
// decision half of the pipeline's resolve stage: the pipeline extracts entity
// mentions from a message, loads candidate entities of the bank from
// PostgreSQL (by alias keys from [Keys] and a pg_trgm prefilter that agrees
// with [Trigram]), and asks a [Resolver] whether the mention is one of them;
// if not, it creates a new entity. The package does no I/O, so its rules are
// tested directly and the store stays a plain data layer.
//
// Agents talk about people the way people do: 张伟 in one message, Zhang Wei
// in the next, 老张 ("old Zhang") over lunch, Mr. Zhang in an email. Memory
// about one person must end up on one entity, or recall misses half of it;
// but merging two people corrupts both, and is much harder to undo than a
// missed link. So the rules are asymmetric:
//
//   - Full names match exactly after [Normalize] (case, width, accents,
//     punctuation, honorifics), across scripts through pinyin (张伟 = Zhang
//     Wei = Wei Zhang), and through a small table of English nicknames
//     (Bob Smith = Robert Smith).
//   - Short forms (老张, 小张, 张总, Mr. Zhang, a lone "Alice") match a full
//     name only when exactly one person in the bank fits; with two Zhangs,
//     老张 matches nobody unless co-occurrence singles one out.
//   - Similar but different names (Alice, Alicia) never merge; a close
//     spelling (a typo) needs support from context: embedding similarity,
//     co-occurrence and recency raise the score.
//   - Kinds never mix: a person is not a place of the same name.
//
// [GroupAliases] links the aliases that one message uses side by side
// ("张伟 (Zhang Wei)"), so they are stored as aliases of one entity.
package resolve
