package bench_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/store"
)

// costWords are what the cost harness's synthetic fact texts are made of.
var costWords = strings.Fields(`alice bob carol dana erik fatima gabriel hana ivan julia moved visited likes hates bought sold
lisbon porto tokyo berlin paris lagos lima oslo cairo seoul tea coffee bike car flat house job team project garden
cat dog piano guitar marathon novel recipe doctor school friday monday winter summer birthday wedding trip meeting
because after before during red blue green old new big small early late quickly slowly twice never always often`)

func costText(r *rand.Rand) string {
	n := 6 + r.IntN(10)
	w := make([]string, n)
	for i := range w {
		w[i] = costWords[r.IntN(len(costWords))]
	}
	return strings.Join(w, " ")
}

func costEnvInt(k string, d int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return v
	}
	return d
}

// TestBankIndexIngestCost is a measurement, not a check (docs/BENCHMARKS.md
// "Ingest cost of a bank's own HNSW index"); it runs only with
// MEMSTREAM_BENCH_BANKINDEX_COST=1. Banks A (with its own HNSW index) and
// B (without), same size, same generator; rounds of PersistBatch into each
// in turn, the order alternating. IDX_NOINDEX=1 is the control (no bank
// index at all).
func TestBankIndexIngestCost(t *testing.T) {
	if os.Getenv("MEMSTREAM_BENCH_BANKINDEX_COST") == "" {
		t.Skip("a measurement: set MEMSTREAM_BENCH_BANKINDEX_COST=1")
	}
	pre := costEnvInt("IDX_PRE", 10000)
	rounds := costEnvInt("IDX_ROUNDS", 8)
	perRound := costEnvInt("IDX_PER_ROUND", 512)
	lanes := costEnvInt("IDX_LANES", 2)
	const dim = 384
	const factsPerEvent = 16
	ctx := context.Background()
	url, _ := pgtest.Schema(t)
	st, err := store.Open(ctx, store.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, store.Config{URL: url, Dim: dim, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	h, _ := embed.NewHash(dim)
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	// Pre-load: texts from the same generator, a seed per bank (no duplicate vectors across banks); A one more fact so the pass picks it.
	l, err := st.NewBulkLoader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, bank := range []string{"A", "B"} {
		r := rand.New(rand.NewPCG(1, uint64(bank[0])))
		n := pre
		if bank == "A" {
			n++
		}
		b := store.BulkBank{BankID: bank}
		var texts []string
		for range n {
			texts = append(texts, costText(r))
		}
		vecs, _ := h.EmbedDocuments(ctx, texts)
		for i := range n {
			b.Facts = append(b.Facts, store.BulkFact{ID: store.UUID(uuid.New()), Type: "world", Text: texts[i],
				Embedding: vecs[i], Tags: []string{}, Metadata: map[string]string{}, MentionedAt: at, IdemKey: fmt.Sprintf("pre-%d", i)})
		}
		if err := l.Load(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Finish(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	minFacts := min(4000, pre)
	if os.Getenv("IDX_NOINDEX") != "" {
		minFacts = 1 << 30 // control: no bank index at all
	}
	rep, err := st.BankIndexPass(ctx, store.BankIndexPolicy{MinFacts: minFacts, MaxIndexes: 1, BuildMemory: store.BankIndexBuildMemory})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bank index pass %v: %+v", time.Since(t0), rep)
	if os.Getenv("IDX_NOINDEX") == "" && (len(rep.Indexed) != 1 || rep.Indexed[0].BankID != "A") {
		t.Fatalf("expected A indexed, got %+v", rep.Indexed)
	}
	// Timed: facts from the same generator (a seed per round and bank, none the pre-load's) into A and B, order alternating.
	ingest := func(bank string, round int) time.Duration {
		r := rand.New(rand.NewPCG(uint64(round)+1000, uint64(bank[0])))
		var recs [][]store.EventRecord
		for lane := range lanes {
			var evs []store.EventRecord
			for e := range perRound / lanes / factsPerEvent {
				ek := fmt.Sprintf("r%d-l%d-e%d", round, lane, e)
				cid := store.DeriveID(bank, ek+"-c")
				ev := store.EventRecord{BankID: bank, EventKey: ek, DocumentID: ek,
					Chunks: []store.ChunkRow{{ID: cid, Text: "chunk " + ek, StartedAt: at}}}
				var texts []string
				for range factsPerEvent {
					texts = append(texts, costText(r))
				}
				vecs, _ := h.EmbedDocuments(ctx, texts)
				for i := range factsPerEvent {
					ev.Facts = append(ev.Facts, store.FactRow{ID: store.DeriveID(bank, fmt.Sprintf("%s-f%d", ek, i)), FactType: "world",
						Text: texts[i], Embedding: vecs[i], MentionedAt: at, IdemKey: fmt.Sprintf("%s-f%d", ek, i), ChunkID: cid, MessageIndex: i})
				}
				evs = append(evs, ev)
			}
			recs = append(recs, evs)
		}
		start := time.Now()
		var wg sync.WaitGroup
		for _, evs := range recs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// pipeline batches: 256 facts a PersistBatch
				step := 256 / factsPerEvent
				for i := 0; i < len(evs); i += step {
					if _, err := st.PersistBatch(ctx, evs[i:min(i+step, len(evs))]); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	ingest("A", 1000) // warm-up, not counted
	ingest("B", 1000)
	var tot = map[string]time.Duration{}
	n := (perRound / lanes / factsPerEvent) * lanes * factsPerEvent
	for round := range rounds {
		order := []string{"A", "B"}
		if round%2 == 1 {
			order = []string{"B", "A"}
		}
		d := map[string]time.Duration{}
		for _, b := range order {
			d[b] = ingest(b, round)
			tot[b] += d[b]
		}
		t.Logf("round %d (%s first): A(own index) %.0f facts/s, B(none) %.0f facts/s, ratio A/B %.3f",
			round, order[0], float64(n)/d["A"].Seconds(), float64(n)/d["B"].Seconds(), d["B"].Seconds()/d["A"].Seconds())
	}
	fa, fb := float64(n*rounds)/tot["A"].Seconds(), float64(n*rounds)/tot["B"].Seconds()
	t.Logf("TOTAL %d facts each, pre %d, lanes %d: A(own index) %.0f facts/s, B(none) %.0f facts/s, ratio A/B %.3f", n*rounds, pre, lanes, fa, fb, fa/fb)
}
