package rerank

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Config configures an HTTP reranker.
type Config struct {
	// URL is the full endpoint, e.g. http://tei:8080/rerank.
	URL    string
	APIKey string
	// Model is sent as "model" for Cohere-style servers; empty omits it.
	Model   string
	Timeout time.Duration
	// MaxDocuments caps one request; longer lists are sent in chunks.
	MaxDocuments int
}

// HTTPDeps is the HTTP client a reranker calls through.
type HTTPDeps struct {
	// Client is optional: nil means a client of its own.
	Client *http.Client
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Second
	}
	if c.MaxDocuments <= 0 {
		c.MaxDocuments = 64
	}
	return c
}

func (c Config) validate() error {
	if !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") {
		return fmt.Errorf("rerank.url: %q is not an http(s) URL", c.URL)
	}
	return nil
}

// HTTP is a cross-encoder reranker behind an HTTP endpoint.
type HTTP struct {
	cfg    Config
	client *http.Client
}

// NewHTTP returns a reranker for cfg that calls through deps.Client.
func NewHTTP(deps HTTPDeps, cfg Config) (*HTTP, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	client := deps.Client
	if client == nil {
		client = &http.Client{}
	}
	return &HTTP{cfg: cfg, client: client}, nil
}

type request struct {
	Query     string   `json:"query"`
	Texts     []string `json:"texts"`     // TEI
	Documents []string `json:"documents"` // Cohere, Jina, vLLM
	Model     string   `json:"model,omitempty"`
	TopN      int      `json:"top_n,omitempty"`
}

type scored struct {
	Index          int      `json:"index"`
	Score          *float64 `json:"score"`
	RelevanceScore *float64 `json:"relevance_score"`
}

// Rerank returns one relevance score per document, in input order.
func (h *HTTP) Rerank(ctx context.Context, query string, docs []string) ([]float64, error) {
	out := make([]float64, len(docs))
	for start := 0; start < len(docs); start += h.cfg.MaxDocuments {
		end := min(start+h.cfg.MaxDocuments, len(docs))
		scores, err := h.call(ctx, query, docs[start:end])
		if err != nil {
			return nil, err
		}
		copy(out[start:end], scores)
	}
	return out, nil
}

func (h *HTTP) call(ctx context.Context, query string, docs []string) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	body, err := json.Marshal(request{Query: query, Texts: docs, Documents: docs, Model: h.cfg.Model, TopN: len(docs)})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if h.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+h.cfg.APIKey)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("rerank %s: %w", h.cfg.URL, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("rerank %s: %w", h.cfg.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("rerank %s: HTTP %d: %.200s", h.cfg.URL, resp.StatusCode, raw)
	}
	return parse(raw, len(docs))
}

// parse accepts a bare list (TEI) or an object with "results" or "data"
// (Cohere, Jina, vLLM).
func parse(raw []byte, n int) ([]float64, error) {
	var list []scored
	if err := json.Unmarshal(raw, &list); err != nil {
		var wrapped struct {
			Results []scored `json:"results"`
			Data    []scored `json:"data"`
		}
		if err := json.Unmarshal(raw, &wrapped); err != nil {
			return nil, fmt.Errorf("rerank: unreadable response: %w", err)
		}
		list = wrapped.Results
		if list == nil {
			list = wrapped.Data
		}
	}
	if len(list) != n {
		return nil, fmt.Errorf("rerank: %d scores for %d documents", len(list), n)
	}
	out := make([]float64, n)
	seen := make([]bool, n)
	for _, s := range list {
		if s.Index < 0 || s.Index >= n || seen[s.Index] {
			return nil, fmt.Errorf("rerank: bad or repeated index %d", s.Index)
		}
		seen[s.Index] = true
		switch {
		case s.RelevanceScore != nil:
			out[s.Index] = *s.RelevanceScore
		case s.Score != nil:
			out[s.Index] = *s.Score
		default:
			return nil, errors.New("rerank: a result has no score")
		}
	}
	return out, nil
}
