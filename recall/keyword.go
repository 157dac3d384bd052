package recall

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/memstream/memstream/text"
)

// maxKeywordTerms bounds the OR query: a pasted paragraph should not turn
// into a hundred-way disjunction.
const maxKeywordTerms = 24

// termQuery turns one term into a tsquery. plainto_tsquery never raises a
// syntax error and treats its input as plain words, so user text cannot
// inject tsquery operators. The English config stems words ("orders" →
// order) to match the text part; the simple config matches search_aux
// (entity names, CJK bigrams) verbatim. A code such as "A-7731-QX" becomes
// the AND of its parts as the parser split them at indexing time ('-7731'
// & 'qx'), so it matches exactly what the document parser produced.
const termQuery = `(plainto_tsquery('english', x.term) || plainto_tsquery('simple', x.term))`

const (
	// qKeywordDF counts, per term, the bank's facts that contain it, up to
	// $3: one GIN probe each, and at most $3 heap visits, because the
	// bank and state filters are not in the index. A term found $3 times
	// is common enough that its exact count changes nothing but the cost.
	// ts_stat would scan the whole bank.
	qKeywordDF = `SELECT x.term, (SELECT count(*) FROM (
		SELECT 1 FROM memory_units m WHERE m.bank_id = $1 AND m.state = 'valid' AND m.search_tsv @@ ` + termQuery + `
		LIMIT $3) c)
	FROM unnest($2::text[]) AS x(term)`

	// qKeywordBankSize is N of the IDF. It reads the whole bank's index,
	// so its answer is cached (see bankSizeTTL).
	qKeywordBankSize = `SELECT count(*) FROM memory_units m WHERE m.bank_id = $1 AND m.state = 'valid'`

	// qKeywordArm finds facts through the GIN index with the match terms
	// $8, ORed (or ANDed when $9 is 'and', see matchTerms), taking at
	// most $10 of them so a common word cannot make it rank a whole bank.
	// Each row then sums the IDF of all the kept terms $5/$6 it contains,
	// and ts_rank_cd over their OR (title-weight A = text, B = aux)
	// breaks ties by proximity and density. tsquery's text form re-parses
	// exactly, since it quotes every lexeme. Ordering by IDF first puts
	// the fact with the rare id above facts that repeat a common word.
	qKeywordArm = `WITH t AS (
		SELECT x.term, x.idf, ` + termQuery + ` AS tq
		FROM unnest($5::text[], $6::float8[]) AS x(term, idf)),
	u AS (SELECT * FROM t WHERE numnode(tq) > 0),
	f AS (SELECT string_agg('(' || tq::text || ')', ' | ')::tsquery AS q FROM u),
	mt AS (SELECT ` + termQuery + ` AS tq FROM unnest($8::text[]) AS x(term)),
	fm AS (SELECT string_agg('(' || tq::text || ')', CASE $9::text WHEN 'and' THEN ' & ' ELSE ' | ' END)::tsquery AS q
		FROM mt WHERE numnode(tq) > 0),
	c AS (
		SELECT m.id, m.search_tsv, m.mentioned_at
		FROM fm, memory_units m
		WHERE fm.q IS NOT NULL AND m.search_tsv @@ fm.q AND ` + unitFilter + `
		LIMIT $10)
	SELECT c.id, s.idf * (1 + ts_rank_cd('{0.1, 0.2, 0.4, 1.0}', c.search_tsv, f.q, 1)) AS score
	FROM f, c
	CROSS JOIN LATERAL (SELECT coalesce(sum(u.idf), 0) AS idf FROM u WHERE c.search_tsv @@ u.tq) s
	ORDER BY score DESC, c.mentioned_at DESC
	LIMIT $7`
)

// Match modes of qKeywordArm.
const (
	matchOr  = "or"
	matchAnd = "and"
)

// matchTerms picks the terms that find rows, from kept terms and their
// document frequencies: the rarest first, ORed, while their summed
// frequencies stay within budget, since every row found is ranked. When
// even the rarest term alone is over budget ("Maria" in a bank that
// mentions her 3 000 times), the query's terms are ANDed instead ("Maria
// Lopez" names one person); a single common term is matched alone, and the
// row budget of the query caps it.
func matchTerms(terms []string, dfs []int64, budget int64) ([]string, string) {
	order := make([]int, len(terms))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(dfs[a], dfs[b]) })
	var out []string
	var sum int64
	for _, i := range order {
		if sum+dfs[i] > budget {
			break
		}
		sum += dfs[i]
		out = append(out, terms[i])
	}
	switch {
	case len(out) > 0:
		return out, matchOr
	case len(terms) > 1:
		return terms, matchAnd
	default:
		return terms, matchOr
	}
}

// keywordTerms are the query's informative words and CJK bigrams
// (text.QueryTerms), plus code-like tokens kept whole ("A-7731-QX",
// "v2.3.1"), because splitting them loses the very thing that makes them
// rare. Terms are reduced to letters, digits and inner - . / so nothing
// else reaches the database.
func keywordTerms(query string) []string {
	terms := text.QueryTerms(query)
	seen := map[string]bool{}
	for _, t := range terms {
		seen[t] = true
	}
	for _, f := range strings.FieldsFunc(query, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '.' && r != '/' && r != '_'
	}) {
		f = strings.Trim(f, "-./_")
		if !isCode(f) {
			continue
		}
		lf := strings.ToLower(f)
		if !seen[lf] {
			seen[lf] = true
			terms = append(terms, lf)
		}
	}
	out := terms[:0]
	for _, t := range terms {
		t = strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '.' || r == '/' {
				return r
			}
			return -1
		}, t)
		if t != "" {
			out = append(out, t)
		}
	}
	if len(out) > maxKeywordTerms {
		out = out[:maxKeywordTerms]
	}
	return out
}

