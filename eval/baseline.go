package eval

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
)

// The baselines are what a user gets with no memory system at all: every
// raw turn of the dataset indexed as it was said, searched with the query
// as it was asked. They answer in the same process as the rest of the run,
// over the same turns, and are scored by the same code, so "memstream beats
// BM25" is a statement about one run. They see no time, no speaker and no
// entity: that is what makes them plain.

// Baseline names, as they appear in reports.
const (
	BaselineBM25  = "baseline: BM25 over raw turns"
	BaselineDense = "baseline: dense top-k over raw turns"
)

// baselineTopK is how many turns a baseline returns; the metrics look at
// ten, answer-in-context at what fits the token budget.
const baselineTopK = 50

// rawTurn is one indexed turn.
type rawTurn struct {
	session string
	turn    int
	text    string
}

// bankTurns groups every turn of d by bank, in dataset order.
func bankTurns(d *Dataset) map[string][]rawTurn {
	bankOf := map[string]string{}
	var order []string
	for _, e := range d.Events {
		if _, ok := bankOf[e.DocumentID]; !ok {
			order = append(order, e.DocumentID)
		}
		bankOf[e.DocumentID] = e.BankID
	}
	sessions := d.Sessions()
	out := map[string][]rawTurn{}
	for _, sid := range order {
		for i, m := range sessions[sid] {
			if strings.TrimSpace(m.Content) == "" {
				continue
			}
			out[bankOf[sid]] = append(out[bankOf[sid]], rawTurn{session: sid, turn: i, text: m.Content})
		}
	}
	return out
}

// englishStopwords is the classic stop set of Lucene's StandardAnalyzer,
// the default of most BM25 deployments; the baseline uses it unchanged.
var englishStopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields("a an and are as at be but by for if in into is it no not of on or such that the their then there these they this to was will with") {
		englishStopwords[w] = true
	}
}

// bm25Tokens splits text the way a standard analyser does: lower-cased
// runs of letters and digits minus the stop set, and overlapping character
// bigrams of CJK runs (a lone CJK character is its own token), as
// Lucene's CJK analyser does.
func bm25Tokens(text string) []string {
	var out []string
	var word []rune
	var cjk []rune
	flushWord := func() {
		if len(word) > 0 {
			w := string(word)
			if !englishStopwords[w] {
				out = append(out, w)
			}
			word = word[:0]
		}
	}
	flushCJK := func() {
		switch {
		case len(cjk) == 1:
			out = append(out, string(cjk))
		case len(cjk) > 1:
			for i := 0; i+1 < len(cjk); i++ {
				out = append(out, string(cjk[i:i+2]))
			}
		}
		cjk = cjk[:0]
	}
	for _, r := range text {
		switch {
		case unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r):
			flushWord()
			cjk = append(cjk, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			flushCJK()
			word = append(word, unicode.ToLower(r))
		default:
			flushWord()
			flushCJK()
		}
	}
	flushWord()
	flushCJK()
	return out
}

// BM25 is Okapi BM25 (k1 1.2, b 0.75, the usual defaults) over each bank's
// raw turns. It implements Recaller.
type BM25 struct {
	banks map[string]*bm25Index
}

type bm25Index struct {
	turns []rawTurn
	tf    []map[string]int
	lens  []int
	avg   float64
	df    map[string]int
}

const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// NewBM25 indexes every turn of d.
func NewBM25(d *Dataset) *BM25 {
	x := &BM25{banks: map[string]*bm25Index{}}
	for bank, turns := range bankTurns(d) {
		ix := &bm25Index{turns: turns, df: map[string]int{}}
		total := 0
		for _, t := range turns {
			tf := map[string]int{}
			toks := bm25Tokens(t.text)
			for _, tok := range toks {
				tf[tok]++
			}
			for tok := range tf {
				ix.df[tok]++
			}
			ix.tf = append(ix.tf, tf)
			ix.lens = append(ix.lens, len(toks))
			total += len(toks)
		}
		if len(turns) > 0 {
			ix.avg = float64(total) / float64(len(turns))
		}
		x.banks[bank] = ix
	}
	return x
}

