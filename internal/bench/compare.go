package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/memstream/memstream/pgserver"
	"github.com/memstream/memstream/store"
)

// CompareConfig is what `memstream bench compare` runs: memstream and
// Hindsight side by side on one machine, each with a PostgreSQL of its
// own, both embedding through one fake OpenAI-compatible server, fed the
// same events through the same REST route (Hindsight's retain, which
// memstream serves too), in interleaved rounds.
type CompareConfig struct {
	// MemstreamBin is the memstream binary to serve with; HindsightBin
	// hindsight-api from a virtualenv with hindsight-api-slim 1.1.0.
	MemstreamBin, HindsightBin string
	Events, Banks, Queries     int
	Rounds                     int
	Seed                       uint64
	Dim                        int
	// WorkDir holds the servers' data; it is removed afterwards.
	WorkDir string
	// Timeout bounds each wait (queryable, consolidated).
	Timeout time.Duration
	// MemstreamMaxTokens is the max_tokens of memstream's timed recalls
	// (Hindsight's: HindsightMaxTokens); below 4096 it brings memstream's result count
	// down to Hindsight's, so both answer with as many results. 0 means
	// 4096.
	MemstreamMaxTokens int
	// HindsightMaxTokens is the same for Hindsight's timed recalls (0
	// means 4096): in the LLM mode Hindsight returns facts and
	// observations, more of them than memstream at 4096, so equal counts
	// need Hindsight's budget lowered.
	HindsightMaxTokens int
	// Profile adds, after each memstream side, a line saying where its
	// time went (SideProfile).
	Profile bool
	// SkipHindsight runs memstream alone (for profiling).
	SkipHindsight bool
	// MemstreamEnv are extra KEY=VALUE settings for memstream serve, after
	// the bench's own (they win).
	MemstreamEnv []string
	// LLM is "none" (Hindsight's chunks mode, memstream's offline
	// extractor and adjudicator) or "fake": both systems extract and
	// consolidate through the fake's LLM (Hindsight with
	// HINDSIGHT_API_LLM_PROVIDER=openai and strict schemas, memstream with
	// llm.provider openai), so they do comparable work.
	LLM string
	// LLMLatency delays every chat answer of the fake (a remote model's
	// latency), the same for both systems.
	LLMLatency time.Duration

	fakeURL string
	fake    *FakeOpenAI
}

// llmFake reports whether the bench runs in its fake-LLM mode.
func (c CompareConfig) llmFake() bool { return c.LLM == "fake" }

// CompareSide is one system's numbers in one round.
type CompareSide struct {
	System string `json:"system"`
	Round  int    `json:"round"`
	// QueryableS is from the first retain sent until every bank's last
	// event is found by recall.
	QueryableS float64 `json:"time_to_queryable_s"`
	// ConsolidatedS is until the bank stats report no pending
	// consolidation and no pending operation; 0 when it did not happen
	// within the timeout, or the system does not consolidate in this mode
	// (Hindsight without an LLM).
	ConsolidatedS float64 `json:"time_to_consolidated_s"`
	// Facts and Observations are what the banks hold afterwards (bank
	// stats: nodes other than observations, and observations).
	Facts        int `json:"facts"`
	Observations int `json:"observations"`
	// LLMCalls, FreeCalls, EmbedCalls and Unanswered are this side's
	// requests to the fake: chat completions answered (FreeCalls of them
	// free text), embedding requests, and calls the fake could not answer.
	LLMCalls    int64   `json:"llm_calls"`
	FreeCalls   int64   `json:"llm_free_text_calls"`
	EmbedCalls  int64   `json:"embed_requests"`
	Unanswered  int64   `json:"llm_unanswered"`
	RecallP50MS float64 `json:"recall_p50_ms"`
	RecallP95MS float64 `json:"recall_p95_ms"`
	RecallP99MS float64 `json:"recall_p99_ms"`
	MeanResults float64 `json:"mean_results"`
	// MaxTokens is the max_tokens the timed recalls asked with.
	MaxTokens int     `json:"max_tokens"`
	RSSMB     float64 `json:"rss_mb"`
	DBSizeMB  float64 `json:"db_size_mb"`
	LoadAvg   string  `json:"loadavg_1m"`
}

