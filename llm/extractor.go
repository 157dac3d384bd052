package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/memstream/memstream/internal/wait"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	openai "github.com/sashabaranov/go-openai"

	"github.com/memstream/memstream/extract"
	"github.com/memstream/memstream/llmtrace"
	"github.com/memstream/memstream/priority"
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
	// timeouts and connection errors before Extract reports the failure
	// (the pipeline then stalls and tries again later). Zero means no
	// retries; negative is invalid.
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

	fallbackLog everyMinute
}

// Deps are an Extractor's collaborators. Registerer may be nil (no
// metrics exported); Logger may be nil (logs are discarded).
type Deps struct {
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// Gate, when set, is the LLM gate shared with every other client of
	// the endpoint (reflect, consolidation): each call holds one of its
	// slots, live calls such as this extractor's before background ones.
	Gate *priority.Gate
	// Trace, when set, records every call in its bank's LLM trace.
	Trace *llmtrace.Recorder
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
	rt := deps.Trace.Transport(tr)
	if deps.Gate != nil {
		rt = &priority.Transport{Gate: deps.Gate, Base: rt}
	}
	oc.HTTPClient = &http.Client{Transport: rt}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	fallback, err := extract.NewOffline(extract.OfflineConfig{})
	if err != nil {
		return nil, err
	}
	return &Extractor{
		cfg: cfg, client: openai.NewClientWithConfig(oc), tr: tr, fallback: fallback,
		sem: make(chan struct{}, cfg.Concurrency), m: m, log: log,
	}, nil
}

// Close releases idle connections. Calls made after Close still work; they
// open new connections.
func (e *Extractor) Close() { e.tr.CloseIdleConnections() }

// Extract returns the facts of each input, in order. Inputs are sent
// ChunksPerCall at a time, the calls running concurrently up to
// Concurrency. A call whose answer is still invalid after one re-ask falls
// back to the offline extractor for its chunks; every other failure is
// reported, never papered over:
//
//   - the inputs of a call that failed are named in an *extract.BatchError
//     with an *Error saying why (Transient, Unavailable or InputRejected),
//     and the other inputs' facts are returned with it;
//   - a call the server rejects (400, 413, 422) is retried one chunk at a
//     time, so only the chunk it cannot take fails;
//   - when ctx ends Extract returns ctx.Err().
func (e *Extractor) Extract(ctx context.Context, in []extract.Input) ([][]extract.Fact, error) {
	// One call carries one bank's chunks: its request is recorded in that
	// bank's LLM trace, and no prompt mixes two banks' content. The
	// inputs are grouped by bank, in order, and the answers put back.
	order := make([]int, len(in))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(in[a].BankID, in[b].BankID) })
	sorted := make([]extract.Input, len(in))
	for i, j := range order {
		sorted[i] = in[j]
	}
	sout := make([][]extract.Fact, len(in))
	errs := make([]error, len(in))
	var wg sync.WaitGroup
	for lo := 0; lo < len(sorted); {
		hi := lo + 1
		for hi < len(sorted) && hi-lo < e.cfg.ChunksPerCall && sorted[hi].BankID == sorted[lo].BankID {
			hi++
		}
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			e.extractInto(ctx, sorted[lo:hi], sout[lo:hi], errs[lo:hi])
		}(lo, hi)
		lo = hi
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([][]extract.Fact, len(in))
	be := extract.NewBatchError()
	for i, j := range order {
		out[j] = sout[i]
		if errs[i] != nil {
			be.Failed(j, errs[i])
		}
	}
	return out, be.OrNil()
}

