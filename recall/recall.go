package recall

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"

	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/timeparse"
	"github.com/memstream/memstream/tokens"
)

// Arm names, as used in Request.Arms and in the trace.
const (
	ArmSemantic = "semantic"
	ArmKeyword  = "keyword"
	ArmGraph    = "graph"
	ArmTemporal = "temporal"
)

// allArms is the fixed arm order: interleaving and the trace follow it, so
// answers are deterministic.
var allArms = []string{ArmSemantic, ArmKeyword, ArmGraph, ArmTemporal}

// Fusion methods for Request.Fusion.
const (
	FusionRRF        = "rrf"
	FusionInterleave = "interleave"
)

// Tag match modes for Request.TagsMatch. The non-strict modes also return
// untagged facts, because most facts carry no tags and a tag filter should
// narrow the tagged ones rather than hide everything else.
const (
	TagsAny       = "any"
	TagsAll       = "all"
	TagsAnyStrict = "any_strict"
	TagsAllStrict = "all_strict"
	TagsExact     = "exact"
)

// Budget levels for Request.Budget.
const (
	BudgetLow  = "low"
	BudgetMid  = "mid"
	BudgetHigh = "high"
)

// Request is one recall query.
type Request struct {
	// BankID is the memory bank to search; facts of other banks are never
	// returned.
	BankID string
	// Query is the agent's question in natural language.
	Query string
	// Types restricts fact types (world, experience, observation); empty
	// means all.
	Types []string
	// Budget (low, mid, high; default mid) trades latency for recall: it
	// sets each arm's candidate pool and hnsw.ef_search.
	Budget string
	// MaxTokens caps the summed Tokens of the results (default
	// Config.DefaultMaxTokens).
	MaxTokens int
	// QueryTime anchors relative time expressions and recency; zero means
	// the bank's event clock (its latest event, see Deps.Clock), or the
	// wall clock when none is configured.
	QueryTime time.Time
	// Tags filters facts by their tags, as TagsMatch says.
	Tags []string
	// TagsMatch is any (default), all, any_strict, all_strict or exact.
	TagsMatch string
	// Fusion is rrf (default) or interleave.
	Fusion string
	// Arms selects a subset of semantic, keyword, graph and temporal, for
	// ablation; empty means all.
	Arms []string
	// Trace asks for per-arm candidates and timings in Response.Trace.
	Trace bool
	// Diversity turns on maximal marginal relevance: results are picked
	// one by one, each by (1-Diversity)·relevance − Diversity·(its
	// highest cosine to a result already picked), so five paraphrases of
	// one fact do not crowd out the rest of the budget. 0 (the default)
	// keeps the score order; must be in [0, 1).
	Diversity float64
	// SkipRerank leaves out the cross-encoder even when one is configured
	// (for ablation, or a caller that wants the fused order).
	SkipRerank bool
	// Off switches off ranking heuristics by name (Heuristics), so the
	// ablation can measure what each one is worth.
	Off []string
}

// Ranking heuristics applied on top of the arms and fusion, each of which
// a request can switch off (Request.Off). Each stays only while the
// held-out ablation shows it helps (docs/EVALUATION.md); attribute slots,
// fresh-first, the proof-count boost, the trend factor, the suggestion
// frame and the taste and named lists were removed that way.
const (
	// HeuristicDedupe collapses results with the same text (dedupe.go).
	HeuristicDedupe = "dedupe"
	// HeuristicRecency multiplies by the recency factor.
	HeuristicRecency = "recency"
	// HeuristicQueryForm takes the interrogative form out of the query
	// vector (simscale.Scale.Declarative), so that a question is matched
	// with the statements that answer it rather than with other questions.
	HeuristicQueryForm = "query_form"
	// HeuristicArmWeights weighs the arms in RRF (Config.ArmWeights);
	// off, every arm counts the same.
	HeuristicArmWeights = "arm_weights"
	// HeuristicPresent orders the head of the answer to a question about
	// the present state of something by full recency (present.go), so the
	// newest statement of a changed state ranks above the older ones.
	HeuristicPresent = "present"
	// HeuristicChange embeds a question about the present behind a
	// statement of change (present.go), so that it finds the statement
	// that changed the state.
	HeuristicChange = "change"
	// HeuristicQueryCentre subtracts the mean question vector from the
	// query vector (simscale.Scale.Centred), so that the bank's other
	// questions, near every question, stop crowding the answer out.
	HeuristicQueryCentre = "query_centre"
)

