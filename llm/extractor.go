package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	openai "github.com/sashabaranov/go-openai"

	"github.com/memstream/memstream/extract"
)

// Config configures [Extractor]; it mirrors the llm.* configuration keys.
type Config struct {
	// BaseURL is the API root including /v1, e.g. http://localhost:11434/v1.
	// Empty means the go-openai default.
	BaseURL string
	// APIKey is sent as a bearer token; local servers usually ignore it.
	APIKey string
	// Model is the chat model. Required: there is no safe guess.
	Model string
	// Concurrency is the most calls in flight at once, across all Extract
	// calls of this Extractor. Default 8.
	Concurrency int
	// Timeout bounds one HTTP call; a call that times out is retried.
	// Default 60s.
	Timeout time.Duration
	// MaxRetries is how many times one call is retried after 429, 5xx,
	// timeouts and connection errors before its chunks fall back to the
	// offline extractor. Zero means no retries; negative is invalid.
	MaxRetries int
	// ChunksPerCall is how many chunks one call carries. More chunks per
	// call amortise the prompt and the latency; fewer keep one failure
	// cheap. Default 4.
	ChunksPerCall int
	// InitialBackoff is the first retry delay; it doubles up to MaxBackoff,
	// and each wait is jittered to ±50% so that throttled callers spread
	// out. Defaults 500ms and 20s.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// Temperature is sent with every call. Default 0: extraction should be
	// as repeatable as the model allows.
	Temperature float32
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Concurrency == 0 {
		c.Concurrency = 8
	}
	if c.Timeout == 0 {
		c.Timeout = 60 * time.Second
	}
	if c.ChunksPerCall == 0 {
		c.ChunksPerCall = 4
	}
	if c.InitialBackoff == 0 {
		c.InitialBackoff = 500 * time.Millisecond
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 20 * time.Second
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Model == "":
		return errors.New("llm.model: must be set")
	case c.Concurrency < 0:
		return fmt.Errorf("llm.concurrency: must be positive, got %d", c.Concurrency)
	case c.Timeout < 0:
		return fmt.Errorf("llm.timeout: must be positive, got %s", c.Timeout)
	case c.MaxRetries < 0:
		return fmt.Errorf("llm.max_retries: must not be negative, got %d", c.MaxRetries)
	case c.ChunksPerCall < 0:
		return fmt.Errorf("llm.chunks_per_call: must be positive, got %d", c.ChunksPerCall)
	case c.InitialBackoff < 0 || c.MaxBackoff < c.InitialBackoff:
		return fmt.Errorf("llm backoff: need 0 <= InitialBackoff (%s) <= MaxBackoff (%s)", c.InitialBackoff, c.MaxBackoff)
	}
	return nil
}

// fallbackExtractor extracts the chunks the LLM could not; the offline
// extractor in production.
type fallbackExtractor interface {
	Extract(ctx context.Context, in []extract.Input) ([][]extract.Fact, error)
}

// Extractor extracts facts through an OpenAI-compatible chat-completions
// API. It is safe for concurrent use.
type Extractor struct {
	cfg      Config
	client   *openai.Client
	tr       *http.Transport
	fallback fallbackExtractor
	sem      chan struct{}
	m        *metrics
	log      *slog.Logger
}

// Deps are an Extractor's collaborators. Registerer may be nil (no
// metrics exported); Logger may be nil (logs are discarded).
type Deps struct {
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// New returns an Extractor for cfg after applying defaults.
func New(deps Deps, cfg Config) (*Extractor, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	reg, log := deps.Registerer, deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		oc.BaseURL = cfg.BaseURL
	}
	// Keep one idle connection per possible in-flight call so a busy
	// extractor does not reconnect on every request.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = cfg.Concurrency
	oc.HTTPClient = &http.Client{Transport: tr}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Extractor{
		cfg: cfg, client: openai.NewClientWithConfig(oc), tr: tr, fallback: extract.NewOffline(extract.OfflineConfig{}),
		sem: make(chan struct{}, cfg.Concurrency), m: m, log: log,
	}, nil
}

// Close releases idle connections. Calls made after Close still work; they
// open new connections.
func (e *Extractor) Close() { e.tr.CloseIdleConnections() }

