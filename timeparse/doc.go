// Package timeparse finds time expressions in English and Chinese text and
// resolves them to half-open ranges [Start, End) against a reference time.
//
// Two parts of memstream depend on it, so both must agree on what a phrase
// means: the extractor resolves "last Saturday" or "上周六" in a message against
// the message timestamp to fill a fact's occurred_start/occurred_end, and the
// recall temporal retriever resolves the same phrase in a query against the
// query timestamp to build its time filter. A fact and a query that say the
// same thing must produce the same range.
//
// Why a hand-written scanner rather than a general date library: the
// candidates (go-dateparser, olebedev/when) return a single instant, not a
// range with a granularity, so "last week" or "去年" lose their extent; they do
// not cover the Chinese week and weekend forms (上个周末, 上礼拜六) or seasons;
// and they search text with large regular-expression sets, while the
// extractor calls Parse for every sentence at ingest and needs microseconds,
// not milliseconds. The grammar memstream needs is small and closed, so a
// token scanner for English and a rune scanner for Chinese cover it without
// regular expressions.
//
// Conventions, chosen so that results are predictable and documented:
//   - Weeks start on Monday (ISO 8601, and the Chinese convention: 周日 ends
//     the week). A weekend is Saturday 00:00 to Monday 00:00.
//   - A bare weekday ("on Saturday", "周六") is the nearest one strictly
//     before the reference day: chat memory talks mostly about the past.
//   - "last Saturday" is also the nearest past one; "next Saturday" the
//     nearest future one; "this Saturday" the one in the current week. The
//     Chinese forms are explicit about the week: 上周六 is the Saturday of the
//     previous week, 下周六 of the next one.
//   - "in March" and a bare "3月" are the most recent March not after the
//     reference month; "March 3" and "3月5日" without a year use the reference
//     year.
//   - Seasons are meteorological, northern hemisphere: spring is March to
//     May, summer June to August, autumn September to November, and winter
//     December to February (winter of year Y starts in December of Y).
//   - "N weeks ago" is the whole week containing the day N weeks back, and
//     likewise for months and years, so that a fact and a query rounded to
//     the same unit overlap.
//
// All times are computed in ref's location, at midnight boundaries.
package timeparse