type system struct {
	name         string
	consolidates bool
	base         string // http://host:port
	cmd          *exec.Cmd
	pg           *pgserver.Server
	dbURL        string
}

// RunCompare runs the side-by-side benchmark and prints one JSON line per
// system and round, then one with the ratios of the medians.
func RunCompare(ctx context.Context, cfg CompareConfig, stdout, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	progress := func(f string, a ...any) {
		fmt.Fprintf(stderr, "%s bench compare: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(f, a...))
	}
	if err := os.MkdirAll(cfg.WorkDir, 0o711); err != nil {
		return err
	}
	fake, err := NewFakeOpenAI(cfg.Dim, 0)
	if err != nil {
		return err
	}
	fake.SetChatLatency(cfg.LLMLatency)
	fake.SetLog(stderr)
	fsrv := httptest.NewServer(fake)
	defer fsrv.Close()

	cfg.fakeURL, cfg.fake = fsrv.URL+"/v1", fake
	// Each system has its own path before /v1, so the fake counts apart.
	ms, err := startMemstream(ctx, cfg, fsrv.URL+"/memstream/v1", log)
	if err != nil {
		return err
	}
	defer ms.stop()
	hs := &system{name: "hindsight"}
	if !cfg.SkipHindsight {
		if hs, err = startHindsight(ctx, cfg, fsrv.URL+"/hindsight/v1", log); err != nil {
			return err
		}
		defer hs.stop()
	}
	progress("memstream on %s, hindsight on %s, fake OpenAI on %s (llm %s, chat latency %s)", ms.base, hs.base, fsrv.URL, cfg.LLM, cfg.LLMLatency)

	var all []CompareSide
	for round := range cfg.Rounds {
		order := []*system{ms, hs}
		if round%2 == 1 {
			order = []*system{hs, ms}
		}
		for _, s := range order {
			if s.cmd == nil {
				continue // skipped
			}
			side, prof, err := runSide(ctx, cfg, s, round, progress)
			if err != nil {
				return fmt.Errorf("%s round %d: %w", s.name, round, err)
			}
			b, _ := json.Marshal(side)
			fmt.Fprintln(stdout, string(b))
			if prof != nil {
				b, _ := json.Marshal(prof)
				fmt.Fprintln(stdout, string(b))
			}
			all = append(all, side)
		}
	}
	med := func(sys string, f func(CompareSide) float64) float64 {
		var xs []float64
		for _, s := range all {
			if s.System == sys {
				xs = append(xs, f(s))
			}
		}
		slices.Sort(xs)
		switch n := len(xs); {
		case n == 0:
			return 0
		case n%2 == 0:
			return (xs[n/2-1] + xs[n/2]) / 2
		default:
			return xs[n/2]
		}
	}
	ratio := func(f func(CompareSide) float64) float64 {
		m := med("memstream", f)
		if m == 0 {
			return 0
		}
		return med("hindsight", f) / m
	}
	summary := map[string]any{"bench": "compare", "rounds": cfg.Rounds, "events": cfg.Events, "banks": cfg.Banks,
		"llm": cfg.LLM, "llm_latency_ms": cfg.LLMLatency.Milliseconds(),
		"ratio_time_to_queryable":    ratio(func(s CompareSide) float64 { return s.QueryableS }),
		"ratio_time_to_consolidated": ratio(func(s CompareSide) float64 { return s.ConsolidatedS }),
		"ratio_recall_p50":           ratio(func(s CompareSide) float64 { return s.RecallP50MS }),
		"ratio_recall_p95":           ratio(func(s CompareSide) float64 { return s.RecallP95MS }),
		"ratio_recall_p99":           ratio(func(s CompareSide) float64 { return s.RecallP99MS }),
		"ratio_rss":                  ratio(func(s CompareSide) float64 { return s.RSSMB }),
		"ratio_db_size":              ratio(func(s CompareSide) float64 { return s.DBSizeMB }),
		"facts":                      map[string]float64{"memstream": med("memstream", func(s CompareSide) float64 { return float64(s.Facts) }), "hindsight": med("hindsight", func(s CompareSide) float64 { return float64(s.Facts) })},
		"observations":               map[string]float64{"memstream": med("memstream", func(s CompareSide) float64 { return float64(s.Observations) }), "hindsight": med("hindsight", func(s CompareSide) float64 { return float64(s.Observations) })},
		"llm_calls":                  map[string]float64{"memstream": med("memstream", func(s CompareSide) float64 { return float64(s.LLMCalls) }), "hindsight": med("hindsight", func(s CompareSide) float64 { return float64(s.LLMCalls) })},
		"llm_unanswered":             cfg.fake.Calls("/memstream").Unanswered.Load() + cfg.fake.Calls("/hindsight").Unanswered.Load(),
		"note":                       "ratios are hindsight / memstream of the per-round medians; above 1 memstream is ahead (smaller)",
	}
	b, _ := json.Marshal(summary)
	fmt.Fprintln(stdout, string(b))
	return nil
}

func (s *system) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Kill()
		}
	}
	if s.pg != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = s.pg.Stop(ctx)
		cancel()
	}
}

