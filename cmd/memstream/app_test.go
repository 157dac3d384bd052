package main

import (
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memstream/memstream/config"
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
