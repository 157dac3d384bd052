package embed

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

var (
	sharedMiniLMOnce sync.Once
	sharedMiniLM     *MiniLM
	sharedMiniLMErr  error
)

// newMiniLMModel returns one model shared by the tests.
func newMiniLMModel(t testing.TB) *MiniLM {
	t.Helper()
	testMiniLMDir(t)
	sharedMiniLMOnce.Do(func() { sharedMiniLM, sharedMiniLMErr = NewMiniLM(MiniLMConfig{}) })
	if sharedMiniLMErr != nil {
		t.Fatal(sharedMiniLMErr)
	}
	return sharedMiniLM
}

// minilmCase is one reference text: the Hugging Face tokenizer's ids, whole
// and cut to 256, and the vector of the model's ONNX export for the cut
// ids.
type minilmCase struct {
	Text      string    `json:"text"`
	IDs       []int32   `json:"ids"`
	Truncated []int32   `json:"ids_truncated_256"`
	Vec       []float32 `json:"vector"`
}

func minilmCases(t testing.TB) []minilmCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "minilm_ref.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cs []minilmCase
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestWordPieceMatchesReference checks the tokenizer against the Hugging
// Face tokenizer's ids: accents, Chinese, punctuation and symbols, emoji,
// full-width forms, control whitespace, the empty text and an 830-token
// text (whole and cut to 256).
func TestWordPieceMatchesReference(t *testing.T) {
	t.Parallel()
	e := newMiniLMModel(t)
	for _, c := range minilmCases(t) {
		whole := append([]int32{minilmCLS}, e.m.tok.Encode(c.Text, nil)...)
		whole = append(whole, minilmSEP)
		if !slices.Equal(whole, c.IDs) {
			t.Errorf("Encode(%.60q)\n got %v\nwant %v", c.Text, whole, c.IDs)
		}
		if got := e.m.tokens(c.Text, nil); !slices.Equal(got, c.Truncated) {
			t.Errorf("tokens(%.60q), cut to %d:\n got %v\nwant %v", c.Text, minilmMaxTokens, got, c.Truncated)
		}
	}
}