// traceCall binds the bank of one call's inputs (all the same) to ctx for
// its LLM trace (a call split after a rejection stays in its run), with
// the call's chunks and their document when they share one.
func traceCall(ctx context.Context, in []extract.Input) context.Context {
	ctx = llmtrace.WithScope(llmtrace.Start(ctx, in[0].BankID, "retain"), "retain_extract_facts")
	var chunks []uuid.UUID
	for _, x := range in {
		if x.ChunkID != uuid.Nil {
			chunks = append(chunks, x.ChunkID)
		}
	}
	ctx = llmtrace.WithChunks(ctx, chunks)
	for _, x := range in[1:] {
		if x.DocumentID != in[0].DocumentID {
			return ctx
		}
	}
	return llmtrace.WithDocument(ctx, in[0].DocumentID)
}

// extractInto extracts one call's inputs into out, or sets errs for the
// inputs it could not. A rejected call is split into one call per chunk.
func (e *Extractor) extractInto(ctx context.Context, in []extract.Input, out [][]extract.Fact, errs []error) {
	ctx = traceCall(ctx, in)
	facts, err := e.extractGroup(ctx, in)
	if err == nil {
		copy(out, facts)
		return
	}
	var le *Error
	if len(in) > 1 && errors.As(err, &le) && le.InputRejected() {
		e.log.Debug("llm call rejected; retrying its chunks one by one", slog.Int("chunks", len(in)), slog.Any("error", err))
		for i := range in {
			e.extractInto(ctx, in[i:i+1], out[i:i+1], errs[i:i+1])
		}
		return
	}
	for i := range errs {
		errs[i] = err
	}
}

// extractGroup extracts the inputs of one call.
func (e *Extractor) extractGroup(ctx context.Context, in []extract.Input) ([][]extract.Fact, error) {
	body, err := json.Marshal(buildRequest(in))
	if err != nil {
		// Inputs are plain strings and times; this cannot happen.
		return nil, &Error{Kind: KindRejected, Err: fmt.Errorf("encode request: %w", err)}
	}
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: systemPrompt},
		{Role: openai.ChatMessageRoleUser, Content: string(body)},
	}
	content, err := e.call(ctx, msgs)
	if err != nil {
		return nil, err
	}
	facts, perr := parseResponse(content, in)
	if perr == nil {
		return facts, nil
	}
	// One re-ask with the error: models usually fix a named mistake, and a
	// second failure is better served by the offline extractor than by
	// more tokens.
	e.m.invalid.Inc()
	e.m.reasks.Inc()
	e.log.Debug("llm answer invalid; asking again", slog.Int("chunks", len(in)), slog.Any("error", perr))
	msgs = append(msgs,
		openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: content},
		openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: fmt.Sprintf(
			"That answer is invalid: %v. Reply again with the complete JSON for every chunk_index, following the schema exactly.", perr)})
	if content, err = e.call(ctx, msgs); err != nil {
		return nil, err
	}
	if facts, perr = parseResponse(content, in); perr == nil {
		return facts, nil
	}
	e.m.invalid.Inc()
	return e.fallBack(ctx, in, perr)
}

// fallBack extracts with the offline extractor the chunks whose answers
// stayed invalid: the only failure that falls back, since the model did
// answer and will answer the same way again. Every fallback is counted;
// the log line comes at most once a minute with the count since the last.
func (e *Extractor) fallBack(ctx context.Context, in []extract.Input, cause error) ([][]extract.Fact, error) {
	e.m.fallbacks.Add(float64(len(in)))
	if n, ok := e.fallbackLog.tick(time.Now(), len(in)); ok {
		e.log.Warn("llm answers invalid after a re-ask; chunks extracted by the offline extractor instead",
			slog.Int("chunks_since_last_report", n), slog.Any("last_error", cause))
	}
	return e.fallback.Extract(ctx, in)
}

// everyMinute lets one report through per minute and counts what it held
// back meanwhile.
type everyMinute struct {
	mu      sync.Mutex
	last    time.Time
	pending int
}

