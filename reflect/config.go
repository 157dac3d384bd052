package reflect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	openai "github.com/sashabaranov/go-openai"

	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/tokens"
)

// Recaller runs recall queries; *recall.Recaller is one. Observations are
// searched through it too, with Types ["observation"], so they get the
// same four arms and trend-aware scoring as facts.
type Recaller interface {
	Recall(ctx context.Context, req recall.Request) (recall.Response, error)
}

// MemoryStore is what reflect reads directly from the store; *store.Store
// is one.
type MemoryStore interface {
	// GetBank returns the bank's profile (for its disposition) or an error
	// wrapping store.ErrNotFound.
	GetBank(ctx context.Context, id string) (store.Bank, error)
	// RankMentalModels returns a bank's mental models, best match first.
	RankMentalModels(ctx context.Context, bankID, question string, tags []string, limit int) ([]store.MentalModelHit, error)
	// ExpandMemories returns the chunk or document text behind facts.
	ExpandMemories(ctx context.Context, bankID string, ids []uuid.UUID, depth string) ([]store.MemoryContext, error)
}

// ChatCompleter is an OpenAI-compatible chat endpoint; *openai.Client is
// one. Declared here so tests and wrappers (rate limiters, caches) fit.
type ChatCompleter interface {
	CreateChatCompletion(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error)
}

// Deps are the Reflector's collaborators.
type Deps struct {
	// Recaller and Store are required.
	Recaller Recaller
	Store    MemoryStore
	// LLM, when nil, selects the offline provider: the same tool sequence,
	// then an extractive answer.
	LLM ChatCompleter
	// Tokens counts what prompts and tool results cost; recall's counter,
	// so that both budgets mean the same. Nil builds a cl100k counter.
	Tokens *tokens.Counter
	// Log defaults to discarding; Registerer, when nil, leaves the metrics
	// unregistered.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Config tunes a Reflector. The zero value is usable: WithDefaults fills
// it.
type Config struct {
	// Model names the chat model; required when Deps.LLM is set.
	Model string
	// MaxIterations bounds the agent's tool-calling turns (default 10);
	// when they are used up, one tool-less call answers from what was
	// gathered.
	MaxIterations int
	// ContextTokens is the agent's whole context budget: prompt, every
	// tool result and the answer (default 32000). Tool results are cut to
	// fit what is left of it.
	ContextTokens int
	// AnswerTokens is kept free of the budget for the model's answer, and
	// caps it (default 1024).
	AnswerTokens int
	// MaxToolResultTokens caps one tool result even when much budget is
	// left, so one broad recall cannot crowd out the rest (default 4000).
	MaxToolResultTokens int
	// MinToolResultTokens is the smallest useful tool result: below it the
	// loop stops searching and answers (default 128).
	MinToolResultTokens int
	// Timeout bounds one reflect call end to end (default 60s). When it
	// runs out the answer is composed extractively from what was gathered,
	// rather than failing.
	Timeout time.Duration
	// SynthesisTimeout is reserved at the end of Timeout for the final
	// answer call (default 15s, at most half of Timeout).
	SynthesisTimeout time.Duration
	// Temperature of the chat calls. Zero is not sent (the OpenAI wire
	// format cannot tell it from unset), which leaves the server's default.
	Temperature float32
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.MaxIterations == 0 {
		c.MaxIterations = 10
	}
	if c.ContextTokens == 0 {
		c.ContextTokens = 32000
	}
	if c.AnswerTokens == 0 {
		c.AnswerTokens = 1024
	}
	if c.MaxToolResultTokens == 0 {
		c.MaxToolResultTokens = 4000
	}
	if c.MinToolResultTokens == 0 {
		c.MinToolResultTokens = 128
	}
	if c.Timeout == 0 {
		c.Timeout = 60 * time.Second
	}
	if c.SynthesisTimeout == 0 {
		c.SynthesisTimeout = min(15*time.Second, c.Timeout/2)
	}
	return c
}

func (c Config) validate(hasLLM bool) error {
	switch {
	case hasLLM && c.Model == "":
		return errors.New("reflect config model: required when an LLM is configured")
	case c.MaxIterations < 1:
		return fmt.Errorf("reflect config max_iterations: must be positive, got %d", c.MaxIterations)
	case c.AnswerTokens < 1:
		return fmt.Errorf("reflect config answer_tokens: must be positive, got %d", c.AnswerTokens)
	case c.MinToolResultTokens < 1:
		return fmt.Errorf("reflect config min_tool_result_tokens: must be positive, got %d", c.MinToolResultTokens)
	case c.MaxToolResultTokens < c.MinToolResultTokens:
		return fmt.Errorf("reflect config max_tool_result_tokens: %d is below min_tool_result_tokens %d", c.MaxToolResultTokens, c.MinToolResultTokens)
	case c.ContextTokens < c.AnswerTokens+4*c.MinToolResultTokens:
		return fmt.Errorf("reflect config context_tokens: %d leaves no room for tool results beside %d answer tokens", c.ContextTokens, c.AnswerTokens)
	case c.Timeout < 0:
		return fmt.Errorf("reflect config timeout: must be positive, got %s", c.Timeout)
	case c.SynthesisTimeout < 0 || c.SynthesisTimeout >= c.Timeout:
		return fmt.Errorf("reflect config synthesis_timeout: must be positive and below timeout %s, got %s", c.Timeout, c.SynthesisTimeout)
	case c.Temperature < 0 || c.Temperature > 2:
		return fmt.Errorf("reflect config temperature: must be within 0–2, got %g", c.Temperature)
	}
	return nil
}

// Reflector answers reflect requests. It is safe for concurrent use.
type Reflector struct {
	tok  *tokens.Counter
	deps Deps
	cfg  Config
	log  *slog.Logger
	m    *metrics
}

// New returns a Reflector. Without Deps.LLM it answers extractively
// (offline provider).
func New(deps Deps, cfg Config) (*Reflector, error) {
	if deps.Recaller == nil {
		return nil, errors.New("reflect: nil Recaller")
	}
	if deps.Store == nil {
		return nil, errors.New("reflect: nil Store")
	}
	// A nil *openai.Client in the interface would pass a nil check and
	// panic on first use; it means "no LLM configured".
	if c, ok := deps.LLM.(*openai.Client); ok && c == nil {
		deps.LLM = nil
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(deps.LLM != nil); err != nil {
		return nil, err
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tok := deps.Tokens
	if tok == nil {
		var err error
		if tok, err = tokens.New(tokens.Config{}); err != nil {
			return nil, err
		}
	}
	m, err := newMetrics(deps.Registerer)
	if err != nil {
		return nil, err
	}
	return &Reflector{tok: tok, deps: deps, cfg: cfg, log: log, m: m}, nil
}