// TestMiniLMMatchesReference compares the vectors with the ONNX export's,
// and a batch of all the texts with each text alone.
func TestMiniLMMatchesReference(t *testing.T) {
	t.Parallel()
	e := newMiniLMModel(t)
	cases := minilmCases(t)
	texts := make([]string, len(cases))
	for i, c := range cases {
		texts[i] = c.Text
	}
	batch, err := e.EmbedDocuments(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	worst := 1.0
	for i, c := range cases {
		one, err := e.EmbedQueries(context.Background(), []string{c.Text})
		if err != nil {
			t.Fatal(err)
		}
		if cs := cosine(one[0], batch[i]); cs < 0.99999 {
			t.Errorf("%.60q: batch and single differ, cosine %.6f", c.Text, cs)
		}
		cs := cosine(batch[i], c.Vec)
		worst = min(worst, cs)
		if cs < 0.999 {
			t.Errorf("%.60q: cosine to the reference %.6f, want >= 0.999", c.Text, cs)
		}
		var n float64
		for _, x := range batch[i] {
			n += float64(x) * float64(x)
		}
		if math.Abs(n-1) > 1e-4 {
			t.Errorf("%.60q: norm^2 %.6f", c.Text, n)
		}
	}
	t.Logf("lowest cosine to the reference: 1 - %.2g", 1-worst)
}

// TestMiniLMAMXMatchesFP32 compares the bf16 AMX products with float32
// ones on the reference texts (it skips on a CPU without AMX).
func TestMiniLMAMXMatchesFP32(t *testing.T) {
	t.Parallel()
	e := newMiniLMModel(t)
	if e.m.layers[0].qkvW.tiles == nil {
		t.Skip("no AMX on this CPU: every product is float32")
	}
	f, err := NewMiniLM(MiniLMConfig{ModelDir: e.dir, FP32: true})
	if err != nil {
		t.Fatal(err)
	}
	if f.m.layers[0].qkvW.tiles != nil {
		t.Fatal("FP32: the weights were packed for AMX")
	}
	var texts []string
	for _, c := range minilmCases(t) {
		texts = append(texts, c.Text)
	}
	a, err := e.EmbedDocuments(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.EmbedDocuments(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	worst := 1.0
	for i := range texts {
		cs := cosine(a[i], b[i])
		worst = min(worst, cs)
		if cs < 0.9999 {
			t.Errorf("%.60q: AMX and float32 vectors differ, cosine %.6f", texts[i], cs)
		}
	}
	t.Logf("lowest cosine, AMX to float32: 1 - %.2g", 1-worst)
}

// TestMiniLMBatchesCut checks that texts spread over several passes (more
// tokens than one pass carries) come back in order and equal to each text
// alone.
func TestMiniLMBatchesCut(t *testing.T) {
	t.Parallel()
	e := newMiniLMModel(t)
	var texts []string
	for i := range 12 {
		texts = append(texts, strings.Repeat("the quick brown fox jumps over the lazy dog ", 1+i%5)+string(rune('a'+i%26)))
	}
	all, err := e.EmbedDocuments(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 6, 11} {
		one, err := e.EmbedDocuments(context.Background(), texts[i:i+1])
		if err != nil {
			t.Fatal(err)
		}
		if cs := cosine(one[0], all[i]); cs < 0.99999 {
			t.Errorf("text %d: batch and single differ, cosine %.6f", i, cs)
		}
	}
}

// TestMiniLMSlots runs concurrent callers on two slots: every call returns
// and leaves every slot free.
func TestMiniLMSlots(t *testing.T) {
	t.Parallel()
	shared := newMiniLMModel(t)
	m := &MiniLM{passSlots: newPassSlots(2), m: shared.m}
	m.pool.New = func() any { return new(minilmScratch) }
	ctx := context.Background()
	concurrentCallsFreeSlots(t, m, &m.passSlots, "Alice moved to Denver", "Bob likes green tea", "a third fact")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.EmbedDocuments(cctx, []string{"x"}); err == nil {
		t.Fatal("a cancelled context embedded")
	}
}

// TestFindMiniLMDir checks that a missing model names the command that
// installs it.
func TestFindMiniLMDir(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	if _, err := FindMiniLMDir(empty); err == nil || !strings.Contains(err.Error(), "make deps") ||
		!strings.Contains(err.Error(), MiniLMModelName) || !strings.Contains(err.Error(), minilmWeightsFile) {
		t.Fatalf("an empty model directory: err %v, want one naming the model, its files and make deps", err)
	}
}

// TestErf32 checks the float32 erf of the GELU against math.Erf.
func TestErf32(t *testing.T) {
	t.Parallel()
	var worst float64
	for i := -60000; i <= 60000; i++ {
		x := float32(i) / 10000
		worst = max(worst, math.Abs(float64(erf32(x))-math.Erf(float64(x))))
	}
	if worst > 5e-7 {
		t.Fatalf("erf32 is off by up to %.2g", worst)
	}
}

func TestParseSafetensors(t *testing.T) {
	t.Parallel()
	hdr := `{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	file = append(file, hdr...)
	file = binary.LittleEndian.AppendUint32(file, math.Float32bits(1.5))
	file = binary.LittleEndian.AppendUint32(file, math.Float32bits(-2))
	ts, err := parseSafetensors(file)
	if err != nil {
		t.Fatal(err)
	}
	if a := ts["a"]; !slices.Equal(a.shape, []int{2}) || !slices.Equal(a.float32s(), []float32{1.5, -2}) {
		t.Fatalf("tensor a = %+v", a)
	}
	for _, bad := range [][]byte{nil, file[:7], file[:len(file)-1], binary.LittleEndian.AppendUint64(nil, 1<<40)} {
		if _, err := parseSafetensors(bad); err == nil {
			t.Errorf("parseSafetensors(%d bytes): want an error", len(bad))
		}
	}
}

func TestParseWordPieceRejectsOthers(t *testing.T) {
	t.Parallel()
	for _, b := range []string{``, `{}`, `{"normalizer":{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"lowercase":true},` +
		`"pre_tokenizer":{"type":"BertPreTokenizer"},"model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##",` +
		`"max_input_chars_per_word":100,"vocab":{"[UNK]":0}}}`} {
		if _, err := parseWordPiece([]byte(b)); err == nil {
			t.Errorf("parseWordPiece(%.40q): want an error", b)
		}
	}
}

func BenchmarkLoadMiniLM(b *testing.B) {
	dir := testMiniLMDir(b)
	for b.Loop() {
		if _, err := loadMiniLM(dir, true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMiniLMDocuments embeds four fact-sized texts (about 20 tokens
// each) per call.
func BenchmarkMiniLMDocuments(b *testing.B) {
	benchDocuments(b, newMiniLMModel(b), []string{"Alice moved to Denver last spring and started a new job at a bakery.",
		"I accepted the offer from Umbrella Labs and handed in my notice on Friday.",
		"The budget meeting was moved to Friday afternoon.", "I prefer green tea over coffee in the morning."})
}

// BenchmarkMiniLMQuery embeds one short query, with the products in bf16
// on AMX (where the CPU has it) and in float32: the second is the
// baseline of the first.
func BenchmarkMiniLMQuery(b *testing.B) {
	for _, m := range miniLMModes(b) {
		b.Run(m.name, func(b *testing.B) { benchQuery(b, m.e) })
	}
}

// BenchmarkMiniLMFactBatch embeds 64 fact-sized texts per call, as the
// ingest pipeline does, in both modes of BenchmarkMiniLMQuery.
func BenchmarkMiniLMFactBatch(b *testing.B) {
	base := []string{"I moved to Lisbon last March because my company opened an office there.",
		"My sister Hana is visiting next weekend, so I booked a table at the harbour restaurant.",
		"We finally shipped the billing migration yesterday after three weeks of testing.",
		"I prefer window seats on long flights and I always bring noise-cancelling headphones.",
		"Noted. I will remind you the day before.", "The apartment in Kyoto has a small balcony, which is why I liked it."}
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = base[i%len(base)]
	}
	for _, m := range miniLMModes(b) {
		b.Run(m.name, func(b *testing.B) { benchDocuments(b, m.e, texts) })
	}
}

// miniLMModes returns the shared model and a float32 one.
func miniLMModes(b *testing.B) []struct {
	name string
	e    *MiniLM
} {
	e := newMiniLMModel(b)
	f, err := NewMiniLM(MiniLMConfig{ModelDir: e.dir, FP32: true})
	if err != nil {
		b.Fatal(err)
	}
	name := "amx"
	if e.m.layers[0].qkvW.tiles == nil {
		name = "default"
	}
	return []struct {
		name string
		e    *MiniLM
	}{{name, e}, {"fp32", f}}
}
