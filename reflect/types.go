package reflect

import "time"

// Request is one reflect question (SPEC §5 POST …/reflect).
type Request struct {
	BankID         string         `json:"-"`
	Query          string         `json:"query"`
	Budget         string         `json:"budget,omitempty"`
	MaxTokens      int            `json:"max_tokens,omitempty"`
	Tags           []string       `json:"tags,omitempty"`
	ResponseSchema map[string]any `json:"response_schema,omitempty"`
	// QueryTimestamp anchors "now" for relative time expressions, recency
	// and staleness (default: the time of the request), as in recall.
	QueryTimestamp *time.Time `json:"query_timestamp,omitempty"`
	// Disposition overrides the bank's traits for this request.
	Disposition *Disposition `json:"disposition,omitempty"`
	// Context is background the caller adds to the question.
	Context string `json:"context,omitempty"`
	// Directives are the bank's hard rules for answers (Hindsight
	// directives): the agent's instructions carry them, highest priority
	// first.
	Directives []string `json:"directives,omitempty"`
}

// Disposition is a bank's character: each trait is 1–5 (default 3).
type Disposition struct {
	Skepticism int `json:"skepticism"`
	Literalism int `json:"literalism"`
	Empathy    int `json:"empathy"`
}

// Response is the reflect answer (SPEC §5).
type Response struct {
	Text             string  `json:"text"`
	BasedOn          BasedOn `json:"based_on"`
	StructuredOutput any     `json:"structured_output,omitempty"`
	// StructuredOutputError says why structured_output is missing although
	// a response_schema was given (the model's JSON failed validation
	// twice, or the offline provider cannot fill the schema).
	StructuredOutputError string         `json:"structured_output_error,omitempty"`
	Usage                 Usage          `json:"usage"`
	Trace                 Trace          `json:"trace"`
	Extractive            bool           `json:"extractive,omitempty"`
	Extra                 map[string]any `json:"-"`
}

// BasedOn lists the ids actually cited or used.
type BasedOn struct {
	Memories     []string `json:"memories"`
	Observations []string `json:"observations"`
	MentalModels []string `json:"mental_models"`
}

// Usage counts tokens spent on LLM calls.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// Trace shows how the answer was reached.
type Trace struct {
	Iterations int  `json:"iterations"`
	Forced     bool `json:"forced"`
	// StopReason says how the loop ended: done, answer (the model replied
	// without calling done), max_iterations, budget, timeout,
	// context_overflow, llm_error or offline.
	StopReason string     `json:"stop_reason,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls"`
	LLMCalls   []LLMCall  `json:"llm_calls"`
}

// ToolCall is one tool invocation of the agent loop.
type ToolCall struct {
	Tool       string `json:"tool"`
	Input      any    `json:"input"`
	OutputSize int    `json:"output_size"`
	DurationMS int64  `json:"duration_ms"`
}

// LLMCall is one model call of the agent loop.
type LLMCall struct {
	Tokens     int   `json:"tokens"`
	DurationMS int64 `json:"duration_ms"`
}
