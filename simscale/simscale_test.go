package simscale

import (
	"context"
	"math"
	"reflect"
	"testing"

	"github.com/memstream/memstream/embed"
)

type docQuery struct{ *embed.Hash }

// squeezed is an embedder with another geometry: every vector shares one
// strong common direction, so all cosines sit high and close together, as
// with many sentence models (e5 puts everything between 0.8 and 0.9).
type squeezed struct{ docQuery }

func (s squeezed) EmbedDocuments(ctx context.Context, t []string) ([][]float32, error) {
	vs, err := s.docQuery.EmbedDocuments(ctx, t)
	for _, v := range vs {
		for i := range v {
			v[i] *= 0.5
		}
		v[0] += 1
	}
	return vs, err
}
func (s squeezed) EmbedQueries(ctx context.Context, t []string) ([][]float32, error) {
	return s.EmbedDocuments(ctx, t)
}

func TestMeasureSeparatesRestatementsOnEveryGeometry(t *testing.T) {
	l, err := embed.NewHash(384)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		emb  Embedder
	}{{"hash", docQuery{l}}, {"squeezed", squeezed{docQuery{l}}}} {
		s, err := Measure(context.Background(), tc.emb, tc.name)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		t.Logf("%s: %+v", tc.name, s)
		if s.Level(s.Unrelated) != 0 || math.Abs(s.Level(s.Related)-1) > 1e-9 || math.Abs(s.Cosine(0.7)-s.Unrelated-0.7*(s.Related-s.Unrelated)) > 1e-9 {
			t.Errorf("%s: level and cosine are not each other's inverse: %+v", tc.name, s)
		}
		if r := s.Relevance(s.QueryUnrelated); r != 0 || s.Relevance(1) != 1 {
			t.Errorf("%s: relevance %v at the unrelated median, %v at identity", tc.name, r, s.Relevance(1))
		}
	}
}

type mapMeta map[string]string

func (m mapMeta) Meta(_ context.Context, k string) (string, bool, error) {
	v, ok := m[k]
	return v, ok, nil
}
func (m mapMeta) PutMeta(_ context.Context, k, v string) error { m[k] = v; return nil }

type counting struct {
	docQuery
	calls int
}

func (c *counting) EmbedDocuments(ctx context.Context, t []string) ([][]float32, error) {
	c.calls++
	return c.docQuery.EmbedDocuments(ctx, t)
}

func TestLoadKeepsTheScalePerEmbedder(t *testing.T) {
	l, _ := embed.NewHash(384)
	c := &counting{docQuery: docQuery{l}}
	meta := mapMeta{}
	a, err := Load(context.Background(), meta, c, "hash/x/384")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(context.Background(), meta, c, "hash/x/384")
	if err != nil || !reflect.DeepEqual(a, b) || c.calls != 1 {
		t.Errorf("second load measured again (%d calls) or differs: %+v %+v %v", c.calls, a, b, err)
	}
	if _, err := Load(context.Background(), meta, c, "other/y/384"); err != nil || c.calls != 2 || len(meta) != 2 {
		t.Errorf("another embedder key shared the scale: %d calls, %d kept, %v", c.calls, len(meta), err)
	}
}
