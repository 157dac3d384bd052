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
	"strconv"
	"strings"
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
type APIRecaller struct {
	cfg  APIRecallerConfig
	http *http.Client
}

// NewAPIRecaller returns a recaller for cfg. client may be nil.
func NewAPIRecaller(cfg APIRecallerConfig, client *http.Client) (*APIRecaller, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if client == nil {
		client = &http.Client{}
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	return &APIRecaller{cfg: cfg, http: client}, nil
}

type apiRecallRequest struct {
	Query          string   `json:"query"`
	MaxTokens      int      `json:"max_tokens"`
	QueryTimestamp string   `json:"query_timestamp,omitempty"`
	Arms           []string `json:"arms,omitempty"`
	Fusion         string   `json:"fusion,omitempty"`
	Types          []string `json:"types,omitempty"`
}

type apiRecallResponse struct {
	Results []struct {
		ID         string            `json:"id"`
		Text       string            `json:"text"`
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
	body := apiRecallRequest{Query: query, MaxTokens: r.cfg.MaxTokens, Arms: r.cfg.Arms, Fusion: r.cfg.Fusion, Types: r.cfg.Types}
	if !queryTime.IsZero() {
		body.QueryTimestamp = queryTime.UTC().Format(time.RFC3339)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, 0, fmt.Errorf("encode recall request: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	endpoint := r.cfg.BaseURL + "/v1/default/banks/" + url.PathEscape(bankID) + "/memories/recall"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(b))
	if err != nil {
		return nil, 0, fmt.Errorf("recall bank %s: %w", bankID, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if r.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.cfg.Token)
	}
	began := time.Now()
	resp, err := r.http.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("recall bank %s: %w", bankID, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	took := time.Since(began)
	if err != nil {
		return nil, took, fmt.Errorf("recall bank %s: read response: %w", bankID, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e apiError
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			return nil, took, fmt.Errorf("recall bank %s: HTTP %d %s: %s", bankID, resp.StatusCode, e.Error.Code, e.Error.Message)
		}
		return nil, took, fmt.Errorf("recall bank %s: HTTP %d", bankID, resp.StatusCode)
	}
	var out apiRecallResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, took, fmt.Errorf("recall bank %s: decode response: %w", bankID, err)
	}
	res := make([]Retrieved, 0, len(out.Results))
	for _, x := range out.Results {
		res = append(res, Retrieved{
			ID: x.ID, Text: x.Text, SessionID: x.DocumentID, TurnIndex: turnIndexOf(x.Metadata),
			Score: x.Scores.Final, Tokens: x.Tokens,
		})
	}
	return res, took, nil
}

// turnIndexOf reads the source message index the pipeline stores in a
// fact's metadata. Facts without one (observations, retained text) can
// only match at session level.
func turnIndexOf(meta map[string]string) int {
	v, ok := meta["message_index"]
	if !ok {
		return UnknownTurn
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return UnknownTurn
	}
	return n
}