// Recall scores every turn of the bank against the query and returns the
// best baselineTopK with a positive score. The query time is ignored.
func (x *BM25) Recall(ctx context.Context, bankID, query string, _ time.Time) ([]Retrieved, time.Duration, error) {
	began := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	ix := x.banks[bankID]
	if ix == nil {
		return nil, time.Since(began), nil
	}
	n := float64(len(ix.turns))
	qt := map[string]int{}
	for _, tok := range bm25Tokens(query) {
		qt[tok]++
	}
	scores := make([]float64, len(ix.turns))
	for tok, qf := range qt {
		df := ix.df[tok]
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
		for i, tf := range ix.tf {
			f := float64(tf[tok])
			if f == 0 {
				continue
			}
			norm := bm25K1 * (1 - bm25B + bm25B*float64(ix.lens[i])/ix.avg)
			scores[i] += float64(qf) * idf * f * (bm25K1 + 1) / (f + norm)
		}
	}
	return topTurns(ix.turns, scores, 0), time.Since(began), nil
}

// topTurns returns the best baselineTopK turns scoring above floor, best
// first, ties in dataset order.
func topTurns(turns []rawTurn, scores []float64, floor float64) []Retrieved {
	idx := make([]int, 0, len(turns))
	for i, s := range scores {
		if s > floor {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	idx = idx[:min(len(idx), baselineTopK)]
	out := make([]Retrieved, len(idx))
	for k, i := range idx {
		t := turns[i]
		out[k] = Retrieved{ID: turnKey(t.session, t.turn), Text: t.text, SessionID: t.session, TurnIndex: t.turn, Score: scores[i]}
	}
	return out
}

// Embedder is what the dense baseline needs: the embedder memstream runs
// with (embed.Embedder), so the baseline measures the same model on raw
// turns. Turns are embedded as documents and questions as queries, as
// memstream embeds facts and recall queries.
type Embedder interface {
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
	EmbedQueries(ctx context.Context, texts []string) ([][]float32, error)
}

// Dense is exact cosine top-k over each bank's raw turns, embedded with
// the run's embedder. It implements Recaller.
type Dense struct {
	emb   Embedder
	banks map[string]*denseIndex
}

type denseIndex struct {
	turns []rawTurn
	vecs  [][]float32
}

// denseBatch is how many turns go to the embedder in one call.
const denseBatch = 64

// NewDense embeds every turn of d. It is the expensive part of a
// baseline run: one embedding per turn, like ingesting the raw turns.
func NewDense(ctx context.Context, d *Dataset, emb Embedder) (*Dense, error) {
	x := &Dense{emb: emb, banks: map[string]*denseIndex{}}
	banks := bankTurns(d)
	names := slices.Sorted(func(yield func(string) bool) {
		for b := range banks {
			if !yield(b) {
				return
			}
		}
	})
	for _, bank := range names {
		turns := banks[bank]
		ix := &denseIndex{turns: turns}
		for i := 0; i < len(turns); i += denseBatch {
			texts := make([]string, 0, denseBatch)
			for _, t := range turns[i:min(i+denseBatch, len(turns))] {
				texts = append(texts, t.text)
			}
			vs, err := emb.EmbedDocuments(ctx, texts)
			if err != nil {
				return nil, fmt.Errorf("dense baseline: embed turns of bank %s: %w", bank, err)
			}
			if len(vs) != len(texts) {
				return nil, fmt.Errorf("dense baseline: embedder returned %d vectors for %d turns", len(vs), len(texts))
			}
			for _, v := range vs {
				ix.vecs = append(ix.vecs, unit(v))
			}
		}
		x.banks[bank] = ix
	}
	return x, nil
}

// Recall embeds the query and returns the baselineTopK most similar turns
// of the bank. The query time is ignored.
func (x *Dense) Recall(ctx context.Context, bankID, query string, _ time.Time) ([]Retrieved, time.Duration, error) {
	began := time.Now()
	ix := x.banks[bankID]
	if ix == nil {
		return nil, time.Since(began), nil
	}
	vs, err := x.emb.EmbedQueries(ctx, []string{query})
	if err != nil {
		return nil, time.Since(began), fmt.Errorf("dense baseline: embed query: %w", err)
	}
	if len(vs) != 1 {
		return nil, time.Since(began), fmt.Errorf("dense baseline: embedder returned %d vectors for one query", len(vs))
	}
	q := unit(vs[0])
	scores := make([]float64, len(ix.vecs))
	for i, v := range ix.vecs {
		scores[i] = dot(q, v)
	}
	return topTurns(ix.turns, scores, math.Inf(-1)), time.Since(began), nil
}

func unit(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if s == 0 {
		return out
	}
	n := float32(1 / math.Sqrt(s))
	for i, x := range v {
		out[i] = x * n
	}
	return out
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range min(len(a), len(b)) {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}
