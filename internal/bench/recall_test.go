package bench

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/store"
)

// TestRecallBank loads a small synthetic bank and runs the bench on it: the
// loader must leave every index rebuilt and the graph walkable, and the
// queries must reach every arm.
func TestRecallBank(t *testing.T) {
	t.Parallel()
	url, _ := pgtest.Schema(t)
	db := pgtest.Pool(t, url)
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(ctx, store.Deps{Logger: log}, store.Config{URL: url, Dim: 384, MaxConns: 12})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var before []string
	if err := db.QueryRow(ctx, `SELECT array_agg(indexname ORDER BY indexname) FROM pg_indexes WHERE schemaname = current_schema()`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	emb, err := embed.NewHash(384)
	if err != nil {
		t.Fatal(err)
	}
	bank, err := LoadBank(ctx, st, emb, BankConfig{BankID: "bench", Facts: 1500, Queries: 60, Seed: 7, Now: bankNow}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var after []string
	if err := db.QueryRow(ctx, `SELECT array_agg(indexname ORDER BY indexname) FROM pg_indexes WHERE schemaname = current_schema()`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, after) {
		t.Errorf("indexes after the load differ:\nbefore %v\nafter  %v", before, after)
	}
	var units, ues, links int
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM memory_units WHERE bank_id = 'bench'),
		(SELECT count(*) FROM unit_entities), (SELECT count(*) FROM memory_links)`).Scan(&units, &ues, &links); err != nil {
		t.Fatal(err)
	}
	if units != 1500 || ues < 1500 || links != bank.Links || links < 1500 {
		t.Errorf("loaded %d facts, %d unit entities, %d links (bank says %d)", units, ues, links, bank.Links)
	}
	if len(bank.Queries) != 60 {
		t.Fatalf("%d queries, want 60", len(bank.Queries))
	}

	r, err := recall.New(recall.Deps{Store: st, Embedder: emb, Logger: log}, recall.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// Every arm must have something to do on the generated queries.
	found := map[string]int{}
	for _, q := range bank.Queries {
		q.Trace = true
		resp, err := r.Recall(ctx, q)
		if err != nil {
			t.Fatalf("%q: %v", q.Query, err)
		}
		for _, a := range resp.Trace.Arms {
			if a.Error != "" {
				t.Errorf("%q: arm %s failed: %s", q.Query, a.Arm, a.Error)
			}
			found[a.Arm] += len(a.Candidates)
		}
	}
	for _, a := range []string{recall.ArmSemantic, recall.ArmKeyword, recall.ArmGraph, recall.ArmTemporal} {
		if found[a] == 0 {
			t.Errorf("arm %s found nothing over the bench queries", a)
		}
	}
	// A generated code query must find its order through the keyword arm.
	for _, q := range bank.Queries {
		if !strings.Contains(q.Query, "order ") {
			continue
		}
		code := strings.TrimSuffix(strings.Fields(q.Query)[4], "?")
		resp, err := r.Recall(ctx, recall.Request{BankID: "bench", Query: q.Query, QueryTime: bankNow, Arms: []string{recall.ArmKeyword}})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Results) == 0 || !strings.Contains(resp.Results[0].Text, code) {
			t.Errorf("%q: top keyword result does not hold %s: %v", q.Query, code, resp.Results)
		}
		break
	}

	raw, err := st.RawSearcher(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	res, err := runRecall(ctx, r, raw, emb, bank, 2, 5)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.P50MS <= 0 || res.P99MS < res.P50MS || res.RawHNSWP50MS <= 0 || res.QPS <= 0 || res.MeanResults == 0 {
		t.Errorf("implausible bench result %+v", res)
	}
	if res.RatioP50 != res.P50MS/res.RawHNSWP50MS {
		t.Errorf("ratio %g != %g / %g", res.RatioP50, res.P50MS, res.RawHNSWP50MS)
	}
}
