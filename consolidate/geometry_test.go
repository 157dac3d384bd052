package consolidate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/consolidate"
	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/simscale"
	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/text"
)

// The paraphrases of one preference and the unrelated facts of
// TestConsolidationHoldsOnEveryEmbedder: how people restate a taste in
// chat, some with the same words and some without.
var (
	teaParaphrases = []string{
		"I prefer tea to coffee.", "I'd rather have tea than coffee.", "Tea over coffee for me, always.",
		"I drink tea, not coffee.", "Given the choice I pick tea over coffee.", "Coffee isn't my thing, I'm a tea person.",
		"I'm much more of a tea drinker than a coffee drinker.", "Honestly I like tea far more than coffee.",
		"No coffee for me please, tea is what I like.", "I always choose a cup of tea over a coffee.",
		"Tea, definitely tea. Coffee I can do without.", "I'll take tea over coffee any day.",
		"Whenever I can, I have tea instead of coffee.", "I never order coffee; I'm a tea drinker.",
		"Tea is my drink, coffee not so much.", "I'd pick tea before coffee every time.",
		"My preference is tea rather than coffee.", "Tea beats coffee for me.",
		"I'm a tea person rather than a coffee person.", "Skip the coffee, I prefer a pot of tea.",
		"I like tea better than coffee.", "Between tea and coffee, I go for tea.",
		"I usually drink tea; coffee isn't for me.", "Tea suits me better than coffee does.",
		"Offer me tea, not coffee.", "I choose tea over coffee in the mornings too.",
		"I've always preferred tea over coffee.", "A good cup of tea, never coffee, is what I want.",
		"I'm team tea, not team coffee.", "I'd go for tea over coffee without thinking.",
	}
	unrelatedFacts = []string{
		"I bought a secondhand bicycle on Saturday.", "My sister lives in Glasgow now.", "The dentist appointment is on the fourth.",
		"I finished painting the fence yesterday.", "We adopted a grey kitten called Smoke.", "My laptop battery died during the meeting.",
		"I'm reading a history of the Roman empire.", "The car needs new tyres before winter.", "I started a pottery course on Wednesdays.",
		"Our neighbours are building an extension.", "I ran eight kilometres this morning.", "The boiler was serviced last month.",
		"My passport expires in March.", "I planted tulip bulbs along the path.", "We watched a documentary about volcanoes.",
		"My manager moved to the Berlin office.", "I broke my phone screen on the stairs.", "The kids have a school trip to the zoo.",
		"I'm learning to knit a scarf.", "We booked a cabin in the mountains for August.", "My knee hurts after football.",
		"I sold my old guitar online.", "The flat upstairs is empty since May.", "I signed up for a first aid class.",
		"My brother got engaged in Lisbon.", "I lost my umbrella on the bus.", "We repainted the kitchen yellow.",
		"I have a job interview on Friday.", "The library card needs renewing.", "I fixed the dripping bathroom tap.",
	}
)

// geometry rewrites hashed vectors into another embedder's shape.
type geometry func(v []float32) []float32

// squeezed gives every vector a strong shared direction: all cosines sit
// high and close together, as with many sentence models.
func squeezed(v []float32) []float32 {
	out := make([]float32, len(v))
	for i := range v {
		out[i] = 0.5 * v[i]
	}
	out[0]++
	return out
}

// spread sharpens differences instead: small weights shrink, large ones
// grow, so unrelated texts drift towards orthogonal.
func spread(v []float32) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * x * x
	}
	return out
}