func startPG(ctx context.Context, dir string, log *slog.Logger) (*pgserver.Server, error) {
	port, err := pgserver.FreePort()
	if err != nil {
		return nil, err
	}
	return pgserver.Start(ctx, pgserver.Deps{Logger: log}, pgserver.Config{DataDir: dir, Port: port})
}

func waitHealthy(ctx context.Context, base string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s/health not ready after %s", base, timeout)
}

func startMemstream(ctx context.Context, cfg CompareConfig, fakeURL string, log *slog.Logger) (*system, error) {
	s := &system{name: "memstream", consolidates: true}
	var err error
	if s.pg, err = startPG(ctx, filepath.Join(cfg.WorkDir, "memstream-pg"), log); err != nil {
		return nil, err
	}
	s.dbURL = s.pg.URL()
	httpPort, err := pgserver.FreePort()
	if err != nil {
		return nil, err
	}
	kafkaPort, err := pgserver.FreePort()
	if err != nil {
		return nil, err
	}
	s.base = "http://127.0.0.1:" + strconv.Itoa(httpPort)
	s.cmd = exec.CommandContext(ctx, cfg.MemstreamBin, "serve")
	s.cmd.Env = append(os.Environ(), "MEMSTREAM_DATABASE_URL="+s.dbURL, "MEMSTREAM_DATA_DIR="+filepath.Join(cfg.WorkDir, "memstream-data"),
		"MEMSTREAM_HTTP_ADDR=127.0.0.1:"+strconv.Itoa(httpPort), "MEMSTREAM_KAFKA_EMBEDDED_ADDR=127.0.0.1:"+strconv.Itoa(kafkaPort),
		"MEMSTREAM_EMBED_PROVIDER=openai", "MEMSTREAM_EMBED_BASE_URL="+fakeURL, "MEMSTREAM_EMBED_MODEL=text-embedding-3-small",
		"MEMSTREAM_EMBED_DIM="+strconv.Itoa(cfg.Dim), "MEMSTREAM_LOG_LEVEL=warn")
	if cfg.llmFake() {
		s.cmd.Env = append(s.cmd.Env, "MEMSTREAM_LLM_PROVIDER=openai", "MEMSTREAM_LLM_BASE_URL="+fakeURL,
			"MEMSTREAM_LLM_API_KEY=fake", "MEMSTREAM_LLM_MODEL=gpt-4o-mini")
	} else {
		s.cmd.Env = append(s.cmd.Env, "MEMSTREAM_LLM_PROVIDER=offline")
	}
	s.cmd.Env = append(s.cmd.Env, cfg.MemstreamEnv...)
	logf, err := os.Create(filepath.Join(cfg.WorkDir, "memstream.log"))
	if err != nil {
		return nil, err
	}
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start memstream: %w", err)
	}
	return s, waitHealthy(ctx, s.base, 3*time.Minute)
}

