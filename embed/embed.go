package embed

import "context"

// Embedder is what every provider implements, and what [Cached] wraps.
//
// Queries and documents are separate calls because retrieval models embed
// them differently: e5 wants "query: " and "passage: " prefixes, some APIs
// take an input type. A caller that stores or compares stored texts (facts,
// observations) embeds documents; a caller that searches (a recall query, a
// mental model's question) embeds queries. The two kinds are comparable: a
// query vector is meant to be ranked against document vectors.
type Embedder interface {
	// EmbedDocuments returns one vector per text, in order, for texts that
	// are stored and searched.
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
	// EmbedQueries returns one vector per text, in order, for texts that
	// search.
	EmbedQueries(ctx context.Context, texts []string) ([][]float32, error)
	// Dim is the length of every vector.
	Dim() int
}

// Kind says what a text is embedded for.
type Kind uint8

// The kinds of text.
const (
	Document Kind = iota
	Query
)

// String names the kind as providers' input_type fields do.
func (k Kind) String() string {
	if k == Query {
		return "query"
	}
	return "document"
}

// Prefixes are prepended to texts before a model sees them. Models trained
// with instructions (e5: "query: " and "passage: ") lose much of their
// retrieval quality without them.
type Prefixes struct {
	Query    string
	Document string
}

// For returns the prefix of kind k.
func (p Prefixes) For(k Kind) string {
	if k == Query {
		return p.Query
	}
	return p.Document
}

// apply returns texts with prefix prepended, or texts itself when prefix is
// empty.
func apply(prefix string, texts []string) []string {
	if prefix == "" {
		return texts
	}
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = prefix + t
	}
	return out
}

// embedKind calls the method of e for kind k.
func embedKind(ctx context.Context, e Embedder, k Kind, texts []string) ([][]float32, error) {
	if k == Query {
		return e.EmbedQueries(ctx, texts)
	}
	return e.EmbedDocuments(ctx, texts)
}
