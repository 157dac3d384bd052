package embed

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
)

// Concat embeds every text with each of its models and joins the unit
// vectors, each scaled by 1/sqrt(n). The result is a unit vector whose
// cosine with another is the mean of the models' cosines, so no model's
// score scale is favoured and nothing is tuned: a text two models place
// near the query ranks above one only a single model does. The local
// provider's default runs the multilingual USE (which carries Chinese and
// cross-lingual names) beside the English MiniLM (which knows paraphrase
// better) this way.
type Concat struct {
	parts []Embedder
	scale float32
	dim   int
	model string
}

// NewConcat joins parts, in order, under the model name model.
func NewConcat(model string, parts ...Embedder) (*Concat, error) {
	if len(parts) == 0 {
		return nil, errors.New("embed: concat of no models")
	}
	c := &Concat{parts: parts, scale: float32(1 / math.Sqrt(float64(len(parts)))), model: model}
	for _, p := range parts {
		c.dim += p.Dim()
	}
	return c, nil
}

// Dim is the sum of the parts' sizes.
func (c *Concat) Dim() int { return c.dim }

// Name reports the provider name of the first part ("local").
func (c *Concat) Name() string {
	if n, ok := c.parts[0].(interface{ Name() string }); ok {
		return n.Name()
	}
	return "concat"
}

// Model names the joined model and, where the parts say, where each was
// loaded from.
func (c *Concat) Model() string {
	var b strings.Builder
	b.WriteString(c.model)
	for i, p := range c.parts {
		if m, ok := p.(interface{ Model() string }); ok {
			if i == 0 {
				b.WriteString(": ")
			} else {
				b.WriteString(", ")
			}
			b.WriteString(m.Model())
		}
	}
	return b.String()
}

// EmbedDocuments returns one unit vector per text, in order.
func (c *Concat) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	return c.embed(ctx, Document, texts)
}

// EmbedQueries returns one unit vector per text, in order.
func (c *Concat) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	return c.embed(ctx, Query, texts)
}

func (c *Concat) embed(ctx context.Context, kind Kind, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	flat := make([]float32, len(texts)*c.dim)
	for i := range out {
		out[i] = flat[i*c.dim : (i+1)*c.dim : (i+1)*c.dim]
	}
	// A query's parts run side by side: its wait is the slowest part's
	// pass, not their sum. Documents come in batches that already keep
	// the cores busy, so their parts run in turn.
	vecs := make([][][]float32, len(c.parts))
	errs := make([]error, len(c.parts))
	if kind == Query && len(c.parts) > 1 {
		var wg sync.WaitGroup
		for i, p := range c.parts {
			wg.Go(func() { vecs[i], errs[i] = embedKind(ctx, p, kind, texts) })
		}
		wg.Wait()
	} else {
		for i, p := range c.parts {
			if vecs[i], errs[i] = embedKind(ctx, p, kind, texts); errs[i] != nil {
				break
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	off := 0
	for pi, p := range c.parts {
		vs := vecs[pi]
		d := p.Dim()
		if len(vs) != len(texts) {
			return nil, errors.New("embed: concat: a part returned the wrong number of vectors")
		}
		for i, v := range vs {
			if len(v) != d {
				return nil, errors.New("embed: concat: a part returned a vector of the wrong size")
			}
			dst := out[i][off : off+d]
			for j, x := range v {
				dst[j] = x * c.scale
			}
		}
		off += d
	}
	return out, nil
}