func startHindsight(ctx context.Context, cfg CompareConfig, fakeURL string, log *slog.Logger) (*system, error) {
	hc := HindsightConfig{Bin: cfg.HindsightBin, WorkDir: cfg.WorkDir, EmbedURL: fakeURL, Dim: cfg.Dim}
	if cfg.llmFake() {
		hc.LLMURL = fakeURL
	}
	return launchHindsight(ctx, hc, log)
}

// compareEvent is one retain item and the bank it goes to.
type compareEvent struct {
	bank, content, doc, at string
}

func compareEvents(cfg CompareConfig, round int, sys string) ([]compareEvent, map[string]string) {
	evs := genEvents(cfg.Events, cfg.Banks, cfg.Seed, "", time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC))
	out := make([]compareEvent, 0, len(evs))
	last := map[string]string{}
	for i, ev := range evs {
		var e struct {
			Messages []struct{ Role, Name, Content, Timestamp string } `json:"messages"`
		}
		_ = json.Unmarshal(ev.value, &e)
		var b strings.Builder
		for _, m := range e.Messages {
			who := m.Name
			if who == "" {
				who = m.Role
			}
			fmt.Fprintf(&b, "%s: %s\n", who, m.Content)
		}
		bank := fmt.Sprintf("cmp-%s-r%d-%s", sys, round, ev.bank)
		token := fmt.Sprintf("ticket%dx%d", round, i)
		content := b.String() + "Reference " + token + "."
		last[bank] = token
		at := ""
		if len(e.Messages) > 0 {
			at = e.Messages[0].Timestamp
		}
		out = append(out, compareEvent{bank: bank, content: content, doc: fmt.Sprintf("doc-%d", i), at: at})
	}
	return out, last
}