// isCode reports a token that mixes digits with letters or separators.
func isCode(s string) bool {
	if len(s) < 3 {
		return false
	}
	digit, other := false, false
	for _, r := range s {
		switch {
		case unicode.IsDigit(r):
			digit = true
		case r == '-' || r == '.' || r == '/' || r == '_' || unicode.IsLetter(r):
			other = true
		}
	}
	return digit && other
}

// keyword runs the full-text arm.
func (r *Recaller) keyword(ctx context.Context, q *query) ([]Candidate, string, error) {
	terms := keywordTerms(q.Query)
	// Words with which facts state a slot the query asks about ("moved",
	// "settled" for "where do I live"), at a reduced weight.
	expanded := map[string]bool{}
	for _, s := range querySlots(q) {
		for _, t := range s.Terms() {
			if !slices.Contains(terms, t) && len(terms) < maxKeywordTerms {
				terms = append(terms, t)
				expanded[t] = true
			}
		}
	}
	if len(terms) == 0 {
		return nil, "no informative terms", nil
	}
	stats, err := r.termStats(ctx, q.BankID, terms)
	if err != nil {
		return nil, "", err
	}
	kept, idfs, dfs := pickTerms(stats, r.cfg.MaxDocFreq, r.cfg.MinDocsForDF)
	for i, t := range kept {
		if expanded[t] {
			idfs[i] *= slotTermWeight
		}
	}
	if len(kept) == 0 {
		return nil, "no query term occurs in the bank", nil
	}
	match, mode := matchTerms(kept, dfs, int64(r.cfg.KeywordRowBudget))
	args := append(q.filterArgs(), kept, idfs, q.pool, match, mode, r.cfg.KeywordRowBudget)
	var out []Candidate
	err = r.genericQuery(ctx, qKeywordArm, args, func(row pgx.Rows) error {
		var c Candidate
		if err := row.Scan(&c.ID, &c.Score); err != nil {
			return err
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("keyword search: %w", err)
	}
	return out, "", nil
}

// termStats returns each term's (capped) document frequency and the bank
// size, from the cache where it is fresh. Both change slowly, agents ask
// about the same names again and again, and counting is most of what the
// keyword arm would otherwise cost on a big bank.
func (r *Recaller) termStats(ctx context.Context, bank string, terms []string) ([]termStat, error) {
	now := time.Now()
	n, err := r.bankSize(ctx, bank, now)
	if err != nil {
		return nil, err
	}
	stats := make([]termStat, len(terms))
	var missing []string
	for i, t := range terms {
		stats[i] = termStat{term: t, n: n}
		if df, ok := r.stats.df(bank, t, now); ok {
			stats[i].df = df
		} else {
			missing = append(missing, t)
		}
	}
	if len(missing) == 0 {
		return stats, nil
	}
	// One past the budget: a term counted that far is over it, however
	// far it goes.
	got := map[string]int64{}
	err = r.genericQuery(ctx, qKeywordDF, []any{bank, missing, r.cfg.KeywordRowBudget + 1}, func(row pgx.Rows) error {
		var term string
		var df int64
		if err := row.Scan(&term, &df); err != nil {
			return err
		}
		got[term] = df
		r.stats.putDF(bank, term, df, now)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("keyword document frequency: %w", err)
	}
	for i := range stats {
		if df, ok := got[stats[i].term]; ok {
			stats[i].df = df
		}
	}
	return stats, nil
}

// bankSize is the bank's number of valid facts, from the cache where it
// is fresh (the keyword and graph arms both need it).
func (r *Recaller) bankSize(ctx context.Context, bank string, now time.Time) (int64, error) {
	if n, ok := r.stats.bankSize(bank, now); ok {
		return n, nil
	}
	var n int64
	if err := r.pool.QueryRow(ctx, qKeywordBankSize, bank).Scan(&n); err != nil {
		return 0, fmt.Errorf("bank size: %w", err)
	}
	r.stats.putBankSize(bank, n, now)
	return n, nil
}

// termStat is a term's document frequency df in a bank of n facts.
type termStat struct {
	term  string
	df, n int64
}

// pickTerms keeps the terms that occur in the bank and are not so common
// that they match most of it, and weighs each by BM25's IDF,
// ln(1 + (N - df + 0.5)/(df + 0.5)). If every term is common, the rarest
// one is kept, so a query of common words still finds something.
func pickTerms(stats []termStat, maxDF float64, minDocs int) ([]string, []float64, []int64) {
	var terms []string
	var idfs []float64
	var dfs []int64
	rarest := -1
	for i, s := range stats {
		if s.df == 0 {
			continue
		}
		if rarest < 0 || s.df < stats[rarest].df {
			rarest = i
		}
		if s.n >= int64(minDocs) && float64(s.df) > maxDF*float64(s.n) {
			continue
		}
		terms = append(terms, s.term)
		idfs = append(idfs, idf(s.df, s.n))
		dfs = append(dfs, s.df)
	}
	if len(terms) == 0 && rarest >= 0 {
		s := stats[rarest]
		return []string{s.term}, []float64{idf(s.df, s.n)}, []int64{s.df}
	}
	return terms, idfs, dfs
}

func idf(df, n int64) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}
