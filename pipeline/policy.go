package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/event"
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
	ttl     time.Duration
	mu      sync.Mutex
	entries map[string]cachedPolicy
}

type cachedPolicy struct {
	p       defense.Policy
	expires time.Time
}

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
	return &CachedPolicies{loader: deps.Loader, base: cfg.Base, ttl: cfg.TTL, entries: map[string]cachedPolicy{}}, nil
}

// Policy returns the effective policy of a bank. A stored policy that does
// not parse is an *event.Error of class blocked_by_policy: the bank's
// events go to the dead-letter topic until it is fixed, since guessing a
// policy could store what the bank meant to block.
func (c *CachedPolicies) Policy(ctx context.Context, bankID string) (defense.Policy, error) {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.entries[bankID]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.p, nil
	}
	raw, err := c.loader.BankPolicy(ctx, bankID)
	if err != nil {
		return c.base, err
	}
	p, err := defense.MergePolicy(c.base, raw)
	if err != nil {
		return c.base, event.Errorf(event.ClassBlockedByPolicy, "defense", "bank %s has an invalid defense policy: %v", bankID, err)
	}
	c.mu.Lock()
	c.entries[bankID] = cachedPolicy{p: p, expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return p, nil
}

// Invalidate drops a bank's cached policy after an edit.
func (c *CachedPolicies) Invalidate(bankID string) {
	c.mu.Lock()
	delete(c.entries, bankID)
	c.mu.Unlock()
}
