package recall

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/text"
)

// maxKeywordTerms bounds the OR query: a pasted paragraph should not turn
// into a hundred-way disjunction.
const maxKeywordTerms = 24

// Match modes of store.KeywordSearch.
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
	if len(terms) == 0 {
		return nil, "no informative terms", nil
	}
	stats, err := r.termStats(ctx, q.BankID, terms)
	if err != nil {
		return nil, "", err
	}
	kept, idfs, dfs := pickTerms(stats, r.cfg.MaxDocFreq, r.cfg.MinDocsForDF)
	if len(kept) == 0 {
		return nil, "no query term occurs in the bank", nil
	}
	match, mode := matchTerms(kept, dfs, int64(r.cfg.KeywordRowBudget))
	rows, err := r.st.RecallKeyword(ctx, q.filter(), store.KeywordSearch{Terms: kept, IDFs: idfs, Limit: q.pool,
		Match: match, Mode: mode, RowBudget: r.cfg.KeywordRowBudget})
	if err != nil {
		return nil, "", err
	}
	return candidates(rows), "", nil
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
	got, err := r.st.RecallTermFrequencies(ctx, bank, missing, r.cfg.KeywordRowBudget+1)
	if err != nil {
		return nil, err
	}
	for term, df := range got {
		r.stats.putDF(bank, term, df, now)
	}
	for i := range stats {
		if df, ok := got[stats[i].term]; ok {
			stats[i].df = df
		}
	}
	return stats, nil
}

// bankSize is the bank's number of valid facts, from the cache where it
// is fresh. Three arms need it as they start, so concurrent misses for
// one bank share one count; it runs on its own deadline, so that one
// caller's cancellation does not fail the others.
func (r *Recaller) bankSize(ctx context.Context, bank string, now time.Time) (int64, error) {
	if n, ok := r.stats.bankSize(bank, now); ok {
		return n, nil
	}
	v, err, _ := r.sizes.Do(bank, func() (any, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.ArmTimeout)
		defer cancel()
		n, err := r.st.RecallBankSize(cctx, bank)
		if err != nil {
			return nil, err
		}
		r.stats.putBankSize(bank, n, now)
		return n, nil
	})
	if err != nil {
		return 0, err
	}
	return v.(int64), nil
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