// Heuristics lists every switchable heuristic, in ablation order.
var Heuristics = []string{HeuristicDedupe, HeuristicRecency, HeuristicQueryForm, HeuristicQueryCentre, HeuristicArmWeights, HeuristicPresent, HeuristicChange}

// Scores explains a result's rank.
type Scores struct {
	// Final orders the results; see score.go for the formula.
	Final float64 `json:"final"`
	// Semantic is the cosine similarity of the fact to the query.
	Semantic float64 `json:"semantic"`
	// Keyword, Graph and Temporal are the arms' own scores (0 when the arm
	// did not return the fact).
	Keyword  float64 `json:"keyword"`
	Graph    float64 `json:"graph"`
	Temporal float64 `json:"temporal"`
	// Rerank is the cross-encoder's score, when a reranker ran.
	Rerank *float64 `json:"rerank,omitempty"`
}

// Result is one recalled fact.
type Result struct {
	ID            uuid.UUID         `json:"id"`
	Text          string            `json:"text"`
	Type          string            `json:"type"`
	Context       string            `json:"context"`
	Entities      []string          `json:"entities"`
	OccurredStart *time.Time        `json:"occurred_start"`
	OccurredEnd   *time.Time        `json:"occurred_end"`
	MentionedAt   time.Time         `json:"mentioned_at"`
	DocumentID    string            `json:"document_id"`
	Tags          []string          `json:"tags"`
	Metadata      map[string]string `json:"metadata"`
	SourceEventID string            `json:"source_event_id"`
	ProofCount    int               `json:"proof_count"`
	Trend         string            `json:"trend,omitempty"`
	Scores        Scores            `json:"scores"`
	// Tokens is what this result costs against MaxTokens (text plus
	// context).
	Tokens int `json:"tokens"`
}

// EntityRef is an entity that appears in the returned facts, so an agent
// can follow up on it by id.
type EntityRef struct {
	ID   uuid.UUID `json:"id"`
	Name string    `json:"name"`
	Kind string    `json:"kind"`
	// Results is how many returned facts mention it.
	Results int `json:"results"`
}

// Response is the answer to a Request.
type Response struct {
	// Results are in final-score order and fit MaxTokens.
	Results []Result `json:"results"`
	// Entities are those mentioned by Results, most frequent first.
	Entities []EntityRef `json:"entities,omitempty"`
	// Trace is set when Request.Trace was.
	Trace *Trace `json:"trace,omitempty"`
}

// Candidate is one fact proposed by an arm.
type Candidate struct {
	ID    uuid.UUID `json:"id"`
	Score float64   `json:"score"`
}

// ArmTrace records what one arm did.
type ArmTrace struct {
	Arm        string      `json:"arm"`
	Candidates []Candidate `json:"candidates"`
	DurationMS float64     `json:"duration_ms"`
	// Error is set when the arm failed or timed out; the answer was built
	// without it.
	Error string `json:"error,omitempty"`
	// Note explains an empty arm that did not fail (no time expression, no
	// informative terms, no entity named).
	Note string `json:"note,omitempty"`
}

