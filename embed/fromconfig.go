package embed

import (
	"fmt"

	"github.com/memstream/memstream/config"
)

// FromConfig builds the embedder the embed section of the configuration
// names (local, hash or openai), behind a cache of embed.cache_size texts
// when that is set. Every command that embeds builds it here, so serve,
// eval, bench and a defense rescan embed alike.
func FromConfig(c config.Embed) (Embedder, error) {
	var inner Embedder
	switch c.Provider {
	case "openai":
		o, err := NewOpenAI(OpenAIDeps{}, OpenAIConfig{BaseURL: c.BaseURL, APIKey: c.APIKey,
			Model: c.ModelName(), Dim: c.Dim, BatchSize: c.BatchSize,
			Prefixes: prefixesOf(c, Prefixes{}), SendInputType: c.SendInputType})
		if err != nil {
			return nil, fmt.Errorf("embed: %w", err)
		}
		inner = o
	case "local":
		l, err := localModelOf(c)
		if err != nil {
			return nil, err
		}
		if l.Dim() != c.Dim {
			return nil, fmt.Errorf("embed.dim: the local model %s makes %d dimensions, configuration says %d", c.ModelName(), l.Dim(), c.Dim)
		}
		inner = l
	default:
		l, err := NewHash(c.Dim)
		if err != nil {
			return nil, fmt.Errorf("embed.dim: %w", err)
		}
		inner = l
	}
	if c.CacheSize == 0 {
		return inner, nil
	}
	return NewCached(CachedDeps{Inner: inner}, CachedConfig{Size: c.CacheSize})
}

// localModelOf loads the local model embed.model names.
func localModelOf(c config.Embed) (Embedder, error) {
	use, err := NewLocal(LocalConfig{ModelDir: c.ModelDir, Threads: c.Threads, Prefixes: prefixesOf(c, Prefixes{})})
	if err != nil {
		return nil, err
	}
	switch name := c.ModelName(); name {
	case LocalModelName:
		return use, nil
	case config.JoinedLocalModel:
		m, err := NewMiniLM(MiniLMConfig{ModelDir: c.ModelDir, Threads: c.Threads, Prefixes: prefixesOf(c, Prefixes{})})
		if err != nil {
			return nil, err
		}
		return NewConcat(name, use, m)
	default:
		return nil, fmt.Errorf("embed.model: the local provider has no model %q", name)
	}
}

// prefixesOf resolves embed.query_prefix and embed.document_prefix
// against the provider's defaults.
func prefixesOf(c config.Embed, def Prefixes) Prefixes {
	p := def
	if c.QueryPrefix != config.PrefixAuto {
		p.Query = c.QueryPrefix
	}
	if c.DocumentPrefix != config.PrefixAuto {
		p.Document = c.DocumentPrefix
	}
	return p
}

// Key names the embedder a similarity scale belongs to, and the one whose
// vectors a database holds (memstream_meta embed_model): provider, model
// and dimension.
func Key(c config.Embed) string {
	return fmt.Sprintf("%s/%s/%d", c.Provider, c.ModelName(), c.Dim)
}
