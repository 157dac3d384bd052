package embed

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	sharedLocalOnce sync.Once
	sharedLocal     *Local
	sharedLocalErr  error
)

// newLocalModel returns one model shared by the tests: loading it takes
// about a second of CPU.
func newLocalModel(t testing.TB) *Local {
	t.Helper()
	testModelDir(t)
	sharedLocalOnce.Do(func() { sharedLocal, sharedLocalErr = NewLocal(LocalConfig{}) })
	if sharedLocalErr != nil {
		t.Fatal(sharedLocalErr)
	}
	return sharedLocal
}

// TestLocalMatchesReference compares the vectors with those of the
// package the weights come from (its NumPy forward pass, with each n-gram
// branch layer-normalised on its own as the weights are laid out), on
// English and Chinese. (For an empty text that package feeds an unknown
// piece where SentencePiece gives none; memstream follows SentencePiece.)
func TestLocalMatchesReference(t *testing.T) {
	t.Parallel()
	l := newLocalModel(t)
	b, err := os.ReadFile(filepath.Join("testdata", "use_m3_vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Text string    `json:"text"`
		Vec  []float32 `json:"vec"`
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(cases))
	for i, c := range cases {
		texts[i] = c.Text
	}
	// One batch and one text at a time must agree: windows never cross
	// texts.
	batch, err := l.EmbedDocuments(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		one, err := l.EmbedDocuments(context.Background(), []string{c.Text})
		if err != nil {
			t.Fatal(err)
		}
		if cs := cosine(one[0], batch[i]); cs < 0.99999 {
			t.Errorf("%q: batch and single differ, cosine %.6f", c.Text, cs)
		}
		if cs := cosine(batch[i], c.Vec); cs < 0.9999 {
			t.Errorf("%q: cosine to the reference %.6f, want >= 0.9999", c.Text, cs)
		}
		var n float64
		for _, x := range batch[i] {
			n += float64(x) * float64(x)
		}
		if math.Abs(n-1) > 1e-4 {
			t.Errorf("%q: norm^2 %.6f", c.Text, n)
		}
	}
}

// crossLingualProbe pairs queries with the one document (of the list) that
// answers them, across Chinese and English, names written in either script
// and a nickname (老张 for Zhang Wei).
var crossLingualProbe = struct {
	docs  []string
	pairs [][2]string // query, wanted document
}{
	docs: []string{"Zhang Wei moved to Shanghai last month", "Zhang Wei likes coffee", "Li Na works at a hospital in Beijing",
		"The weather was rainy on Tuesday", "I bought a new laptop for work", "我的猫叫小白", "我们周末去杭州看了西湖",
		"Alice is allergic to peanuts"},
	pairs: [][2]string{
		{"张伟搬到了上海", "Zhang Wei moved to Shanghai last month"},
		{"老张喜欢喝咖啡", "Zhang Wei likes coffee"},
		{"李娜在哪里工作？", "Li Na works at a hospital in Beijing"},
		{"Where does Zhang Wei live now?", "Zhang Wei moved to Shanghai last month"},
		{"What is my cat called?", "我的猫叫小白"},
		{"Where did we go on the weekend?", "我们周末去杭州看了西湖"},
		{"爱丽丝对什么过敏？", "Alice is allergic to peanuts"},
	},
}

// probeRanks returns, per probe query, the rank (0 = first) of the wanted
// document.
func probeRanks(t testing.TB, e Embedder) []int {
	t.Helper()
	ctx := context.Background()
	dv, err := e.EmbedDocuments(ctx, crossLingualProbe.docs)
	if err != nil {
		t.Fatal(err)
	}
	var ranks []int
	for _, p := range crossLingualProbe.pairs {
		qv, err := e.EmbedQueries(ctx, []string{p[0]})
		if err != nil {
			t.Fatal(err)
		}
		var want float64
		for i, d := range crossLingualProbe.docs {
			if d == p[1] {
				want = cosine(qv[0], dv[i])
			}
		}
		rank := 0
		for i, d := range crossLingualProbe.docs {
			if d != p[1] && cosine(qv[0], dv[i]) > want {
				rank++
			}
		}
		ranks = append(ranks, rank)
	}
	return ranks
}

// TestLocalCrossLingual runs the probe: the local model must rank the
// answer first for every query; the hash embedder's ranks are logged for
// comparison (`go test ./embed -run CrossLingual -v`).
func TestLocalCrossLingual(t *testing.T) {
	t.Parallel()
	l := newLocalModel(t)
	local := probeRanks(t, l)
	hash := probeRanks(t, newHash(t, LocalDim))
	for i, p := range crossLingualProbe.pairs {
		t.Logf("%-34q -> %-42q rank local %d, hash %d", p[0], p[1], local[i], hash[i])
		if local[i] != 0 {
			t.Errorf("%q: the local model ranks the answer %d, want first", p[0], local[i])
		}
	}
}

func BenchmarkLoadUSE(b *testing.B) {
	dir := testModelDir(b)
	for b.Loop() {
		if _, err := loadUSE(dir); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLocalDocuments(b *testing.B) {
	benchDocuments(b, newLocalModel(b), []string{"Alice moved to Denver last spring and started a new job at a bakery.",
		"张伟上个月搬到了上海", "The budget meeting was moved to Friday afternoon.", "I prefer green tea over coffee in the morning."})
}

// concurrentCallsFreeSlots runs document and query calls of e at once and
// fails unless every one of its slots s is free after they return.
func concurrentCallsFreeSlots(t *testing.T, e Embedder, s *passSlots, texts ...string) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if i%2 == 0 {
				_, err = e.EmbedDocuments(ctx, texts)
			} else {
				_, err = e.EmbedQueries(ctx, texts[:1])
			}
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if s.docs.InUse() != 0 || len(s.all) != 0 {
		t.Fatalf("slots held after all calls returned: docs %d, all %d", s.docs.InUse(), len(s.all))
	}
}

func BenchmarkLocalQuery(b *testing.B) { benchQuery(b, newLocalModel(b)) }

// benchDocuments times e embedding texts as one call, in ms per text.
func benchDocuments(b *testing.B, e Embedder, texts []string) {
	ctx := context.Background()
	for b.Loop() {
		if _, err := e.EmbedDocuments(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(texts))/1000, "ms/text")
}

// benchQuery times e embedding one short recall query.
func benchQuery(b *testing.B, e Embedder) {
	ctx := context.Background()
	for b.Loop() {
		if _, err := e.EmbedQueries(ctx, []string{"Where does Alice live now?"}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLocalSlots checks the pass slots: documents may hold all but one, a
// query takes the last, a cancelled wait gives back what it took, and
// concurrent callers leave every slot free.
func TestLocalSlots(t *testing.T) {
	t.Parallel()
	l := &Local{passSlots: newPassSlots(2)}
	ctx := context.Background()
	relDoc, err := l.acquire(ctx, Document)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.acquire(cctx, Document); err == nil {
		t.Fatal("a second document pass got a slot while the first holds the only one")
	}
	relQuery, err := l.acquire(ctx, Query)
	if err != nil {
		t.Fatal("a query could not take the slot documents leave free")
	}
	if _, err := l.acquire(cctx, Query); err == nil {
		t.Fatal("a third pass got a slot of two")
	}
	relQuery()
	relDoc()
	if l.docs.InUse() != 0 || len(l.all) != 0 {
		t.Fatalf("slots held after release: docs %d, all %d", l.docs.InUse(), len(l.all))
	}

	// Its own slots over the shared weights: other tests use the shared
	// model's slots at the same time.
	shared := newLocalModel(t)
	m := &Local{passSlots: newPassSlots(2), m: shared.m}
	m.pool.New = func() any { return new(useScratch) }
	concurrentCallsFreeSlots(t, m, &m.passSlots, "Alice moved to Denver", "张伟搬到了上海", "a third fact")
}

// BenchmarkLocalFactBatch embeds 64 fact-sized texts per call, as the
// ingest pipeline does; run it under /usr/bin/time with GOMAXPROCS=1 and
// divide user time by the texts for the CPU cost per fact.
func BenchmarkLocalFactBatch(b *testing.B) {
	l := newLocalModel(b)
	base := []string{"I moved to Lisbon last March because my company opened an office there.",
		"My sister Hana is visiting next weekend, so I booked a table at the harbour restaurant.",
		"We finally shipped the billing migration yesterday after three weeks of testing.",
		"I prefer window seats on long flights and I always bring noise-cancelling headphones.",
		"老张说他下个月要搬到上海去工作。", "因为项目延期，所以我们把发布推迟到了三月。",
		"Noted. I will remind you the day before.", "The apartment in Kyoto has a small balcony, which is why I liked it."}
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = base[i%len(base)]
	}
	benchDocuments(b, l, texts)
}

// TestFindModelDir checks the lookup order and that every miss names the
// command that installs the model.
func TestFindModelDir(t *testing.T) {
	installed := testModelDir(t)
	root := t.TempDir()
	dir := filepath.Join(root, LocalModelName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{useTokenizerFile, useWeightsFile} {
		if err := os.Symlink(filepath.Join(installed, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("MEMSTREAM_MODEL_DIR", root)
	if got, err := FindModelDir(""); err != nil || got != dir {
		t.Fatalf("FindModelDir with MEMSTREAM_MODEL_DIR = %q, %v; want %q", got, err, dir)
	}
	if got, err := FindModelDir(dir); err != nil || got != dir {
		t.Fatalf("FindModelDir(%q) = %q, %v", dir, got, err)
	}
	empty := t.TempDir()
	if _, err := FindModelDir(empty); err == nil || !strings.Contains(err.Error(), "make deps") || !strings.Contains(err.Error(), empty) {
		t.Fatalf("an empty embed.model_dir: err %v, want one naming the directory and make deps", err)
	}
	t.Setenv("MEMSTREAM_MODEL_DIR", empty)
	t.Setenv("XDG_DATA_HOME", empty)
	t.Setenv("HOME", empty)
	if _, err := FindModelDir(""); err == nil || !strings.Contains(err.Error(), "make deps") || !strings.Contains(err.Error(), "embed.provider: hash") {
		if err == nil && fileExists(filepath.Join("/usr/local/share/memstream/models", LocalModelName, useWeightsFile)) {
			t.Skip("the model is installed system-wide too")
		}
		t.Fatalf("no model anywhere: err %v, want one naming make deps and the hash provider", err)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
