package embed

import (
	"strings"
	"testing"

	"github.com/memstream/memstream/config"
)

func TestFromConfigFollowsProvider(t *testing.T) {
	if d := config.LocalModels[LocalModelName]; d != LocalDim {
		t.Fatalf("config.LocalModels[%s] = %d, embed.LocalDim %d: keep them equal", LocalModelName, d, LocalDim)
	}
	if config.USELocalModel != LocalModelName {
		t.Fatalf("config.USELocalModel %q, embed.LocalModelName %q: keep them equal", config.USELocalModel, LocalModelName)
	}
	if d := config.LocalModels[config.JoinedLocalModel]; d != LocalDim+MiniLMDim || config.DefaultLocalModel != config.JoinedLocalModel || config.LocalModelDim != LocalDim+MiniLMDim {
		t.Fatalf("config.LocalModels[%s] = %d, default %s at %d; want %d, the joined model at its size", config.JoinedLocalModel, d,
			config.DefaultLocalModel, config.LocalModelDim, LocalDim+MiniLMDim)
	}
	cfg := config.Default()
	cfg.Embed.Provider, cfg.Embed.Dim, cfg.Embed.CacheSize = "hash", 64, 0
	e, err := FromConfig(cfg.Embed)
	if _, ok := e.(*Hash); err != nil || !ok {
		t.Fatalf("hash provider gave %T, %v", e, err)
	}

	// A missing local model stops start-up naming the command that
	// installs it, as a missing PostgreSQL does.
	cfg.Embed.Provider, cfg.Embed.Dim, cfg.Embed.ModelDir = "local", config.LocalModelDim, t.TempDir()
	if _, err := FromConfig(cfg.Embed); err == nil || !strings.Contains(err.Error(), "make deps") || !strings.Contains(err.Error(), "model_dir") {
		t.Fatalf("missing model: err %v, want one naming model_dir and make deps", err)
	}

	cfg.Embed.Provider, cfg.Embed.BaseURL, cfg.Embed.QueryPrefix = "openai", "http://127.0.0.1:1/v1", "query: "
	cfg.Embed.CacheSize = 10
	e, err = FromConfig(cfg.Embed)
	if _, ok := e.(*Cached); err != nil || !ok {
		t.Fatalf("openai provider with a cache gave %T, %v", e, err)
	}
	if p := prefixesOf(cfg.Embed, Prefixes{Document: "passage: "}); p.Query != "query: " || p.Document != "passage: " {
		t.Errorf("prefixes = %+v: an explicit prefix wins, auto keeps the provider's", p)
	}
}
