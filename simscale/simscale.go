// Package simscale puts the cosine similarities of any embedder on one
// scale, so that no threshold in memstream assumes one embedder's numbers.
//
// Embedders disagree wildly about what a cosine means: hashed n-grams give
// unrelated sentences about 0.05 and restatements 0.5; a sentence model
// such as multilingual-e5 gives everything between 0.8 and 0.9. A fixed
// "same topic at 0.55" folds nothing with one and everything with the
// other. So memstream measures each embedder once on a fixed probe set of
// restatements and unrelated statements (probe.go), and expresses every
// threshold as a level on that embedder's own scale:
//
//	level(cos) = (cos − unrelated) / (related − unrelated)
//
// where unrelated and related are the medians of the probe's unrelated and
// restating pairs. Level 0 is "as similar as two unrelated statements of
// one speaker usually are", level 1 "as similar as two restatements usually
// are". Queries against documents have their own pair of anchors (a
// question and the statements that answer it), because retrieval models
// place queries differently from documents.
//
// The scale of an embedder is measured at start-up the first time it is
// used against a database and kept there (memstream_meta, keyed by
// provider, model and dimension), so every replica uses the same numbers.
package simscale

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// Scale is one embedder's similarity scale.
type Scale struct {
	// Key identifies the embedder (provider/model/dim).
	Key     string `json:"key"`
	Version int    `json:"version"`
	// Unrelated and Related are the median cosines of unrelated and of
	// restating document pairs of the probe set.
	Unrelated float64 `json:"unrelated"`
	Related   float64 `json:"related"`
	// QueryUnrelated and QueryAnswer are the median cosines of a question
	// against unrelated statements and against the statements that answer
	// it.
	QueryUnrelated float64 `json:"query_unrelated"`
	QueryAnswer    float64 `json:"query_answer"`
	// QueryForm is the unit direction that separates a question from the
	// statements that answer it, whatever the topic: the mean, over the
	// probe topics, of a question's vector minus the mean vector of its
	// answers (written without a speaker label). Sentence-similarity
	// models put a question nearer to other questions than to its answer
	// ("Where do I live now?" is closer to "Any tips for a follow-up
	// email?" than to "We live in Mission Bay"); Declarative takes this
	// direction out of a query vector. Empty for a scale measured without
	// it. The query anchors above are measured on the queries recall
	// searches with (Query).
	QueryForm []float32 `json:"query_form,omitempty"`
	// QueryMean is the mean of the probe questions' unit vectors: what
	// every question shares, whatever it asks. QueryForm takes one
	// direction of the interrogative form out of a query; the rest of it
	// still puts a question near the other questions of a bank (a user
	// asking for tips, an assistant asking back), which crowd out the
	// statement that answers it. Centred subtracts the mean, the centring
	// of Mu and Viswanath's "all-but-the-top". Empty for a scale measured
	// without it.
	QueryMean []float32 `json:"query_mean,omitempty"`
}

// Identity is the scale whose levels are cosines (unrelated 0, related 1):
// the reference the level constants of memstream were written in, and the
// fallback of code that has no measured scale.
var Identity = Scale{Key: "identity", Unrelated: 0, Related: 1, QueryUnrelated: 0, QueryAnswer: 1}

// IsZero reports the zero Scale (none measured or given).
func (s Scale) IsZero() bool {
	return s.Key == "" && s.Related == 0 && s.Unrelated == 0 && len(s.QueryForm) == 0
}

// Level places a document-document cosine on the scale.
func (s Scale) Level(cos float64) float64 { return (cos - s.Unrelated) / s.span() }

// Cosine is the document-document cosine at a level: the inverse of Level,
// for code that hands a threshold to the database.
func (s Scale) Cosine(level float64) float64 { return s.Unrelated + level*s.span() }

// QueryLevel places a query-document cosine on the scale.
func (s Scale) QueryLevel(cos float64) float64 { return (cos - s.QueryUnrelated) / s.querySpan() }

// QueryCosine is the query-document cosine at a level.
func (s Scale) QueryCosine(level float64) float64 { return s.QueryUnrelated + level*s.querySpan() }

