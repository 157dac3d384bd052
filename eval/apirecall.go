package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// APIRecallerConfig configures APIRecaller. Arms, Fusion and Types are
// passed through to the recall request, so that an ablation is a set of
// recallers that differ only in these fields.
type APIRecallerConfig struct {
	// BaseURL is memstream's HTTP API, e.g. http://127.0.0.1:8888.
	BaseURL string
	// Token is sent as a bearer key when set.
	Token string
	// MaxTokens is the recall request's max_tokens budget. Default 2048.
	MaxTokens int
	// Arms restricts retrieval to some of semantic, keyword, graph and
	// temporal; empty means all.
	Arms []string
	// Fusion is rrf or interleave; empty means the server's default.
	Fusion string
	// Types restricts fact types (world, experience, observation); empty
	// means all.
	Types []string
	// Off lists ranking heuristics to switch off (heuristics_off).
	Off []string
	// Timeout bounds one recall call. Default 60s.
	Timeout time.Duration
}

// WithDefaults fills zero fields.
func (c APIRecallerConfig) WithDefaults() APIRecallerConfig {
	if c.MaxTokens == 0 {
		c.MaxTokens = 2048
	}
	if c.Timeout == 0 {
		c.Timeout = 60 * time.Second
	}
	return c
}

func (c APIRecallerConfig) validate() error {
	u, err := url.Parse(c.BaseURL)
	switch {
	case c.BaseURL == "" || err != nil || u.Scheme == "" || u.Host == "":
		return fmt.Errorf("eval: APIRecallerConfig.BaseURL %q is not an http URL", c.BaseURL)
	case c.MaxTokens < 0:
		return errors.New("eval: APIRecallerConfig.MaxTokens must not be negative")
	case c.Fusion != "" && c.Fusion != "rrf" && c.Fusion != "interleave":
		return fmt.Errorf("eval: APIRecallerConfig.Fusion %q is not rrf or interleave", c.Fusion)
	}
	return nil
}

// APIRecaller implements Recaller over POST /v1/default/banks/{bank}/memories/recall,
// the same path an agent uses, so the benchmark measures what users get.
//
// A consolidated observation has no turn of its own, so the recaller looks
// up its evidence facts (GET …/observations/{id}, then each fact) and
// reports their turns as the result's Sources. Lookups are cached and
// shared by the recallers With derives, and happen after the latency is
// measured.
type APIRecaller struct {
	cfg   APIRecallerConfig
	http  *http.Client
	cache *provenanceCache
}

type provenanceCache struct {
	mu      sync.Mutex
	sources map[string][]Evidence // bank + "/" + observation id
}

// APIRecallerDeps is the HTTP client an APIRecaller calls through.
type APIRecallerDeps struct {
	// Client is optional: nil means a client of its own.
	Client *http.Client
}