// fakeEmbeddings serves /v1/embeddings from the hashed embedder reshaped
// by g: an OpenAI-compatible server with its own geometry.
func fakeEmbeddings(t *testing.T, g geometry) *httptest.Server {
	l, err := embed.NewHash(dim)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
			Model string   `json:"model"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		vs, _ := l.EmbedDocuments(r.Context(), req.Input)
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		resp := struct {
			Object string `json:"object"`
			Data   []item `json:"data"`
			Model  string `json:"model"`
		}{Object: "list", Model: req.Model}
		for i, v := range vs {
			resp.Data = append(resp.Data, item{Object: "embedding", Index: i, Embedding: g(v)})
		}
		_ = json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type embedder interface {
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
	EmbedQueries(ctx context.Context, texts []string) ([][]float32, error)
}

// TestConsolidationHoldsOnEveryEmbedder: thirty restatements of one taste
// and thirty unrelated facts, through embedders whose cosines live on very
// different scales, give one observation holding most of the restatements,
// and the unrelated facts stay apart. Thresholds are levels on each
// embedder's measured scale (simscale), so none of them folds everything
// or nothing.
func TestConsolidationHoldsOnEveryEmbedder(t *testing.T) {
	t.Parallel()
	hash, err := embed.NewHash(dim)
	if err != nil {
		t.Fatal(err)
	}
	openai := func(g geometry) embedder {
		o, err := embed.NewOpenAI(embed.OpenAIDeps{}, embed.OpenAIConfig{BaseURL: fakeEmbeddings(t, g).URL + "/v1", Model: "fake", Dim: dim})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	cases := []struct {
		name string
		emb  embedder
		dim  int
	}{
		{"hash", hash, dim},
		{"openai-squeezed", openai(squeezed), dim},
		{"openai-spread", openai(spread), dim},
	}
	// The real local model, when installed (make test installs it and
	// sets MEMSTREAM_REQUIRE_MODEL=1, so CI cannot skip it).
	if dir, err := embed.FindModelDir(""); err == nil {
		c := config.Default().Embed
		c.ModelDir, c.CacheSize = filepath.Dir(dir), 0
		j, err := embed.FromConfig(c) // the default: USE and MiniLM joined
		if err != nil {
			t.Fatal(err)
		}
		c.Model, c.Dim = config.USELocalModel, config.LocalModels[config.USELocalModel]
		l, err := embed.FromConfig(c) // the USE alone
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct {
			name string
			emb  embedder
			dim  int
		}{"local-joined", j, j.Dim()}, struct {
			name string
			emb  embedder
			dim  int
		}{"local-use", l, l.Dim()})
	} else if os.Getenv("MEMSTREAM_REQUIRE_MODEL") == "1" {
		t.Fatal(err)
	} else {
		t.Logf("local model not installed, left out: %v", err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url, _ := pgtest.Schema(t)
			st, err := store.Open(ctx, store.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, store.Config{URL: url, Dim: tc.dim})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(st.Close)
			if _, err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			scale, err := simscale.Load(ctx, st, tc.emb, tc.name)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("scale %+v", scale)
			kindOf := map[string]string{}
			var evs []store.EventRecord
			start := now.Add(-90 * 24 * time.Hour)
			add := func(kind, said string, i int) {
				stored := "Alice: " + said
				vec, err := tc.emb.EmbedDocuments(ctx, []string{stored})
				if err != nil {
					t.Fatal(err)
				}
				key := fmt.Sprintf("%s-%d", kind, i)
				id := store.DeriveID("alice", key, "f0")
				kindOf[id.String()] = kind
				evs = append(evs, store.EventRecord{BankID: "alice", EventKey: key, DocumentID: "doc-" + key,
					Facts: []store.FactRow{{ID: id, FactType: "experience", Text: stored, Embedding: vec[0], SearchAux: text.Aux(stored, nil),
						MentionedAt: start.Add(time.Duration(2*i+len(kind)%2) * 24 * time.Hour), IdemKey: key}}})
			}
			for i := range 30 {
				add("tea", teaParaphrases[i], i)
				add("other", unrelatedFacts[i], i)
			}
			if _, err := st.PersistBatch(ctx, evs); err != nil {
				t.Fatal(err)
			}
			w, err := consolidate.New(consolidate.Deps{Store: st, Embedder: tc.emb, Clock: clock, Scale: scale}, consolidate.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.DrainBank(ctx, "alice"); err != nil {
				t.Fatal(err)
			}
			rows, err := pgtest.Pool(t, url).Query(ctx, `SELECT ev.observation_id::text, ev.memory_id::text FROM observation_evidence ev
				JOIN memory_units o ON o.id = ev.observation_id WHERE o.bank_id = 'alice' AND o.state = 'valid'`)
			if err != nil {
				t.Fatal(err)
			}
			byObs := map[string]map[string]int{}
			for rows.Next() {
				var o, m string
				if err := rows.Scan(&o, &m); err != nil {
					t.Fatal(err)
				}
				if byObs[o] == nil {
					byObs[o] = map[string]int{}
				}
				byObs[o][kindOf[m]]++
			}
			rows.Close()
			best := 0
			for _, kinds := range byObs {
				best = max(best, kinds["tea"])
				if kinds["other"] > 1 {
					t.Errorf("%d unrelated facts folded into one observation: %v", kinds["other"], kinds)
				}
				if kinds["other"] > 0 && kinds["tea"] > 0 {
					t.Errorf("an unrelated fact folded into the preference: %v", kinds)
				}
			}
			t.Logf("%d observations; the largest holds %d of 30 restatements", len(byObs), best)
			if best < 16 {
				t.Errorf("the preference observation holds %d of 30 restatements, want most of them", best)
			}
		})
	}
}
