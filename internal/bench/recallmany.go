package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/store"
)

// bankSizes splits total facts over banks with Zipf-skewed sizes (the
// k-th largest bank holds about 1/k of the largest's share), none below
// minBankFacts: a few big customers and a long tail of small ones, as a
// bank per user or per customer gives.
func bankSizes(total, banks int) []int {
	const minBankFacts = 50
	var h float64
	for k := 1; k <= banks; k++ {
		h += 1 / float64(k)
	}
	sizes := make([]int, banks)
	sum := 0
	for k := range sizes {
		sizes[k] = max(minBankFacts, int(float64(total)/(float64(k+1)*h)))
		sum += sizes[k]
	}
	// The floor adds facts at the tail; take them back from the head.
	for k := 0; sum > total && k < banks; k++ {
		d := min(sum-total, sizes[k]-minBankFacts)
		sizes[k] -= d
		sum -= d
	}
	return sizes
}

// recallMany loads banks of skewed sizes, total facts in all, into one
// schema (one memory_units table, one HNSW index, as production keeps
// every bank), then times recall three ways: on the largest bank, on a
// small one, and on a pool drawn from every bank.
func recallMany(ctx context.Context, cfg RecallConfig, base string, total, maxConc int, emb embed.Embedder, log *slog.Logger, progress func(string), stdout io.Writer) error {
	schema := fmt.Sprintf("bench_recall_%d_b%d", total, cfg.Banks)
	su, err := store.CreateSchema(ctx, base, schema, cfg.Reuse)
	if err != nil {
		return err
	}
	if !cfg.Keep {
		defer func() { _ = store.DropSchema(context.WithoutCancel(ctx), base, schema) }()
	}
	st, err := store.Open(ctx, store.Deps{Logger: log}, store.Config{URL: su, Dim: cfg.Dim, MaxConns: 4*maxConc + 4})
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	sizes := bankSizes(total, cfg.Banks)
	t0 := time.Now()
	var l *store.BulkLoader
	if !cfg.Reuse {
		if l, err = st.NewBulkLoader(ctx); err != nil {
			return err
		}
		defer l.Close()
	}
	banks := make([]*Bank, len(sizes))
	facts, entities, links := 0, 0, 0
	perBank := max(2, cfg.Queries/cfg.Banks+1)
	for k, n := range sizes {
		q := perBank
		if k == 0 || k == len(sizes)-1 {
			q = cfg.Queries
		}
		b, err := loadBankRows(ctx, st, l, emb, BankConfig{BankID: fmt.Sprintf("bench-b%04d", k), Facts: n, Queries: q,
			Seed: cfg.Seed + uint64(k), Now: bankNow, Reuse: cfg.Reuse})
		if err == nil && b == nil {
			err = fmt.Errorf("bench recall: --reuse: bank bench-b%04d is not in schema %s", k, schema)
		}
		if err != nil {
			return err
		}
		banks[k] = b
		facts, entities, links = facts+b.Facts, entities+b.Entities, links+b.Links
		if k%100 == 0 {
			progress(fmt.Sprintf("%d banks, %d facts loaded (%s)", k+1, facts, time.Since(t0).Round(time.Second)))
		}
	}
	if !cfg.Reuse {
		if err := l.Finish(ctx, progress); err != nil {
			return err
		}
	}
	progress(fmt.Sprintf("loaded %d banks, %d facts (largest %d, smallest %d), %d entities, %d links in %s",
		len(banks), facts, sizes[0], sizes[len(sizes)-1], entities, links, time.Since(t0).Round(time.Second)))
	t1 := time.Now()
	ix, err := st.BankIndexPass(ctx, cfg.BankIndexes)
	if err != nil {
		return err
	}
	progress(fmt.Sprintf("bank indexes: %d banks indexed (%d built, %d dropped) in %s",
		len(ix.Indexed), len(ix.Created), len(ix.Dropped), time.Since(t1).Round(time.Second)))

	// A pool from every bank, shuffled: no bank's cache stays warm.
	rng := rand.New(rand.NewPCG(cfg.Seed, 77))
	var pool []recall.Request
	for _, b := range banks {
		n := min(len(b.Queries), perBank)
		pool = append(pool, b.Queries[:n]...)
	}
	rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	pool = pool[:min(len(pool), cfg.Queries)]
	sets := []struct {
		name string
		bank *Bank
	}{
		{"largest_bank", banks[0]},
		{"small_bank", banks[len(banks)-1]},
		{"all_banks", &Bank{BankID: "", Facts: facts, Entities: entities, Links: links, Queries: pool}},
	}
	raw, err := st.RawSearcher(ctx, true)
	if err != nil {
		return err
	}
	defer raw.Close()
	for pass := range passes(cfg) {
		for _, s := range sets {
			for _, c := range cfg.Concurrency {
				// A new recaller per pass: the database's cache is what
				// the warm pass warms, not recall's own term statistics.
				r, err := recall.New(recall.Deps{Store: st, Embedder: emb, Logger: log}, recall.Config{})
				if err != nil {
					return err
				}
				progress(fmt.Sprintf("%s pass, %s (%d facts): %d queries at concurrency %d", passName(pass), s.name, s.bank.Facts, len(s.bank.Queries), c))
				res, err := runRecall(ctx, r, raw, emb, s.bank, c, cfg.Warmup)
				if err != nil {
					return err
				}
				res.Set, res.Banks, res.TableFacts, res.Pass, res.BankIndexes = s.name, len(banks), facts, passName(pass), len(ix.Indexed)
				line, err := json.Marshal(res)
				if err != nil {
					return fmt.Errorf("bench recall: %w", err)
				}
				fmt.Fprintln(stdout, string(line))
				progress(fmt.Sprintf("%s pass, %s, c=%d: p50 %.2f ms, p95 %.2f ms, p99 %.2f ms; raw HNSW p50 %.2f ms; ratio %.1fx",
					passName(pass), s.name, c, res.P50MS, res.P95MS, res.P99MS, res.RawHNSWP50MS, res.RatioP50))
			}
		}
	}
	return nil
}

// passes is how many times each query set is timed: by default twice with
// many banks (a first, cold pass right after the load, then a warm one),
// once otherwise.
func passes(cfg RecallConfig) int {
	switch {
	case cfg.Passes > 0:
		return cfg.Passes
	case cfg.Banks > 1:
		return 2
	default:
		return 1
	}
}

// passName labels a pass: the first is "cold" (the pages its queries touch
// may not be cached yet), the later ones "warm" (the same queries again,
// every page they read cached if memory allows: the steady state of a bank
// that is queried all day).
func passName(pass int) string {
	if pass == 0 {
		return "cold"
	}
	return "warm"
}
