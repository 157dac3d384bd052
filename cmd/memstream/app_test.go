package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/extract"
	"github.com/memstream/memstream/llm"
)

func TestNewExtractorFollowsProvider(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := config.Default()
	ex, err := newExtractor(cfg, nil, nil, prometheus.NewRegistry(), log)
	if _, ok := ex.(*extract.Offline); err != nil || !ok {
		t.Fatalf("offline provider gave %T, %v", ex, err)
	}
	cfg.LLM.Provider, cfg.LLM.BaseURL = "openai", "http://127.0.0.1:1/v1"
	ex, err = newExtractor(cfg, nil, nil, prometheus.NewRegistry(), log)
	if _, ok := ex.(*llm.Extractor); err != nil || !ok {
		t.Fatalf("openai provider gave %T, %v", ex, err)
	}
	if _, err := config.ParseRoles("ingest,api"); err != nil {
		t.Fatal(err)
	}
}

func TestNewEmbedderFollowsProvider(t *testing.T) {
	if config.LocalModelDim != embed.LocalDim {
		t.Fatalf("config.LocalModelDim %d, embed.LocalDim %d: keep them equal", config.LocalModelDim, embed.LocalDim)
	}
	cfg := config.Default()
	cfg.Embed.Provider, cfg.Embed.Dim, cfg.Embed.CacheSize = "hash", 64, 0
	e, err := newEmbedder(cfg)
	if _, ok := e.(*embed.Hash); err != nil || !ok {
		t.Fatalf("hash provider gave %T, %v", e, err)
	}

	// A missing local model stops start-up naming the command that
	// installs it, as a missing PostgreSQL does.
	cfg.Embed.Provider, cfg.Embed.Dim, cfg.Embed.ModelDir = "local", embed.LocalDim, t.TempDir()
	if _, err := newEmbedder(cfg); err == nil || !strings.Contains(err.Error(), "make deps") || !strings.Contains(err.Error(), "embed.model_dir") {
		t.Fatalf("missing model: err %v, want one naming embed.model_dir and make deps", err)
	}

	cfg.Embed.Provider, cfg.Embed.BaseURL, cfg.Embed.QueryPrefix = "openai", "http://127.0.0.1:1/v1", "query: "
	cfg.Embed.CacheSize = 10
	e, err = newEmbedder(cfg)
	if _, ok := e.(*embed.Cached); err != nil || !ok {
		t.Fatalf("openai provider with a cache gave %T, %v", e, err)
	}
	if p := prefixes(cfg.Embed, embed.Prefixes{Document: "passage: "}); p.Query != "query: " || p.Document != "passage: " {
		t.Errorf("prefixes = %+v: an explicit prefix wins, auto keeps the provider's", p)
	}
}
