package embed

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// OpenAIConfig configures [OpenAI]. Zero values are filled by WithDefaults.
type OpenAIConfig struct {
	// BaseURL is the API root including /v1, for example
	// http://localhost:11434/v1 for Ollama. Default: OpenAI's.
	BaseURL string
	// APIKey is sent as a bearer token; local servers usually ignore it.
	APIKey string
	// Model is the embedding model name. Required: guessing a model would
	// silently put vectors from the wrong space into the database.
	Model string
	// Dim is the vector size the database column was created with. Every
	// response is checked against it. Required.
	Dim int
	// Prefixes are prepended to query and document texts, for models
	// trained with instructions (e5 behind vLLM or TEI: "query: " and
	// "passage: "). Empty: texts go as they are.
	Prefixes Prefixes
	// SendInputType adds "input_type": "query" or "document" to each request,
	// as Cohere-, Voyage- and NIM-style servers expect. OpenAI's own API has no
	// such field, and some strict servers reject unknown fields, so it is off
	// by default.
	SendInputType bool
	// SendDimensions asks the server to shorten vectors to Dim (OpenAI's
	// text-embedding-3 "dimensions" parameter). Off by default because many
	// compatible servers reject the field.
	SendDimensions bool
	// BatchSize is the most texts sent in one request. Servers cap the
	// inputs per request (OpenAI at 2048); smaller batches also keep one
	// failure from redoing much work. Default 128.
	BatchSize int
	// MaxRetries is how many times a failed request is retried after 429,
	// 5xx, timeouts and connection errors. Default 4.
	MaxRetries int
	// InitialBackoff is the first retry delay; it doubles up to MaxBackoff,
	// with jitter so that many workers do not retry in lockstep.
	// Defaults 250ms and 10s.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// RequestTimeout bounds one attempt, so a hung server costs one retry
	// rather than the caller's whole deadline. Default 30s.
	RequestTimeout time.Duration
}

// OpenAIDeps is the HTTP client an OpenAI embedder calls through.
type OpenAIDeps struct {
	// HTTPClient is optional (tests, proxies): nil means a client of its
	// own.
	HTTPClient *http.Client
}

// WithDefaults returns c with zero fields set to their defaults.
func (c OpenAIConfig) WithDefaults() OpenAIConfig {
	if c.BaseURL == "" {
		c.BaseURL = "https://api.openai.com/v1"
	}
	if c.BatchSize == 0 {
		c.BatchSize = 128
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = 4
	}
	if c.InitialBackoff == 0 {
		c.InitialBackoff = 250 * time.Millisecond
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 10 * time.Second
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 30 * time.Second
	}
	return c
}

func (c OpenAIConfig) validate() error {
	switch {
	case c.Model == "":
		return errors.New("embed.model: required for the openai provider")
	case c.Dim <= 0:
		return fmt.Errorf("embed.dim: must be positive, got %d", c.Dim)
	case c.BatchSize < 0:
		return fmt.Errorf("embed.batch_size: must be positive, got %d", c.BatchSize)
	case c.MaxRetries < 0:
		return fmt.Errorf("embed.max_retries: must not be negative, got %d", c.MaxRetries)
	}
	if _, err := url.Parse(c.BaseURL); err != nil {
		return fmt.Errorf("embed.base_url: %w", err)
	}
	return nil
}

// OpenAI embeds through an OpenAI-compatible /v1/embeddings endpoint
// (provider "openai"). It is safe for concurrent use.
type OpenAI struct {
	cfg    OpenAIConfig
	client *openai.Client
}

// NewOpenAI returns an embedder for cfg, after filling defaults and
// validating it. It does not contact the server.
func NewOpenAI(deps OpenAIDeps, cfg OpenAIConfig) (*OpenAI, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cc := openai.DefaultConfig(cfg.APIKey)
	cc.BaseURL = cfg.BaseURL
	client := deps.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	cc.HTTPClient = client
	return &OpenAI{cfg: cfg, client: openai.NewClientWithConfig(cc)}, nil
}

// Dim reports the configured vector size.
func (o *OpenAI) Dim() int { return o.cfg.Dim }

// Name reports the provider name used in configuration and metrics.
func (o *OpenAI) Name() string { return "openai" }

// EmbedDocuments returns one document vector per text, in order.
func (o *OpenAI) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	return o.embed(ctx, Document, texts)
}

// EmbedQueries returns one query vector per text, in order.
func (o *OpenAI) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	return o.embed(ctx, Query, texts)
}