// Extract returns the facts of each input, in order. Inputs are sent
// ChunksPerCall at a time, the calls running concurrently up to
// Concurrency. A call that still fails after its retries and one re-ask
// falls back to the offline extractor for its chunks, so every input gets
// an answer; Extract fails only when ctx ends.
func (e *Extractor) Extract(ctx context.Context, in []extract.Input) ([][]extract.Fact, error) {
	out := make([][]extract.Fact, len(in))
	var wg sync.WaitGroup
	for lo := 0; lo < len(in); lo += e.cfg.ChunksPerCall {
		hi := min(lo+e.cfg.ChunksPerCall, len(in))
		wg.Add(1)
		go func() {
			defer wg.Done()
			copy(out[lo:hi], e.extractGroup(ctx, in[lo:hi]))
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// extractGroup extracts the inputs of one call. It returns nil only when
// ctx ended.
func (e *Extractor) extractGroup(ctx context.Context, in []extract.Input) [][]extract.Fact {
	body, err := json.Marshal(buildRequest(in))
	if err != nil {
		// Inputs are plain strings and times; this cannot happen, but if it
		// does the chunks still get extracted.
		return e.fallBack(ctx, in, err)
	}
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: systemPrompt},
		{Role: openai.ChatMessageRoleUser, Content: string(body)},
	}
	content, err := e.call(ctx, msgs)
	if err == nil {
		facts, perr := parseResponse(content, in)
		if perr == nil {
			return facts
		}
		// One re-ask with the error: models usually fix a named mistake,
		// and a second failure is better served by the offline extractor
		// than by more tokens.
		e.m.invalid.Inc()
		e.m.reasks.Inc()
		e.log.Warn("llm answer invalid; asking again", slog.Int("chunks", len(in)), slog.Any("error", perr))
		msgs = append(msgs,
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: content},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: fmt.Sprintf(
				"That answer is invalid: %v. Reply again with the complete JSON for every chunk_index, following the schema exactly.", perr)})
		content, err = e.call(ctx, msgs)
		if err == nil {
			if facts, perr = parseResponse(content, in); perr == nil {
				return facts
			}
			e.m.invalid.Inc()
			err = perr
		}
	}
	return e.fallBack(ctx, in, err)
}

func (e *Extractor) fallBack(ctx context.Context, in []extract.Input, cause error) [][]extract.Fact {
	if ctx.Err() != nil {
		return nil
	}
	e.m.fallbacks.Add(float64(len(in)))
	e.log.Warn("llm extraction failed; using the offline extractor", slog.Int("chunks", len(in)), slog.Any("error", cause))
	facts, err := e.fallback.Extract(ctx, in)
	if err != nil {
		return nil
	}
	return facts
}

// call performs one chat completion with retries on transient failures.
func (e *Extractor) call(ctx context.Context, msgs []openai.ChatCompletionMessage) (string, error) {
	delay := e.cfg.InitialBackoff
	for attempt := 0; ; attempt++ {
		content, err := e.once(ctx, msgs)
		if err == nil {
			return content, nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if !retryable(err) || attempt >= e.cfg.MaxRetries {
			return "", err
		}
		e.m.retries.Inc()
		e.log.Debug("llm call failed; retrying", slog.Int("attempt", attempt+1), slog.Any("error", err))
		if !sleep(ctx, jitter(delay)) {
			return "", ctx.Err()
		}
		delay = min(delay*2, e.cfg.MaxBackoff)
	}
}

// once is one HTTP call, holding a concurrency slot only while it runs so
// that backoff waits do not starve other calls.
func (e *Extractor) once(ctx context.Context, msgs []openai.ChatCompletionMessage) (string, error) {
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-e.sem }()
	e.m.inflight.Inc()
	defer e.m.inflight.Dec()
	cctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	start := time.Now()
	resp, err := e.client.CreateChatCompletion(cctx, openai.ChatCompletionRequest{
		Model:       e.cfg.Model,
		Messages:    msgs,
		Temperature: e.cfg.Temperature,
		ResponseFormat: &openai.ChatCompletionResponseFormat{
			Type:       openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: "memory_facts", Schema: factsSchema, Strict: true},
		},
	})
	e.m.seconds.Observe(time.Since(start).Seconds())
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("llm call timed out after %s: %w", e.cfg.Timeout, errTimeout)
		}
		e.m.calls.WithLabelValues(outcome(err)).Inc()
		return "", err
	}
	e.m.calls.WithLabelValues("ok").Inc()
	e.m.tokens.WithLabelValues("prompt").Add(float64(resp.Usage.PromptTokens))
	e.m.tokens.WithLabelValues("completion").Add(float64(resp.Usage.CompletionTokens))
	if len(resp.Choices) == 0 {
		// An empty answer is an invalid answer, not a transport failure:
		// it goes through the re-ask path.
		return "", nil
	}
	ch := resp.Choices[0]
	if ch.Message.Refusal != "" {
		return "model refused: " + ch.Message.Refusal, nil
	}
	return ch.Message.Content, nil
}

var errTimeout = errors.New("timeout")

func statusOf(err error) int {
	var api *openai.APIError
	if errors.As(err, &api) {
		return api.HTTPStatusCode
	}
	var req *openai.RequestError
	if errors.As(err, &req) {
		return req.HTTPStatusCode
	}
	return 0
}

// retryable reports whether err is worth another attempt: throttling,
// server errors, timeouts and broken connections. Client errors (400, 401,
// 404) will not get better by asking again.
func retryable(err error) bool {
	switch s := statusOf(err); {
	case s == http.StatusTooManyRequests || s == http.StatusRequestTimeout || s >= 500:
		return true
	case s != 0:
		return false
	}
	var ne net.Error
	return errors.Is(err, errTimeout) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// outcome is the bounded label of a failed call.
func outcome(err error) string {
	switch s := statusOf(err); {
	case s == http.StatusTooManyRequests:
		return "rate_limited"
	case s >= 500:
		return "server_error"
	case s != 0:
		return "client_error"
	}
	if errors.Is(err, errTimeout) {
		return "timeout"
	}
	return "network_error"
}

func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d/2 + time.Duration(rand.Int64N(int64(d)))
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
