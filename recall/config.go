package recall

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/memstream/memstream/simscale"
	"github.com/memstream/memstream/tokens"
)

// BudgetLevel is what one Request.Budget value buys.
type BudgetLevel struct {
	// Candidates is how many candidates each arm returns to fusion.
	Candidates int
	// EfSearch is hnsw.ef_search for the semantic arm: the HNSW beam width,
	// so recall of the approximate search against its cost.
	EfSearch int
}

// Config tunes a Recaller. The zero value is usable: WithDefaults fills it.
type Config struct {
	// RerankTop is how many of the best results the reranker sees
	// (default 30); RerankWeight is its share of the final score (default
	// 0.7: a cross-encoder reads query and text together and is the better
	// judge of the head when one is configured).
	RerankTop    int
	RerankWeight float64
	// ArmTimeout bounds each arm (and the query embedding). A slow arm is
	// dropped from the answer rather than holding it up. Default 2s.
	ArmTimeout time.Duration
	// Budgets maps low, mid and high to pool sizes. Defaults: low 20/40,
	// mid 50/64, high 100/200 (candidates/ef_search). The beam is the
	// semantic arm's main cost (a scan at ef_search 100 cost 1.4 times
	// one at 64 for the same 50 rows at 100 000 facts), and a few
	// points of approximate-search recall deep in a 50-candidate pool
	// barely move the fused top ten.
	Budgets map[string]BudgetLevel
	// RRFK is the reciprocal-rank-fusion constant; 60 is the value of the
	// original paper and damps the weight of any one arm's top rank.
	RRFK float64
	// ArmWeights multiply each arm's reciprocal ranks in RRF (weighted
	// RRF). Default semantic 1, keyword 0.5, graph 0.5, temporal 1: a
	// keyword match on one word the query shares with small talk ("party",
	// "morning") or the user's own entity in the graph says less about a
	// fact than its meaning or the period it is in; set on the tuning part
	// of the eval and frozen (docs/EVALUATION.md). An arm missing from the
	// map weighs 1; heuristics_off arm_weights gives every arm 1.
	ArmWeights map[string]float64
	// DefaultMaxTokens applies when a request gives no MaxTokens. Default
	// 4096, as in SPEC §5.
	DefaultMaxTokens int
	// RecencyHalfLife is the age at which the recency factor halves.
	// Default 90 days: memories of an agent's user stay relevant for
	// months, so recency only breaks near-ties. Negative disables recency.
	RecencyHalfLife time.Duration
	// MaxDocFreq drops keyword terms found in more than this fraction of
	// the bank's facts (once the bank has MinDocsForDF facts): such terms
	// match nearly everything and drown the rare ones. Default 0.5.
	MaxDocFreq float64
	// MinDocsForDF is the bank size below which no term is dropped for
	// being common, since fractions of tiny banks mean nothing. Default 20.
	MinDocsForDF int
	// Tokenizer is tokens.CL100K (default; the BPE of current
	// OpenAI-compatible models, embedded in the binary) or tokens.Estimate
	// (a conservative count that never under-counts).
	Tokenizer string
	// KeywordRowBudget bounds the rows the keyword arm ranks, and caps its
	// document-frequency counts: terms are matched rarest first while
	// their summed frequencies fit. Default 200: ranking (ts_rank_cd and
	// the IDF sum) is paid per row, and a term in more rows than this is
	// common enough that the rows taken are a sample anyway.
	KeywordRowBudget int
	// StatsTTL is how long the keyword arm trusts a cached bank size or
	// document frequency. Default 2m; negative disables the cache.
	StatsTTL time.Duration
	// ClockTTL is how long a bank's clock is cached. Default 5s.
	ClockTTL time.Duration
	// Scale is the embedder's similarity scale (simscale.Load): cosines
	// enter scores as Scale.Relevance and diversity as Scale.Redundancy,
	// so an embedder whose cosines all sit near 0.8 does not add a
	// near-constant to every score. The zero value uses cosines as they
	// are (clamped to [0, 1]).
	Scale simscale.Scale
}

