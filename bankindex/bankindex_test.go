package bankindex_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/memstream/memstream/bankindex"
	"github.com/memstream/memstream/internal/lifetimetest"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// loaded is a migrated store in its own schema with banks of the given
// sizes.
func loaded(t *testing.T, sizes map[string]int) *store.Store {
	t.Helper()
	ctx := context.Background()
	url, _ := pgtest.Schema(t)
	st, err := store.Open(ctx, store.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, store.Config{URL: url, Dim: 8, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := st.NewBulkLoader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for bank, n := range sizes {
		b := store.BulkBank{BankID: bank}
		for i := range n {
			vec := make([]float32, 8)
			for d := range vec {
				vec[d] = float32(math.Sin(float64(i*7 + d*13 + len(bank))))
			}
			b.Facts = append(b.Facts, store.BulkFact{ID: store.UUID(uuid.New()), Type: "world", Text: fmt.Sprintf("fact %d", i),
				Embedding: vec, Tags: []string{}, Metadata: map[string]string{}, MentionedAt: time.Now(), IdemKey: fmt.Sprintf("%s-%d", bank, i)})
		}
		if err := l.Load(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Finish(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestNewRefusesABadConfig(t *testing.T) {
	t.Parallel()
	st := loaded(t, nil)
	for _, cfg := range []bankindex.Config{
		{Interval: 0, Policy: store.BankIndexPolicy{MinFacts: 1}},
		{Interval: time.Minute, Policy: store.BankIndexPolicy{MinFacts: 0}},
		{Interval: time.Minute, Policy: store.BankIndexPolicy{MinFacts: 1, MaxIndexes: -1}},
	} {
		if _, err := bankindex.New(bankindex.Deps{Store: st}, cfg); err == nil {
			t.Errorf("New accepted %+v", cfg)
		}
	}
}

// TestMaintainerBuildsTheLargestBanksIndexAndStops runs the maintainer
// until its first pass has built the largest bank's index, then stops it
// (goleak in TestMain checks nothing is left running), and checks that a
// pass after that finds nothing to do.
func TestMaintainerBuildsTheLargestBanksIndexAndStops(t *testing.T) {
	t.Parallel()
	st := loaded(t, map[string]int{"big": 120, "mid": 60, "tail": 10})
	reg := prometheus.NewRegistry()
	cfg := bankindex.Config{Interval: time.Hour, Policy: store.BankIndexPolicy{MinFacts: 50, MaxIndexes: 1}}
	m, err := bankindex.New(bankindex.Deps{Store: st, Registerer: reg}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	lifetimetest.CheckStop(t, m, 10*time.Second, func() {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if n, err := testutil.GatherAndCount(reg, "memstream_bank_index_passes_total"); err == nil && n > 0 {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("no pass within 30s")
	})
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP memstream_bank_index_builds_total Bank HNSW indexes built.
# TYPE memstream_bank_index_builds_total counter
memstream_bank_index_builds_total 1
# HELP memstream_bank_index_indexes Banks with an HNSW index of their own after the last pass.
# TYPE memstream_bank_index_indexes gauge
memstream_bank_index_indexes 1
`), "memstream_bank_index_builds_total", "memstream_bank_index_indexes"); err != nil {
		t.Error(err)
	}
	rep, err := m.Pass(context.Background())
	if err != nil || len(rep.Created) != 0 || len(rep.Indexed) != 1 || rep.Indexed[0].BankID != "big" {
		t.Errorf("second pass: %+v %v", rep, err)
	}
}
