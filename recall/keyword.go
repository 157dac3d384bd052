package recall

import (
	"context"
	"fmt"
	"math"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/memstream/memstream/lexical"
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
	// qKeywordDF counts, per term, the bank's facts that contain it (one
	// GIN probe each) plus the bank's size, for inverse document
	// frequency. ts_stat would scan the whole bank.
	qKeywordDF = `SELECT x.term,
		(SELECT count(*) FROM memory_units m WHERE m.bank_id = $1 AND m.state = 'valid' AND m.search_tsv @@ ` + termQuery + `),
		(SELECT count(*) FROM memory_units m WHERE m.bank_id = $1 AND m.state = 'valid')
	FROM unnest($2::text[]) AS x(term)`

	// qKeywordArm ORs the kept terms into one tsquery (tsquery's text form
	// re-parses exactly, since it quotes every lexeme), so the GIN index
	// answers the match; each row then sums the IDF of the terms it
	// contains, and ts_rank_cd (title-weight A = text, B = aux) breaks ties
	// by proximity and density. Ordering by IDF first puts the fact with
	// the rare id above facts that repeat a common word.
	qKeywordArm = `WITH t AS (
		SELECT x.term, x.idf, ` + termQuery + ` AS tq
		FROM unnest($5::text[], $6::float8[]) AS x(term, idf)),
	u AS (SELECT * FROM t WHERE numnode(tq) > 0),
	f AS (SELECT string_agg('(' || tq::text || ')', ' | ')::tsquery AS q FROM u)
	SELECT m.id, s.idf * (1 + ts_rank_cd('{0.1, 0.2, 0.4, 1.0}', m.search_tsv, f.q, 1)) AS score
	FROM f, memory_units m
	CROSS JOIN LATERAL (SELECT coalesce(sum(u.idf), 0) AS idf FROM u WHERE m.search_tsv @@ u.tq) s
	WHERE f.q IS NOT NULL AND m.search_tsv @@ f.q AND ` + unitFilter + `
	ORDER BY score DESC, m.mentioned_at DESC
	LIMIT $7`
)

// keywordTerms are the query's informative words and CJK bigrams
// (lexical.QueryTerms), plus code-like tokens kept whole ("A-7731-QX",
// "v2.3.1"), because splitting them loses the very thing that makes them
// rare. Terms are reduced to letters, digits and inner - . / so nothing
// else reaches the database.
func keywordTerms(query string) []string {
	terms := lexical.QueryTerms(query)
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
	if len(terms) == 0 {
		return nil, "no informative terms", nil
	}
	rows, err := r.pool.Query(ctx, qKeywordDF, q.BankID, terms)
	if err != nil {
		return nil, "", fmt.Errorf("keyword document frequency: %w", err)
	}
	stats, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (termStat, error) {
		var s termStat
		err := row.Scan(&s.term, &s.df, &s.n)
		return s, err
	})
	if err != nil {
		return nil, "", fmt.Errorf("keyword document frequency: %w", err)
	}
	kept, idfs := pickTerms(stats, r.cfg.MaxDocFreq, r.cfg.MinDocsForDF)
	if len(kept) == 0 {
		return nil, "no query term occurs in the bank", nil
	}
	args := append(q.filterArgs(), kept, idfs, q.pool)
	rows, err = r.pool.Query(ctx, qKeywordArm, args...)
	if err != nil {
		return nil, "", fmt.Errorf("keyword search: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Candidate, error) {
		var c Candidate
		err := row.Scan(&c.ID, &c.Score)
		return c, err
	})
	if err != nil {
		return nil, "", fmt.Errorf("keyword search: %w", err)
	}
	return out, "", nil
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
func pickTerms(stats []termStat, maxDF float64, minDocs int) ([]string, []float64) {
	var terms []string
	var idfs []float64
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
	}
	if len(terms) == 0 && rarest >= 0 {
		s := stats[rarest]
		return []string{s.term}, []float64{idf(s.df, s.n)}
	}
	return terms, idfs
}

func idf(df, n int64) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}