// BankClock reads a bank's event clock; the zero time means the bank has
// none yet.
type BankClock interface {
	BankClock(ctx context.Context, bankID string) (time.Time, error)
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.RerankTop == 0 {
		c.RerankTop = 30
	}
	if c.RerankWeight == 0 {
		c.RerankWeight = 0.7
	}
	if c.ArmTimeout == 0 {
		c.ArmTimeout = 2 * time.Second
	}
	if c.Budgets == nil {
		c.Budgets = map[string]BudgetLevel{
			BudgetLow:  {Candidates: 20, EfSearch: 40},
			BudgetMid:  {Candidates: 50, EfSearch: 64},
			BudgetHigh: {Candidates: 100, EfSearch: 200},
		}
	}
	if c.RRFK == 0 {
		c.RRFK = 60
	}
	if c.ArmWeights == nil {
		c.ArmWeights = map[string]float64{ArmSemantic: 1, ArmKeyword: 0.5, ArmGraph: 0.5, ArmTemporal: 1}
	}
	if c.DefaultMaxTokens == 0 {
		c.DefaultMaxTokens = 4096
	}
	if c.RecencyHalfLife == 0 {
		c.RecencyHalfLife = 90 * 24 * time.Hour
	}
	if c.MaxDocFreq == 0 {
		c.MaxDocFreq = 0.5
	}
	if c.MinDocsForDF == 0 {
		c.MinDocsForDF = 20
	}
	if c.Tokenizer == "" {
		c.Tokenizer = tokens.CL100K
	}
	if c.KeywordRowBudget == 0 {
		c.KeywordRowBudget = 200
	}
	if c.StatsTTL == 0 {
		c.StatsTTL = 2 * time.Minute
	}
	if c.ClockTTL == 0 {
		c.ClockTTL = 5 * time.Second
	}
	return c
}

func (c Config) validate() error {
	if c.RerankTop < 0 || c.RerankWeight < 0 || c.RerankWeight > 1 {
		return fmt.Errorf("recall config rerank: top must be positive and weight in [0, 1], got %d and %g", c.RerankTop, c.RerankWeight)
	}
	if c.ArmTimeout < 0 {
		return fmt.Errorf("recall config arm_timeout: must be positive, got %s", c.ArmTimeout)
	}
	for _, b := range []string{BudgetLow, BudgetMid, BudgetHigh} {
		l, ok := c.Budgets[b]
		if !ok {
			return fmt.Errorf("recall config budgets: level %q missing", b)
		}
		if l.Candidates < 1 || l.Candidates > 1000 {
			return fmt.Errorf("recall config budgets.%s.candidates: %d not in [1, 1000]", b, l.Candidates)
		}
		if l.EfSearch < 1 || l.EfSearch > 1000 {
			// pgvector rejects ef_search outside [1, 1000].
			return fmt.Errorf("recall config budgets.%s.ef_search: %d not in [1, 1000]", b, l.EfSearch)
		}
	}
	if c.RRFK < 0 {
		return fmt.Errorf("recall config rrf_k: must not be negative, got %g", c.RRFK)
	}
	for a, w := range c.ArmWeights {
		if !slices.Contains(allArms, a) {
			return fmt.Errorf("recall config arm_weights: %q is not semantic, keyword, graph or temporal", a)
		}
		if w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			return fmt.Errorf("recall config arm_weights.%s: %g is not a finite weight >= 0", a, w)
		}
	}
	if c.DefaultMaxTokens < 1 {
		return fmt.Errorf("recall config default_max_tokens: must be positive, got %d", c.DefaultMaxTokens)
	}
	if c.MaxDocFreq <= 0 || c.MaxDocFreq > 1 {
		return fmt.Errorf("recall config max_doc_freq: %g not in (0, 1]", c.MaxDocFreq)
	}
	if c.KeywordRowBudget < 1 {
		return fmt.Errorf("recall config keyword_row_budget: must be positive, got %d", c.KeywordRowBudget)
	}
	if c.Tokenizer != tokens.CL100K && c.Tokenizer != tokens.Estimate {
		return fmt.Errorf("recall config tokenizer: %q is not %s or %s", c.Tokenizer, tokens.CL100K, tokens.Estimate)
	}
	return nil
}
