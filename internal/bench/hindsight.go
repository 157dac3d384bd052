package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/pgserver"
)

// HindsightConfig is how one Hindsight server (hindsight-api-slim 1.1.0) is
// started, with a PostgreSQL of its own: `bench compare` starts one beside
// memstream, `eval run --target hindsight` one to ask its questions of.
type HindsightConfig struct {
	// Bin is hindsight-api from a virtualenv with hindsight-api-slim 1.1.0
	// (scripts/bench-hindsight.sh installs it).
	Bin string
	// WorkDir holds its PostgreSQL data directory and its log
	// (hindsight.log).
	WorkDir string
	// EmbedURL is the OpenAI-compatible …/v1 it embeds through, with Dim
	// dimensions.
	EmbedURL string
	Dim      int
	// LLMURL is the OpenAI-compatible …/v1 it extracts and consolidates
	// with (strict schemas); empty runs its no-LLM chunks mode
	// (HINDSIGHT_API_LLM_PROVIDER=none: every chunk of a retained item is
	// stored as it is, nothing is consolidated).
	LLMURL string
}

// launchHindsight starts Hindsight's PostgreSQL and Hindsight, and waits
// until it answers /health.
func launchHindsight(ctx context.Context, cfg HindsightConfig, log *slog.Logger) (*system, error) {
	s := &system{name: "hindsight", consolidates: cfg.LLMURL != ""}
	var err error
	if s.pg, err = startPG(ctx, filepath.Join(cfg.WorkDir, "hindsight-pg"), log); err != nil {
		return nil, err
	}
	s.dbURL = s.pg.URL()
	port, err := pgserver.FreePort()
	if err != nil {
		s.stop()
		return nil, err
	}
	s.base = "http://127.0.0.1:" + strconv.Itoa(port)
	s.cmd = exec.CommandContext(ctx, cfg.Bin)
	s.cmd.Env = append(os.Environ(), "HINDSIGHT_API_DATABASE_URL="+strings.Replace(s.dbURL, "postgres://", "postgresql://", 1),
		"HINDSIGHT_API_EMBEDDINGS_PROVIDER=openai", "HINDSIGHT_API_EMBEDDINGS_OPENAI_BASE_URL="+cfg.EmbedURL,
		"HINDSIGHT_API_EMBEDDINGS_OPENAI_API_KEY=fake", "HINDSIGHT_API_EMBEDDINGS_OPENAI_MODEL=text-embedding-3-small",
		"HINDSIGHT_API_EMBEDDINGS_OPENAI_DIMENSIONS="+strconv.Itoa(cfg.Dim), "HINDSIGHT_API_RERANKER_PROVIDER=rrf",
		"HINDSIGHT_API_HOST=127.0.0.1", "HINDSIGHT_API_PORT="+strconv.Itoa(port))
	if cfg.LLMURL != "" {
		s.cmd.Env = append(s.cmd.Env, "HINDSIGHT_API_LLM_PROVIDER=openai", "HINDSIGHT_API_LLM_BASE_URL="+cfg.LLMURL,
			"HINDSIGHT_API_LLM_API_KEY=fake", "HINDSIGHT_API_LLM_MODEL=gpt-4o-mini", "HINDSIGHT_API_LLM_STRICT_SCHEMA=true")
	} else {
		s.cmd.Env = append(s.cmd.Env, "HINDSIGHT_API_LLM_PROVIDER=none")
	}
	logf, err := os.Create(filepath.Join(cfg.WorkDir, "hindsight.log"))
	if err != nil {
		s.stop()
		return nil, err
	}
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		s.cmd = nil
		s.stop()
		return nil, fmt.Errorf("start hindsight: %w", err)
	}
	if err := waitHealthy(ctx, s.base, 5*time.Minute); err != nil {
		s.stop()
		return nil, fmt.Errorf("hindsight (log %s): %w", logf.Name(), err)
	}
	return s, nil
}

// HindsightStackDeps are what a HindsightStack embeds with and logs to.
type HindsightStackDeps struct {
	// Embedder answers Hindsight's embedding requests: the embedder
	// memstream is configured with, so both systems search the same
	// vectors.
	Embedder embed.Embedder
	Logger   *slog.Logger
}

// HindsightStack is Hindsight in its chunks mode with a PostgreSQL of its
// own, embedding through an in-process OpenAI-compatible server that
// answers with HindsightStackDeps.Embedder.
type HindsightStack struct {
	sys  *system
	fake *httptest.Server
}

// StartHindsightStack starts the embeddings server and Hindsight in
// cfg.WorkDir (cfg.EmbedURL, Dim and LLMURL are set here).
func StartHindsightStack(ctx context.Context, deps HindsightStackDeps, cfg HindsightConfig) (*HindsightStack, error) {
	if deps.Embedder == nil {
		return nil, errors.New("bench: HindsightStackDeps.Embedder is nil")
	}
	if cfg.Bin == "" {
		return nil, errors.New("bench: HindsightConfig.Bin is empty (scripts/bench-hindsight.sh installs hindsight-api)")
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.WorkDir, 0o711); err != nil {
		return nil, err
	}
	fake := httptest.NewServer(NewFakeOpenAIWith(deps.Embedder, 0))
	cfg.EmbedURL, cfg.Dim, cfg.LLMURL = fake.URL+"/v1", deps.Embedder.Dim(), ""
	sys, err := launchHindsight(ctx, cfg, log)
	if err != nil {
		fake.Close()
		return nil, err
	}
	return &HindsightStack{sys: sys, fake: fake}, nil
}

// URL is Hindsight's HTTP API.
func (h *HindsightStack) URL() string { return h.sys.base }

// Stop stops Hindsight, its PostgreSQL and the embeddings server.
func (h *HindsightStack) Stop() {
	h.sys.stop()
	h.fake.Close()
}