func (r *everyMinute) tick(now time.Time, n int) (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending += n
	if !r.last.IsZero() && now.Sub(r.last) < time.Minute {
		return 0, false
	}
	r.last = now
	n, r.pending = r.pending, 0
	return n, true
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
		le := classify(err)
		if !le.Transient() || attempt >= e.cfg.MaxRetries {
			return "", le
		}
		e.m.retries.Inc()
		e.log.Debug("llm call failed; retrying", slog.Int("attempt", attempt+1), slog.Any("error", err))
		if !wait.Sleep(ctx, wait.Jitter(delay)) {
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

// Error kinds of a failed call (the Kind of an *Error).
const (
	KindAuth      = "auth"      // 401, 403: the key is wrong or lacks access
	KindConfig    = "config"    // 404: no such model or endpoint
	KindRejected  = "rejected"  // 400, 413, 422: the server will not take this input
	KindThrottled = "throttled" // 429
	KindServer    = "server"    // 5xx, 408
	KindTimeout   = "timeout"
	KindNetwork   = "network"
)

// Error is a failed LLM call, classified for the pipeline: Transient
// failures stall ingest and are retried, Unavailable ones (auth and
// configuration) stall it and fail readiness until an operator acts, and
// InputRejected ones fail only the input they name.
type Error struct {
	Kind   string
	Status int // HTTP status, 0 when the call got no answer
	Err    error
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("llm %s error (HTTP %d): %v", e.Kind, e.Status, e.Err)
	}
	return fmt.Sprintf("llm %s error: %v", e.Kind, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Transient reports a failure worth retrying as is: throttling, server
// errors, timeouts and broken connections.
func (e *Error) Transient() bool {
	switch e.Kind {
	case KindThrottled, KindServer, KindTimeout, KindNetwork:
		return true
	}
	return false
}

// Unavailable reports an auth or configuration failure: nothing will work
// until llm.api_key, llm.model or llm.base_url is fixed.
func (e *Error) Unavailable() bool { return e.Kind == KindAuth || e.Kind == KindConfig }

// InputRejected reports that the server refused this request's content.
func (e *Error) InputRejected() bool { return e.Kind == KindRejected }

// classify turns a call error into an *Error. Statuses the table does not
// name count as server errors: retrying is safe, and dropping is not.
func classify(err error) *Error {
	var le *Error
	if errors.As(err, &le) {
		return le
	}
	s := statusOf(err)
	switch {
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return &Error{Kind: KindAuth, Status: s, Err: err}
	case s == http.StatusNotFound:
		return &Error{Kind: KindConfig, Status: s, Err: err}
	case s == http.StatusBadRequest || s == http.StatusRequestEntityTooLarge || s == http.StatusUnprocessableEntity:
		return &Error{Kind: KindRejected, Status: s, Err: err}
	case s == http.StatusTooManyRequests:
		return &Error{Kind: KindThrottled, Status: s, Err: err}
	case s != 0:
		return &Error{Kind: KindServer, Status: s, Err: err}
	case errors.Is(err, errTimeout):
		return &Error{Kind: KindTimeout, Err: err}
	}
	return &Error{Kind: KindNetwork, Err: err}
}

// outcome is the bounded label of a failed call.
func outcome(err error) string {
	switch le := classify(err); le.Kind {
	case KindThrottled:
		return "rate_limited"
	case KindServer:
		return "server_error"
	case KindAuth, KindConfig, KindRejected:
		return "client_error"
	case KindTimeout:
		return "timeout"
	}
	return "network_error"
}

// Check returns a probe of an OpenAI-compatible endpoint (its model
// list), for the API's /health/llm: whether the configured LLM answers.
// The probe goes through rt (nil: http.DefaultTransport), so a recorder's
// transport records it in the bank's LLM trace.
func Check(baseURL, apiKey string, rt http.RoundTripper) func(context.Context) error {
	oc := openai.DefaultConfig(apiKey)
	oc.BaseURL = baseURL
	if rt != nil {
		oc.HTTPClient = &http.Client{Transport: rt}
	}
	cl := openai.NewClientWithConfig(oc)
	return func(ctx context.Context) error {
		_, err := cl.ListModels(ctx)
		return err
	}
}
