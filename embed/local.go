package embed

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/memstream/memstream/priority"
)

// LocalConfig configures [Local].
type LocalConfig struct {
	// ModelDir holds the model files; empty means [FindModelDir]'s search.
	ModelDir string
	// Prefixes are prepended to queries and documents. The multilingual USE
	// needs none (it was trained on raw questions and answers), so the
	// default is none.
	Prefixes Prefixes
	// Threads bounds how many batches run at once; 0 means GOMAXPROCS.
	// Documents (ingest, consolidation) may use all but one of them, so a
	// recall query never waits behind a long ingest batch on a small machine.
	Threads int
}

// localBatchTokens is the most tokens one forward pass carries. Enough texts
// to amortise reading the weights (about 3 MB of matrices per pass), small
// enough that the working set stays in cache and a query waits for at most
// one such pass.
const localBatchTokens = 512

// Local runs the multilingual Universal Sentence Encoder in process
// (provider "local"): a SentencePiece tokenizer and the encoder's matrix
// products in Go, with the products in vectorised C when cgo is on. It loads
// about 100 MB of weights once and is safe for concurrent use.
type Local struct {
	passSlots
	m        *useModel
	prefixes Prefixes
	pool     sync.Pool
	dir      string
}

// NewLocal loads the local model. A missing model is an error that names
// the command installing it.
func NewLocal(cfg LocalConfig) (*Local, error) {
	dir, err := FindModelDir(cfg.ModelDir)
	if err != nil {
		return nil, err
	}
	m, err := loadUSE(dir)
	if err != nil {
		return nil, fmt.Errorf("embed: load %s from %s: %w", LocalModelName, dir, err)
	}
	l := &Local{passSlots: newPassSlots(cfg.Threads), m: m, prefixes: cfg.Prefixes, dir: dir}
	l.pool.New = func() any { return new(useScratch) }
	return l, nil
}

// Dim reports the model's vector size, 512.
func (l *Local) Dim() int { return LocalDim }

// Name reports the provider name used in configuration and metrics.
func (l *Local) Name() string { return "local" }

// Model names the model and where it was loaded from.
func (l *Local) Model() string { return LocalModelName + " (" + l.dir + ")" }

// EmbedDocuments returns one unit vector per text, in order.
func (l *Local) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	return l.embed(ctx, Document, texts)
}

// EmbedQueries returns one unit vector per text, in order.
func (l *Local) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	return l.embed(ctx, Query, texts)
}

func (l *Local) embed(ctx context.Context, kind Kind, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	texts = apply(l.prefixes.For(kind), texts)
	out := make([][]float32, len(texts))
	flat := make([]float32, len(texts)*LocalDim)
	for i := range out {
		out[i] = flat[i*LocalDim : (i+1)*LocalDim : (i+1)*LocalDim]
	}
	s := l.pool.Get().(*useScratch)
	defer l.pool.Put(s)
	for start := 0; start < len(texts); {
		// Cut by an estimate of the tokens (a piece covers about three
		// bytes), so a batch of long texts does not become one huge pass.
		end, est := start, 0
		for end < len(texts) && (end == start || est+len(texts[end])/3+2 <= localBatchTokens) {
			est += len(texts[end])/3 + 2
			end++
		}
		release, err := l.acquire(ctx, kind)
		if err != nil {
			return nil, err
		}
		l.m.encode(texts[start:end], out[start:end], s)
		release()
		start = end
	}
	return out, nil
}

// passSlots bounds a model's concurrent forward passes: all of them (all)
// and, within those, the document passes (docs).
type passSlots struct {
	docs *priority.Gate // slots for document batches, live ones first
	all  chan struct{}  // slots for any batch
}

// newPassSlots sizes the slots for threads concurrent passes; 0 means
// GOMAXPROCS.
func newPassSlots(threads int) passSlots {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	return passSlots{docs: documentGate(threads), all: make(chan struct{}, threads)}
}

// documentGate holds the document passes: all slots but one (which is
// the queries'), and among documents the live ones (ingest) before the
// background ones (consolidation), by the context's priority class.
// Background documents may use every document slot: the query slot is
// what keeps recall from waiting.
func documentGate(threads int) *priority.Gate {
	n := max(1, threads-1)
	g, err := priority.NewGate(priority.GateDeps{}, priority.GateConfig{Name: "embed", Slots: n, MaxBackground: n})
	if err != nil {
		panic(err) // n >= 1 always makes a valid gate
	}
	return g
}

// acquire takes a slot for one forward pass and returns its release. Each
// pass is short (a few milliseconds), so slots are taken per pass, not per
// call: a query waits for at most one pass of a long document batch, and a
// live document batch for at most one pass of a consolidation's.
func (l *passSlots) acquire(ctx context.Context, kind Kind) (func(), error) {
	releaseDoc := func() {}
	if kind == Document {
		rel, err := l.docs.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		releaseDoc = rel
	}
	select {
	case l.all <- struct{}{}:
		return func() { <-l.all; releaseDoc() }, nil
	case <-ctx.Done():
		releaseDoc()
		return nil, ctx.Err()
	}
}
