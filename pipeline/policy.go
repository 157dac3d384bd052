package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/internal/ttlcache"
)

// PolicyLoader reads a bank's stored defense policy JSON.
type PolicyLoader interface {
	BankPolicy(ctx context.Context, bankID string) (json.RawMessage, error)
}

// CachedPolicies serves bank policies from a short-lived cache so the
// prepare stage does not query Postgres per record. A policy edit takes
// effect within TTL.
type CachedPolicies struct {
	loader  PolicyLoader
	base    defense.Policy
	entries *ttlcache.Cache[defense.Policy]
}

// policyBanks bounds how many banks' policies are cached; past it the
// least recently used bank's policy is read again when needed.
const policyBanks = 4096

// PolicyDeps are where CachedPolicies reads banks' policies.
type PolicyDeps struct {
	Loader PolicyLoader
}

// PolicyConfig is the policy of banks without one and how long a bank's
// policy is cached.
type PolicyConfig struct {
	// Base is used for banks that have no policy of their own; a bank's
	// stored policy is overlaid on it.
	Base defense.Policy
	// TTL is how long a bank's effective policy is served from the cache.
	TTL time.Duration
}

// NewCachedPolicies serves deps.Loader's policies overlaid on cfg.Base.
func NewCachedPolicies(deps PolicyDeps, cfg PolicyConfig) (*CachedPolicies, error) {
	if deps.Loader == nil {
		return nil, fmt.Errorf("pipeline: cached policies: nil loader")
	}
	entries, err := ttlcache.New[defense.Policy](policyBanks, cfg.TTL)
	if err != nil {
		return nil, fmt.Errorf("pipeline: cached policies: %w", err)
	}
	return &CachedPolicies{loader: deps.Loader, base: cfg.Base, entries: entries}, nil
}

// Policy returns the effective policy of a bank. A stored policy that does
// not parse is an *event.Error of class blocked_by_policy: the bank's
// events go to the dead-letter topic until it is fixed, since guessing a
// policy could store what the bank meant to block.
func (c *CachedPolicies) Policy(ctx context.Context, bankID string) (defense.Policy, error) {
	if p, ok := c.entries.Get(bankID); ok {
		return p, nil
	}
	raw, err := c.loader.BankPolicy(ctx, bankID)
	if err != nil {
		return c.base, err
	}
	p, err := defense.MergePolicy(c.base, raw)
	if err != nil {
		return c.base, event.Errorf(event.ClassBlockedByPolicy, "defense", "bank %s has an invalid defense policy: %v", bankID, err)
	}
	c.entries.Add(bankID, p)
	return p, nil
}

// Invalidate drops a bank's cached policy after an edit.
func (c *CachedPolicies) Invalidate(bankID string) {
	c.entries.Remove(bankID)
}