// embed sends at most BatchSize texts per request. Batches run one after
// another: the pipeline already embeds several batches in parallel, and a
// server that rate-limits is better served by fewer concurrent requests. If
// any batch fails after its retries, it returns the error and no vectors.
func (o *OpenAI) embed(ctx context.Context, kind Kind, texts []string) ([][]float32, error) {
	texts = apply(o.cfg.Prefixes.For(kind), texts)
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += o.cfg.BatchSize {
		end := min(start+o.cfg.BatchSize, len(texts))
		vecs, err := o.embedBatch(ctx, kind, texts[start:end])
		if err != nil {
			return nil, fmt.Errorf("embed texts %d..%d with model %s: %w", start, end-1, o.cfg.Model, err)
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (o *OpenAI) embedBatch(ctx context.Context, kind Kind, batch []string) ([][]float32, error) {
	req := openai.EmbeddingRequest{
		Input: batch,
		Model: openai.EmbeddingModel(o.cfg.Model),
	}
	if o.cfg.SendInputType {
		req.ExtraBody = map[string]any{"input_type": kind.String()}
	}
	if o.cfg.SendDimensions {
		req.Dimensions = o.cfg.Dim
	}
	backoff := o.cfg.InitialBackoff
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, o.cfg.RequestTimeout)
		resp, err := o.client.CreateEmbeddings(actx, req)
		cancel()
		if err == nil {
			return o.check(resp, len(batch))
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if attempt >= o.cfg.MaxRetries || !retryable(err) {
			return nil, &Error{Status: statusOf(err), Err: fmt.Errorf("after %d attempts: %w", attempt+1, err)}
		}
		// Equal jitter: wait between half and all of the backoff, so
		// retries spread out but still back off.
		d := backoff/2 + time.Duration(rand.Int64N(int64(backoff/2)+1))
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		backoff = min(backoff*2, o.cfg.MaxBackoff)
	}
}

// check validates a response and orders it by index. Servers may return the
// data out of order, and a model with the wrong dimension must fail loudly
// here rather than at insert time, far from its cause.
func (o *OpenAI) check(resp openai.EmbeddingResponse, n int) ([][]float32, error) {
	if len(resp.Data) != n {
		return nil, fmt.Errorf("server returned %d embeddings for %d inputs", len(resp.Data), n)
	}
	out := make([][]float32, n)
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= n || out[d.Index] != nil {
			return nil, fmt.Errorf("server returned bad or duplicate index %d for %d inputs", d.Index, n)
		}
		if len(d.Embedding) != o.cfg.Dim {
			return nil, fmt.Errorf("model %s returned %d dimensions, but embed.dim is %d: set embed.dim to the model's dimension (or enable dimensions if the model supports shortening)",
				o.cfg.Model, len(d.Embedding), o.cfg.Dim)
		}
		out[d.Index] = d.Embedding
	}
	return out, nil
}

// retryable reports errors that another attempt may fix: rate limits,
// server errors, timeouts and broken connections. Client errors such as a
// bad key or an unknown model are returned at once.
// Error is a failed embedding request, classified for the ingest pipeline:
// an outage (Transient) stalls ingest and is retried, a refused key or a
// missing model (Unavailable) stalls it and fails readiness, and an input
// the server refuses (InputRejected) fails only its record. Without the
// classes, an outage that outlasted the retries here dead-lettered whole
// batches.
type Error struct {
	Status int // HTTP status, 0 when no answer came
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// Transient reports throttling, server errors, timeouts and broken
// connections.
func (e *Error) Transient() bool { return retryable(e.Err) }

// Unavailable reports a refused key (401, 403) or an unknown model or
// endpoint (404).
func (e *Error) Unavailable() bool {
	return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden || e.Status == http.StatusNotFound
}

// InputRejected reports a request the server refuses for its content.
func (e *Error) InputRejected() bool {
	return e.Status == http.StatusBadRequest || e.Status == http.StatusRequestEntityTooLarge || e.Status == http.StatusUnprocessableEntity
}

func statusOf(err error) int {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.HTTPStatusCode
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return reqErr.HTTPStatusCode
	}
	return 0
}

func retryable(err error) bool {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return retryableStatus(apiErr.HTTPStatusCode)
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return retryableStatus(reqErr.HTTPStatusCode)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true // the per-attempt timeout; the caller's ctx was checked
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	var urlErr *url.Error
	return errors.As(err, &urlErr)
}

func retryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500
}