// NewAPIRecaller returns a recaller for cfg that calls through deps.Client.
func NewAPIRecaller(deps APIRecallerDeps, cfg APIRecallerConfig) (*APIRecaller, error) {
	client := deps.Client
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if client == nil {
		// A private transport, so Close can drop its idle connections
		// without touching anyone else's.
		client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	return &APIRecaller{cfg: cfg, http: client, cache: &provenanceCache{sources: map[string][]Evidence{}}}, nil
}

// Close drops the idle keep-alive connections of the recaller's client
// (and of every recaller With derived from it).
func (r *APIRecaller) Close() { r.http.CloseIdleConnections() }

// With returns a recaller for another ablation variant that shares this
// one's HTTP client and observation cache.
func (r *APIRecaller) With(arms []string, fusion string, types, off []string) (*APIRecaller, error) {
	cfg := r.cfg
	cfg.Arms, cfg.Fusion, cfg.Types, cfg.Off = arms, fusion, types, off
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &APIRecaller{cfg: cfg, http: r.http, cache: r.cache}, nil
}

type apiRecallRequest struct {
	Query          string   `json:"query"`
	MaxTokens      int      `json:"max_tokens"`
	QueryTimestamp string   `json:"query_timestamp,omitempty"`
	Arms           []string `json:"arms,omitempty"`
	Fusion         string   `json:"fusion,omitempty"`
	Types          []string `json:"types,omitempty"`
	HeuristicsOff  []string `json:"heuristics_off,omitempty"`
}

type apiRecallResponse struct {
	Results []struct {
		ID         string            `json:"id"`
		Text       string            `json:"text"`
		Type       string            `json:"type"`
		DocumentID string            `json:"document_id"`
		Metadata   map[string]string `json:"metadata"`
		Tokens     int               `json:"tokens"`
		Scores     struct {
			Final float64 `json:"final"`
		} `json:"scores"`
	} `json:"results"`
}

type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Recall asks one question. The latency is the HTTP round trip, which is
// what an agent on the same host would wait.
func (r *APIRecaller) Recall(ctx context.Context, bankID, query string, queryTime time.Time) ([]Retrieved, time.Duration, error) {
	body := apiRecallRequest{Query: query, MaxTokens: r.cfg.MaxTokens, Arms: r.cfg.Arms, Fusion: r.cfg.Fusion, Types: r.cfg.Types, HeuristicsOff: r.cfg.Off}
	if !queryTime.IsZero() {
		body.QueryTimestamp = queryTime.UTC().Format(time.RFC3339)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, 0, fmt.Errorf("encode recall request: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	began := time.Now()
	var out apiRecallResponse
	if err := r.call(ctx, http.MethodPost, bankPath(bankID)+"/memories/recall", b, &out); err != nil {
		return nil, time.Since(began), fmt.Errorf("recall bank %s: %w", bankID, err)
	}
	took := time.Since(began)
	res := make([]Retrieved, 0, len(out.Results))
	for _, x := range out.Results {
		rt := Retrieved{
			ID: x.ID, Text: x.Text, SessionID: x.DocumentID, TurnIndex: turnIndexOf(x.Metadata),
			Score: x.Scores.Final, Tokens: x.Tokens,
		}
		if x.Type == "observation" {
			if rt.Sources, err = r.observationSources(ctx, bankID, x.ID); err != nil {
				return nil, took, err
			}
		}
		res = append(res, rt)
	}
	return res, took, nil
}

func bankPath(bankID string) string { return "/v1/default/banks/" + url.PathEscape(bankID) }

// send sends one API request and returns the status and body of the
// answer, whatever the status; call and retainOne decide what it means.
func (r *APIRecaller) send(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.cfg.BaseURL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.cfg.Token)
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("read response: %w", err)
	}
	return resp.StatusCode, raw, nil
}

// call sends one API request and decodes a 200 answer into out.
func (r *APIRecaller) call(ctx context.Context, method, path string, body []byte, out any) error {
	status, raw, err := r.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		var e apiError
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			return fmt.Errorf("HTTP %d %s: %s", status, e.Error.Code, e.Error.Message)
		}
		return fmt.Errorf("HTTP %d", status)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	return nil
}

// observationSources returns the turns of an observation's evidence facts.
func (r *APIRecaller) observationSources(ctx context.Context, bankID, id string) ([]Evidence, error) {
	key := bankID + "/" + id
	r.cache.mu.Lock()
	src, ok := r.cache.sources[key]
	r.cache.mu.Unlock()
	if ok {
		return src, nil
	}
	var obs struct {
		Evidence []struct {
			MemoryID string `json:"memory_id"`
		} `json:"evidence"`
	}
	if err := r.call(ctx, http.MethodGet, bankPath(bankID)+"/observations/"+url.PathEscape(id), nil, &obs); err != nil {
		return nil, fmt.Errorf("observation %s of bank %s: %w", id, bankID, err)
	}
	src = []Evidence{}
	for _, ev := range obs.Evidence {
		var m struct {
			DocumentID string            `json:"document_id"`
			Metadata   map[string]string `json:"metadata"`
		}
		if err := r.call(ctx, http.MethodGet, bankPath(bankID)+"/memories/"+url.PathEscape(ev.MemoryID), nil, &m); err != nil {
			return nil, fmt.Errorf("evidence %s of observation %s in bank %s: %w", ev.MemoryID, id, bankID, err)
		}
		src = append(src, Evidence{SessionID: m.DocumentID, TurnIndex: turnIndexOf(m.Metadata)})
	}
	r.cache.mu.Lock()
	r.cache.sources[key] = src
	r.cache.mu.Unlock()
	return src, nil
}

// turnIndexOf reads the source turn of a fact; facts without one
// (observations, retained text) can only match at session level.
func turnIndexOf(meta map[string]string) int { return TurnOf(meta) }