func postJSON(ctx context.Context, url string, body any, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

type recallResp struct {
	Results []struct {
		Text string `json:"text"`
	} `json:"results"`
}

func runSide(ctx context.Context, cfg CompareConfig, s *system, round int, progress func(string, ...any)) (CompareSide, *SideProfile, error) {
	side := CompareSide{System: s.name, Round: round, LoadAvg: loadAvg()}
	evs, last := compareEvents(cfg, round, s.name)
	progress("%s round %d: retaining %d events into %d banks", s.name, round, len(evs), len(last))
	var prof *SideProfile
	var before map[string]statSum
	var samp *sampler
	if cfg.Profile && s.name == "memstream" {
		var err error
		if before, err = scrape(ctx, s.base); err != nil {
			return side, nil, fmt.Errorf("profile: %w", err)
		}
		prof = &SideProfile{System: s.name, Round: round, SampleMS: 100}
	}
	c := cfg.fake.Calls("/" + s.name)
	calls0 := struct{ chat, free, embed, unanswered int64 }{c.Chat.Load(), c.Free.Load(), c.Embed.Load(), c.Unanswered.Load()}
	start := time.Now()
	if prof != nil {
		samp = startSampler(ctx, s.base, start, before["memstream_pipeline_records_out_total"].Count, float64(len(evs)))
	}
	// Ten items per request, four requests in flight: the same for both.
	const perReq, inflight = 10, 4
	byBank := map[string][]compareEvent{}
	for _, e := range evs {
		byBank[e.bank] = append(byBank[e.bank], e)
	}
	type batch struct {
		bank  string
		items []map[string]any
	}
	var batches []batch
	for bank, es := range byBank {
		for i := 0; i < len(es); i += perReq {
			var items []map[string]any
			for _, e := range es[i:min(i+perReq, len(es))] {
				items = append(items, map[string]any{"content": e.content, "timestamp": e.at, "document_id": e.doc, "context": "chat"})
			}
			batches = append(batches, batch{bank, items})
		}
	}
	sem := make(chan struct{}, inflight)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for _, b := range batches {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := postJSON(ctx, s.base+"/v1/default/banks/"+b.bank+"/memories", map[string]any{"items": b.items, "async": true}, nil); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return side, nil, firstErr
	}
	if prof != nil {
		prof.RetainsAnsweredS = time.Since(start).Seconds()
	}
	// Queryable: every bank's last event is found by recall.
	deadline := time.Now().Add(cfg.Timeout)
	for bank, token := range last {
		for {
			var r recallResp
			if err := postJSON(ctx, s.base+"/v1/default/banks/"+bank+"/memories/recall", map[string]any{"query": "Reference " + token, "max_tokens": 4096}, &r); err == nil &&
				slices.ContainsFunc(r.Results, func(x struct {
					Text string `json:"text"`
				}) bool {
					return strings.Contains(x.Text, token)
				}) {
				break
			}
			if prof != nil {
				prof.QueryablePolls++
			}
			if ctx.Err() != nil {
				return side, nil, ctx.Err()
			}
			if time.Now().After(deadline) {
				return side, nil, fmt.Errorf("bank %s not queryable after %s", bank, cfg.Timeout)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if prof != nil && prof.FirstBankFoundS == 0 {
			prof.FirstBankFoundS = time.Since(start).Seconds()
		}
	}
	side.QueryableS = time.Since(start).Seconds()
	if prof != nil {
		first, all := samp.finish()
		prof.QueryableS, prof.FirstPersistedS, prof.AllPersistedS = side.QueryableS, first.Seconds(), all.Seconds()
		after, err := scrape(ctx, s.base)
		if err != nil {
			return side, nil, fmt.Errorf("profile: %w", err)
		}
		prof.Stages = delta(before, after, "memstream_pipeline_stage_seconds")
		prof.IngestRoutes = delta(before, after, "memstream_api_request_seconds")
		prof.EndToEnd = delta(before, after, "memstream_pipeline_end_to_end_seconds")[""]
		prof.Commits = 0
		for _, v := range delta(before, after, "memstream_consumer_commits_total") {
			prof.Commits += v.Count
		}
		prof.Consolidate = delta(before, after, "memstream_consolidation_phase_seconds")
	}
	progress("%s round %d: queryable after %.1fs", s.name, round, side.QueryableS)
	// Consolidated: no bank reports pending consolidation or a pending
	// operation (an async retain not yet extracted has nothing pending to
	// consolidate yet). Hindsight without an LLM
	// (HINDSIGHT_API_LLM_PROVIDER=none) stores chunks and never
	// consolidates: its time stays 0 (not measured).
	for s.consolidates && time.Now().Before(deadline) {
		if ctx.Err() != nil {
			return side, nil, ctx.Err()
		}
		if st := bankStats(ctx, s.base, last); st.err == nil && st.pending == 0 {
			side.ConsolidatedS = time.Since(start).Seconds()
			break
		}
		time.Sleep(time.Second)
	}
	if st := bankStats(ctx, s.base, last); st.err == nil {
		side.Facts, side.Observations = st.facts, st.observations
	}
	calls := cfg.fake.Calls("/" + s.name)
	side.LLMCalls, side.FreeCalls = calls.Chat.Load()-calls0.chat, calls.Free.Load()-calls0.free
	side.EmbedCalls, side.Unanswered = calls.Embed.Load()-calls0.embed, calls.Unanswered.Load()-calls0.unanswered
	// Recall latency: the same questions, one client.
	var qs []struct{ bank, q string }
	for i, e := range evs {
		if i%max(1, len(evs)/cfg.Queries) != 0 {
			continue
		}
		sent := Sentences(strings.SplitN(e.content, ": ", 2)[min(1, len(strings.SplitN(e.content, ": ", 2))-1)])
		if len(sent) == 0 {
			continue
		}
		qs = append(qs, struct{ bank, q string }{e.bank, sent[0]})
	}
	maxTokens := 4096
	if s.name == "memstream" && cfg.MemstreamMaxTokens > 0 {
		maxTokens = cfg.MemstreamMaxTokens
	}
	if s.name == "hindsight" && cfg.HindsightMaxTokens > 0 {
		maxTokens = cfg.HindsightMaxTokens
	}
	side.MaxTokens = maxTokens
	var lat []time.Duration
	results := 0
	for _, q := range qs {
		t0 := time.Now()
		var r recallResp
		if err := postJSON(ctx, s.base+"/v1/default/banks/"+q.bank+"/memories/recall", map[string]any{"query": q.q, "max_tokens": maxTokens}, &r); err != nil {
			return side, nil, err
		}
		lat = append(lat, time.Since(t0))
		results += len(r.Results)
	}
	if prof != nil {
		after, err := scrape(ctx, s.base)
		if err != nil {
			return side, nil, fmt.Errorf("profile: %w", err)
		}
		if prof.Trace, err = traceRecalls(ctx, s.base, qs, maxTokens); err != nil {
			return side, nil, fmt.Errorf("profile: %w", err)
		}
		final, err := scrape(ctx, s.base)
		if err != nil {
			return side, nil, fmt.Errorf("profile: %w", err)
		}
		// The traced pass's own route and recall times (same questions).
		prof.RecallRoutes = delta(after, final, "memstream_api_request_seconds")
		for k, v := range delta(after, final, "memstream_recall_arm_seconds") {
			prof.RecallRoutes["arm:"+k] = v
		}
		prof.FakeEmbedP50MS = fakeEmbedP50(ctx, cfg.fakeURL, 100)
	}
	side.RecallP50MS, side.RecallP95MS, side.RecallP99MS = pct(lat, 0.5), pct(lat, 0.95), pct(lat, 0.99)
	if len(qs) > 0 {
		side.MeanResults = float64(results) / float64(len(qs))
	}
	side.RSSMB = treeRSSMB(s.cmd.Process.Pid)
	if n, err := store.DatabaseSize(ctx, s.dbURL); err == nil {
		side.DBSizeMB = float64(n) / (1 << 20)
	}
	return side, prof, nil
}

type sideStats struct {
	pending, facts, observations int
	err                          error
}

// bankStats sums the banks' stats: pending consolidation and operations,
// facts (every node type but observations) and observations.
func bankStats(ctx context.Context, base string, banks map[string]string) sideStats {
	var out sideStats
	for bank := range banks {
		var st struct {
			Pending      int            `json:"pending_consolidation"`
			PendingOps   int            `json:"pending_operations"`
			ByType       map[string]int `json:"nodes_by_fact_type"`
			Observations int            `json:"total_observations"`
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/default/banks/"+bank+"/stats", nil)
		if err != nil {
			return sideStats{err: err}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return sideStats{err: err}
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return sideStats{err: fmt.Errorf("stats of %s: %d %v", bank, resp.StatusCode, err)}
		}
		out.pending += st.Pending + st.PendingOps
		out.observations += st.Observations
		for t, n := range st.ByType {
			if t != "observation" {
				out.facts += n
			}
		}
	}
	return out
}

// treeRSSMB sums VmRSS of a process and its descendants (Hindsight runs a
// worker beside its API server).
func treeRSSMB(pid int) float64 {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 {
			pp, _ := strconv.Atoi(f[1])
			children[pp] = append(children[pp], p)
		}
	}
	var kb int64
	var walk func(int)
	walk = func(p int) {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "status"))
		if err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
					n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
					kb += n
				}
			}
		}
		for _, c := range children[p] {
			walk(c)
		}
	}
	walk(pid)
	return float64(kb) / 1024
}