// Relevance maps a query-document cosine to [0, 1]: 0 at or below the
// typical unrelated statement, 1 at identity, linear between. It replaces
// a clamped raw cosine in scores, where an embedder whose cosines all sit
// near 0.8 would otherwise add a near-constant.
func (s Scale) Relevance(cos float64) float64 {
	return clamp01((cos - s.QueryUnrelated) / (1 - s.QueryUnrelated))
}

// Redundancy maps a document-document cosine to [0, 1] the same way, for
// diversity: two unrelated statements are not redundant at all, a copy is
// fully.
func (s Scale) Redundancy(cos float64) float64 {
	return clamp01((cos - s.Unrelated) / (1 - s.Unrelated))
}

// NearDuplicate is the document cosine from which two texts are taken for
// the same text: the fraction f of the way from a typical restatement to
// identity.
func (s Scale) NearDuplicate(f float64) float64 { return s.Related + f*(1-s.Related) }

func (s Scale) span() float64 {
	if d := s.Related - s.Unrelated; d > 1e-6 {
		return d
	}
	return 1e-6
}

func (s Scale) querySpan() float64 {
	if d := s.QueryAnswer - s.QueryUnrelated; d > 1e-6 {
		return d
	}
	return 1e-6
}

func clamp01(x float64) float64 { return min(max(x, 0), 1) }

// Declarative returns q without its component along QueryForm (the
// projection of Bolukbasi et al.'s hard debiasing, here removing the
// interrogative form instead of a bias): what is left ranks statements by
// what they say rather than questions by their form. q is returned
// unchanged when the scale has no direction or its dimension differs. q
// itself is not modified.
func (s Scale) Declarative(q []float32) []float32 {
	if len(s.QueryForm) == 0 || len(s.QueryForm) != len(q) {
		return q
	}
	var dot float64
	for i, u := range s.QueryForm {
		dot += float64(q[i]) * float64(u)
	}
	out := make([]float32, len(q))
	for i, u := range s.QueryForm {
		out[i] = q[i] - float32(dot*float64(u))
	}
	return out
}

// Centred returns q minus QueryMean, so that a query ranks statements by
// what sets it apart from other questions. Against unit document vectors
// this orders them as q·d − μ·d: a text's nearness to questions in
// general is taken off its score. q is returned unchanged when the scale
// has no mean or its dimension differs; q itself is not modified.
func (s Scale) Centred(q []float32) []float32 {
	if len(s.QueryMean) == 0 || len(s.QueryMean) != len(q) {
		return q
	}
	out := make([]float32, len(q))
	for i, m := range s.QueryMean {
		out[i] = q[i] - m
	}
	return out
}

// Query is the vector recall searches with: Centred(Declarative(q)).
func (s Scale) Query(q []float32) []float32 { return s.Centred(s.Declarative(q)) }

// Embedder is what Measure needs (embed.Embedder has both methods).
type Embedder interface {
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
	EmbedQueries(ctx context.Context, texts []string) ([][]float32, error)
}

// Measure embeds the probe set with emb and returns its scale. It fails
// when the embedder does, or when the embedder cannot tell restatements
// from unrelated statements at all (related not above unrelated): no
// threshold could be derived from it.
func Measure(ctx context.Context, emb Embedder, key string) (Scale, error) {
	var docs, plain []string
	var groupOf []int
	var questions []string
	for gi, g := range probeGroups {
		for j := range g.statements {
			docs = append(docs, probeStatement(g, j))
			plain = append(plain, g.statements[j])
			groupOf = append(groupOf, gi)
		}
		questions = append(questions, g.question)
	}
	dv, err := emb.EmbedDocuments(ctx, append(slices.Clip(docs), plain...))
	if err != nil {
		return Scale{}, fmt.Errorf("simscale: embed the probe statements for %s: %w", key, err)
	}
	qv, err := emb.EmbedQueries(ctx, questions)
	if err != nil {
		return Scale{}, fmt.Errorf("simscale: embed the probe questions for %s: %w", key, err)
	}
	if len(dv) != 2*len(docs) || len(qv) != len(questions) {
		return Scale{}, fmt.Errorf("simscale: %s returned %d and %d vectors for %d statements and %d questions", key, len(dv), len(qv), 2*len(docs), len(questions))
	}
	pv := dv[len(docs):]
	dv = dv[:len(docs)]
	s := Scale{Key: key, Version: probeVersion, QueryForm: queryForm(qv, pv, groupOf), QueryMean: unitMean(qv)}
	for i := range qv {
		qv[i] = s.Query(qv[i])
	}
	var related, unrelated, answer, qUnrelated []float64
	for i := range docs {
		for j := i + 1; j < len(docs); j++ {
			c := cosine(dv[i], dv[j])
			if groupOf[i] == groupOf[j] {
				related = append(related, c)
			} else {
				unrelated = append(unrelated, c)
			}
		}
		for gi := range questions {
			c := cosine(qv[gi], dv[i])
			if groupOf[i] == gi {
				answer = append(answer, c)
			} else {
				qUnrelated = append(qUnrelated, c)
			}
		}
	}
	s.Unrelated, s.Related = median(unrelated), median(related)
	s.QueryUnrelated, s.QueryAnswer = median(qUnrelated), median(answer)
	if s.Related <= s.Unrelated || s.QueryAnswer <= s.QueryUnrelated {
		return s, fmt.Errorf("simscale: %s does not separate restatements from unrelated statements (median cosines %.3f vs %.3f, answers %.3f vs %.3f)",
			key, s.Related, s.Unrelated, s.QueryAnswer, s.QueryUnrelated)
	}
	return s, nil
}