// Window is a period named by the query.
type Window struct {
	Text  string    `json:"text"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Trace explains a recall, for debugging retrieval quality.
type Trace struct {
	Budget  string     `json:"budget"`
	Fusion  string     `json:"fusion"`
	Windows []Window   `json:"windows,omitempty"`
	EmbedMS float64    `json:"embed_ms"`
	Arms    []ArmTrace `json:"arms"`
	Fused   int        `json:"fused"`
	Dropped int        `json:"dropped_by_budget"`
	// Collapsed counts results dropped as copies of a better-scored
	// result with the same text (see collapseDuplicates).
	Collapsed int `json:"collapsed_duplicates"`
	// Rerank says what the cross-encoder did ("" when none is configured).
	Rerank string `json:"rerank,omitempty"`
	// ArmsMS is the time until the last arm finished; HydrateMS loading
	// the fused facts; ScoreMS scoring, diversifying and the token cut.
	ArmsMS     float64 `json:"arms_ms"`
	HydrateMS  float64 `json:"hydrate_ms"`
	ScoreMS    float64 `json:"score_ms"`
	TotalMS    float64 `json:"total_ms"`
	Tokenizer  string  `json:"tokenizer"`
	TokensUsed int     `json:"tokens_used"`
}

// Embedder turns query texts into vectors of the store's dimension, to be
// ranked against the stored (document) vectors. Declared here (STYLE §3) so
// any provider, or a cache in front of one, fits.
type Embedder interface {
	EmbedQueries(ctx context.Context, texts []string) ([][]float32, error)
}

// RequestError reports an invalid request field, so the HTTP layer can
// answer 400 with the field name.
type RequestError struct {
	Field   string
	Message string
}

// Error names the field, so a log line says what to fix.
func (e *RequestError) Error() string { return fmt.Sprintf("recall: %s: %s", e.Field, e.Message) }

// ErrAllArmsFailed is returned when every selected arm failed: there is
// nothing to degrade to, and an empty answer would lie.
var ErrAllArmsFailed = errors.New("recall: every retrieval arm failed")

// Store runs recall's statements; *store.Store is the one memstream uses.
type Store interface {
	RecallSemantic(ctx context.Context, f store.RecallFilter, vec []float32, ef, limit int) ([]store.Scored, error)
	RecallSemanticExact(ctx context.Context, f store.RecallFilter, vec []float32, limit int) ([]store.Scored, error)
	RecallGraphSeeds(ctx context.Context, bank string, keys, phrases, givenLike []string) (store.GraphSeeds, error)
	RecallGraph(ctx context.Context, f store.RecallFilter, w store.GraphWalk) ([]store.Scored, error)
	RecallTermFrequencies(ctx context.Context, bank string, terms []string, limit int) (map[string]int64, error)
	RecallBankSize(ctx context.Context, bank string) (int64, error)
	RecallKeyword(ctx context.Context, f store.RecallFilter, k store.KeywordSearch) ([]store.Scored, error)
	RecallTemporal(ctx context.Context, f store.RecallFilter, t store.TemporalSearch) ([]store.TemporalFact, error)
	RecallFacts(ctx context.Context, bank string, ids []uuid.UUID, vec []float32, withEmbedding bool) ([]store.RecallFact, error)
}

// Deps are a Recaller's collaborators.
type Deps struct {
	// Store is required.
	Store Store
	// Embedder may be nil: the semantic arm then fails and the others
	// carry on.
	Embedder Embedder
	// Reranker, when set (rerank.provider: http), rescores the top
	// Config.RerankTop results with a cross-encoder. A failing reranker
	// leaves the order as it was and says so in the trace.
	Reranker Reranker
	// Clock gives a bank's event clock (store.Store.BankClock): a request
	// without a query time is answered as of the bank's latest event, so
	// recency and "last Saturday" mean the same in a backfilled bank as
	// they did when it was lived. Nil means the wall clock.
	Clock BankClock
	// Tokens counts the budget; nil builds one for Config.Tokenizer.
	// Reflect shares it, so both budgets mean the same.
	Tokens *tokens.Counter
	// Registerer receives the recall metrics (memstream_recall_*). Nil
	// keeps them in a private registry: never the global default one.
	Registerer prometheus.Registerer
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Recaller runs recall queries. It is safe for concurrent use.
type Recaller struct {
	st    Store
	emb   Embedder
	rr    Reranker
	cfg   Config
	log   *slog.Logger
	tok   *tokens.Counter
	met   *metrics
	stats *statCache
	sizes singleflight.Group // bankSize look-ups in flight
	clock *clockCache
	// exactMax is the largest bank the semantic arm reads exactly
	// (exactSearchMaxFacts; tests lower it to reach the HNSW path).
	exactMax int64
}

// New returns a Recaller.
func New(deps Deps, cfg Config) (*Recaller, error) {
	if deps.Store == nil {
		return nil, errors.New("recall: nil Store")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tok := deps.Tokens
	if tok == nil {
		var err error
		if tok, err = tokens.New(tokens.Config{Tokenizer: cfg.Tokenizer}); err != nil {
			return nil, err
		}
	}
	reg := deps.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	met, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	stats, err := newStatCache(cfg.StatsTTL)
	if err != nil {
		return nil, err
	}
	return &Recaller{st: deps.Store, emb: deps.Embedder, rr: deps.Reranker, cfg: cfg, log: log, tok: tok, met: met, stats: stats,
		clock: &clockCache{src: deps.Clock, ttl: cfg.ClockTTL, at: map[string]clockEntry{}}, exactMax: exactSearchMaxFacts}, nil
}

// query is a validated request with its derived settings, shared read-only
// by the arms.
type query struct {
	Request
	pool     int // candidates per arm
	ef       int // hnsw.ef_search
	windows  []timeparse.Span
	armSet   map[string]bool
	off      map[string]bool
	tagsMode string

	// semDone is closed when the semantic arm has finished (nil when the
	// request does not run it); semTop then holds its candidates, best
	// first, for the graph arm (nil if it failed).
	semDone chan struct{}
	semTop  []Candidate

	embedDone chan struct{}
	vec       []float32
	// simVec is the embedding of the query itself, for the final score's
	// similarity term; vec may be that of a framed query (suggest.go,
	// present.go) and is what the arms search with.
	simVec   []float32
	embedErr error
	embedDur time.Duration
}

// vector waits for the query embedding (computed once, concurrently with
// the arms that do not need it).
func (q *query) vector(ctx context.Context) ([]float32, error) {
	select {
	case <-q.embedDone:
		return q.vec, q.embedErr
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// optionalVector is vector for arms that can do without the embedding
// (graph, temporal): they wait at most d, so a slow embedder leaves them
// time to answer with what they have instead of timing out with it.
func (q *query) optionalVector(ctx context.Context, d time.Duration) ([]float32, bool) {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	v, err := q.vector(wctx)
	return v, err == nil
}

func (r *Recaller) prepare(req Request) (*query, error) {
	if req.BankID == "" {
		return nil, &RequestError{Field: "bank_id", Message: "required"}
	}
	if req.QueryTime.IsZero() {
		req.QueryTime = time.Now()
	}
	if req.MaxTokens == 0 {
		req.MaxTokens = r.cfg.DefaultMaxTokens
	}
	if req.MaxTokens < 0 {
		return nil, &RequestError{Field: "max_tokens", Message: "must be positive"}
	}
	if req.Budget == "" {
		req.Budget = BudgetMid
	}
	b, ok := r.cfg.Budgets[req.Budget]
	if !ok {
		return nil, &RequestError{Field: "budget", Message: fmt.Sprintf("%q is not low, mid or high", req.Budget)}
	}
	if req.Fusion == "" {
		req.Fusion = FusionRRF
	}
	if req.Fusion != FusionRRF && req.Fusion != FusionInterleave {
		return nil, &RequestError{Field: "fusion", Message: fmt.Sprintf("%q is not rrf or interleave", req.Fusion)}
	}
	if req.TagsMatch == "" {
		req.TagsMatch = TagsAny
	}
	switch req.TagsMatch {
	case TagsAny, TagsAll, TagsAnyStrict, TagsAllStrict, TagsExact:
	default:
		return nil, &RequestError{Field: "tags_match", Message: fmt.Sprintf("%q is not any, all, any_strict, all_strict or exact", req.TagsMatch)}
	}
	if req.Diversity < 0 || req.Diversity >= 1 || math.IsNaN(req.Diversity) {
		return nil, &RequestError{Field: "diversity", Message: fmt.Sprintf("%g is not in [0, 1)", req.Diversity)}
	}
	for _, t := range req.Types {
		if t != "world" && t != "experience" && t != "observation" {
			return nil, &RequestError{Field: "types", Message: fmt.Sprintf("%q is not world, experience or observation", t)}
		}
	}
	q := &query{Request: req, pool: b.Candidates, ef: b.EfSearch, armSet: map[string]bool{}, off: map[string]bool{}, embedDone: make(chan struct{})}
	for _, h := range req.Off {
		if !slices.Contains(Heuristics, h) {
			return nil, &RequestError{Field: "heuristics_off", Message: fmt.Sprintf("%q is not one of %v", h, Heuristics)}
		}
		q.off[h] = true
	}
	if len(req.Arms) == 0 {
		req.Arms = allArms
	}
	for _, a := range req.Arms {
		if !slices.Contains(allArms, a) {
			return nil, &RequestError{Field: "arms", Message: fmt.Sprintf("%q is not semantic, keyword, graph or temporal", a)}
		}
		q.armSet[a] = true
	}
	if q.armSet[ArmSemantic] {
		q.semDone = make(chan struct{})
	}
	if q.Types == nil {
		q.Types = []string{}
	}
	if q.Tags == nil {
		q.Tags = []string{}
	}
	q.tagsMode = req.TagsMatch
	q.windows = timeparse.Parse(req.Query, req.QueryTime)
	return q, nil
}

// armFunc is one retriever: candidates best first, or a note saying why it
// has none.
type armFunc func(ctx context.Context, q *query) (cands []Candidate, note string, err error)

// Recall answers req. It fails only on an invalid request (*RequestError),
// when ctx ends, when every selected arm fails, or when hydration fails.
func (r *Recaller) Recall(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	resp, used, err := r.recall(ctx, req, start)
	outcome := "ok"
	var rerr *RequestError
	switch {
	case errors.As(err, &rerr):
		outcome = "invalid"
	case err != nil:
		outcome = "error"
	default:
		r.met.results.Add(float64(len(resp.Results)))
		r.met.tokens.Add(float64(used))
	}
	r.met.recallSecs.WithLabelValues(outcome).Observe(time.Since(start).Seconds())
	return resp, err
}

// recall is Recall without the metrics; it also returns the tokens used.
func (r *Recaller) recall(ctx context.Context, req Request, start time.Time) (Response, int, error) {
	if req.QueryTime.IsZero() && req.BankID != "" {
		req.QueryTime = r.clock.now(ctx, req.BankID)
	}
	q, err := r.prepare(req)
	if err != nil {
		return Response{}, 0, err
	}

	// The embedding is shared by three arms; compute it once, while the
	// keyword arm already runs.
	go func() {
		defer close(q.embedDone)
		if r.emb == nil {
			q.embedErr = errors.New("no embedder configured")
			return
		}
		ectx, cancel := context.WithTimeout(ctx, r.cfg.ArmTimeout)
		defer cancel()
		t0 := time.Now()
		text := q.Query
		if !q.off[HeuristicChange] && len(q.windows) == 0 {
			text = changeQuery(text)
		}
		texts := []string{text}
		if text != q.Query {
			// The similarity term of the final score stays that of the
			// question itself: a framed vector is nearer to nothing in
			// particular, and top scores are compared across questions.
			texts = append(texts, q.Query)
		}
		vs, err := r.emb.EmbedQueries(ectx, texts)
		q.embedDur = time.Since(t0)
		if err == nil && len(vs) != len(texts) {
			err = fmt.Errorf("got %d vectors for %d texts", len(vs), len(texts))
		}
		for i := range vs {
			if err == nil && len(vs[i]) == 0 {
				err = errors.New("empty vector")
			}
		}
		if err != nil {
			q.embedErr = fmt.Errorf("embed query: %w", err)
			return
		}
		form := func(v []float32) []float32 {
			if !q.off[HeuristicQueryForm] {
				v = r.cfg.Scale.Declarative(v)
			}
			if !q.off[HeuristicQueryCentre] {
				v = r.cfg.Scale.Centred(v)
			}
			return v
		}
		q.vec = form(vs[0])
		q.simVec = q.vec
		if len(vs) == 2 {
			q.simVec = form(vs[1])
		}
	}()

	arms := map[string]armFunc{
		ArmSemantic: r.semantic,
		ArmKeyword:  r.keyword,
		ArmGraph:    r.graph,
		ArmTemporal: r.temporal,
	}
	traces := make([]ArmTrace, 0, len(allArms))
	for _, a := range allArms {
		if q.armSet[a] {
			traces = append(traces, ArmTrace{Arm: a})
		}
	}
	hyd := newHydrator(r, q, len(traces))
	defer hyd.wait()
	var g errgroup.Group
	for i := range traces {
		tr := &traces[i]
		fn := arms[tr.Arm]
		g.Go(func() error {
			actx, cancel := context.WithTimeout(ctx, r.cfg.ArmTimeout)
			defer cancel()
			t0 := time.Now()
			cands, note, err := fn(actx, q)
			d := time.Since(t0)
			tr.DurationMS = ms(d)
			r.met.armSeconds.WithLabelValues(tr.Arm).Observe(d.Seconds())
			if err != nil {
				r.met.armFailed(tr.Arm, err, actx.Err())
				tr.Error = err.Error()
				r.log.Warn("recall arm failed", slog.String("bank_id", q.BankID), slog.String("arm", tr.Arm),
					slog.Float64("duration_ms", tr.DurationMS), slog.String("error", err.Error()))
				hyd.armDone(ctx, nil)
				return nil // degrade, never fail the whole recall
			}
			tr.Candidates, tr.Note = cands, note
			hyd.armDone(ctx, cands)
			return nil
		})
	}
	_ = g.Wait()
	<-q.embedDone // the goroutine must not outlive Recall
	if err := ctx.Err(); err != nil {
		return Response{}, 0, fmt.Errorf("recall bank %s: %w", q.BankID, err)
	}
	failed := 0
	for _, t := range traces {
		if t.Error != "" {
			failed++
		}
	}
	if failed == len(traces) {
		errs := make([]error, 0, len(traces))
		for _, t := range traces {
			errs = append(errs, fmt.Errorf("%s: %s", t.Arm, t.Error))
		}
		return Response{}, 0, fmt.Errorf("recall bank %s: %w: %w", q.BankID, ErrAllArmsFailed, errors.Join(errs...))
	}

	armsDone := time.Now()
	weights := r.cfg.ArmWeights
	if q.off[HeuristicArmWeights] {
		weights = nil
	}
	fs := fuse(q.Fusion, traces, r.cfg.RRFK, weights)
	resp := Response{Results: []Result{}}
	var dropped, used, collapsed int
	var rerankNote string
	var hydrateDur, scoreDur time.Duration
	if len(fs) > 0 {
		t0 := time.Now()
		hs, err := hyd.hydrate(ctx, fs)
		if err != nil {
			return Response{}, 0, fmt.Errorf("recall bank %s: %w", q.BankID, err)
		}
		t1 := time.Now()
		hydrateDur = t1.Sub(t0)
		scoreResults(hs, fs, q, r.cfg)
		if !q.off[HeuristicDedupe] {
			hs, collapsed = collapseDuplicates(hs)
		}
		if !q.off[HeuristicPresent] && !q.off[HeuristicRecency] && len(q.windows) == 0 && presentQuery(q.Query) {
			presentOrder(hs, q, r.cfg.RecencyHalfLife)
		}
		if r.rr != nil && !q.SkipRerank {
			rerankNote = r.rerank(ctx, q.Query, hs)
		}
		if q.Diversity > 0 {
			diversify(hs, q.Diversity, r.cfg.Scale)
		}
		hs, used, dropped = r.fitBudget(hs, q.MaxTokens)
		resp.Results = make([]Result, len(hs))
		for i := range hs {
			resp.Results[i] = hs[i].Result
		}
		resp.Entities = entityRefs(hs)
		scoreDur = time.Since(t1)
	}
	if q.Trace {
		t := &Trace{Budget: q.Budget, Fusion: q.Fusion, EmbedMS: ms(q.embedDur), Arms: traces,
			Fused: len(fs), Dropped: dropped, Collapsed: collapsed, Tokenizer: r.tok.Name(), TokensUsed: used,
			ArmsMS: ms(armsDone.Sub(start)), HydrateMS: ms(hydrateDur), ScoreMS: ms(scoreDur), Rerank: rerankNote}
		for _, w := range q.windows {
			t.Windows = append(t.Windows, Window{Text: w.Text, Start: w.Start, End: w.End})
		}
		t.TotalMS = ms(time.Since(start))
		resp.Trace = t
	}
	return resp, used, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