// queryForm is the unit mean of (question − mean of its group's plain
// statements) over the probe groups, or nil when it vanishes. Differences
// within a group cancel the topic, so what the mean keeps is the form.
// Vectors are normalised first: an embedder need not return unit vectors.
func queryForm(qv, pv [][]float32, groupOf []int) []float32 {
	if len(qv) == 0 || len(pv) == 0 {
		return nil
	}
	dim := len(qv[0])
	sum := make([]float64, dim)
	for gi, q := range qv {
		if len(q) != dim {
			return nil
		}
		mean := make([]float64, dim)
		n := 0
		for i, p := range pv {
			if groupOf[i] != gi || len(p) != dim {
				continue
			}
			np := vnorm(p)
			for k := range p {
				mean[k] += float64(p[k]) / np
			}
			n++
		}
		if n == 0 {
			continue
		}
		nq := vnorm(q)
		for k := range q {
			sum[k] += float64(q[k])/nq - mean[k]/float64(n)
		}
	}
	var ss float64
	for _, x := range sum {
		ss += x * x
	}
	if ss < 1e-12 {
		return nil
	}
	out := make([]float32, dim)
	for k, x := range sum {
		out[k] = float32(x / math.Sqrt(ss))
	}
	return out
}

// unitMean is the mean of vs normalised, or nil when vs is empty or the
// dimensions differ.
func unitMean(vs [][]float32) []float32 {
	if len(vs) == 0 {
		return nil
	}
	dim := len(vs[0])
	sum := make([]float64, dim)
	for _, v := range vs {
		if len(v) != dim {
			return nil
		}
		n := vnorm(v)
		for k := range v {
			sum[k] += float64(v[k]) / n
		}
	}
	out := make([]float32, dim)
	for k, x := range sum {
		out[k] = float32(x / float64(len(vs)))
	}
	return out
}

func vnorm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return 1
	}
	return math.Sqrt(s)
}

// Meta is where scales are kept (store.Store).
type Meta interface {
	Meta(ctx context.Context, key string) (value string, ok bool, err error)
	PutMeta(ctx context.Context, key, value string) error
}

// Load returns the scale kept for the embedder key, or measures it (when
// missing, unreadable, or of an older probe set) and keeps it.
func Load(ctx context.Context, meta Meta, emb Embedder, key string) (Scale, error) {
	mkey := "simscale:" + key
	raw, ok, err := meta.Meta(ctx, mkey)
	if err != nil {
		return Scale{}, fmt.Errorf("simscale: read the scale of %s: %w", key, err)
	}
	if ok {
		var s Scale
		if json.Unmarshal([]byte(raw), &s) == nil && s.Version == probeVersion && s.Key == key {
			return s, nil
		}
	}
	s, err := Measure(ctx, emb, key)
	if err != nil {
		return Scale{}, err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return Scale{}, err
	}
	if err := meta.PutMeta(ctx, mkey, string(b)); err != nil {
		return Scale{}, fmt.Errorf("simscale: keep the scale of %s: %w", key, err)
	}
	return s, nil
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range min(len(a), len(b)) {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}
