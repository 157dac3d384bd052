package consolidate

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/memstream/memstream/simscale"
	"github.com/memstream/memstream/store"
)

func TestIndependentChains(t *testing.T) {
	t.Parallel()
	unit := func(k int) []float32 {
		v := make([]float32, 8)
		v[k] = 1
		return v
	}
	shared := uuid.New()
	cand := func(ids ...uuid.UUID) store.CandidateLists {
		var l store.CandidateLists
		for _, id := range ids {
			l.Semantic = append(l.Semantic, store.ObservationCandidate{ID: id})
		}
		return l
	}
	facts := []store.PendingFact{
		{Embedding: unit(0)}, // 0: like 2
		{Embedding: unit(1)}, // 1: alone
		{Embedding: unit(0)}, // 2
		{Embedding: unit(2)}, // 3: alone
		{Embedding: unit(3)}, // 4: shares a top candidate with 6
		{State: "invalidated"},
		{Embedding: unit(4)}, // 6
		{Embedding: unit(5)}, // 7: same slot as 8
		{Embedding: unit(6)}, // 8
	}
	valid := []int{0, 1, 2, 3, 4, 6, 7, 8}
	qi := []int{0, 1, 2, 3, 4, -1, 5, 6, 7}
	slots := []string{"", "", "", "", "", "", "alice|city", "alice|city"}
	lists := []store.CandidateLists{cand(), cand(), cand(), cand(), cand(shared), cand(uuid.New(), shared), cand(), cand()}
	scale := simscale.Scale{Unrelated: 0.05, Related: 0.6}
	got := independentChains(facts, valid, qi, slots, lists, scale, 2)
	want := [][]int{{0, 2}, {1, 3}, {4, 6}, {7, 8}}
	if !slices.EqualFunc(got, want, slices.Equal[[]int]) {
		t.Fatalf("chains %v, want %v", got, want)
	}
	// Larger calls take several independent groups.
	got = independentChains(facts, valid, qi, slots, lists, scale, 4)
	want = [][]int{{0, 2, 1, 3}, {4, 6, 7, 8}}
	if !slices.EqualFunc(got, want, slices.Equal[[]int]) {
		t.Fatalf("chains of 4: %v, want %v", got, want)
	}
}

func TestForEachLimit(t *testing.T) {
	t.Parallel()
	var inflight, peak, calls atomic.Int32
	release := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- forEachLimit(context.Background(), 10, 3, func(ctx context.Context, i int) error {
			calls.Add(1)
			n := inflight.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			<-release
			inflight.Add(-1)
			return nil
		})
	}()
	for inflight.Load() < 3 {
		// Three calls start before any ends; a fourth must not.
		runtime.Gosched()
	}
	if calls.Load() != 3 {
		t.Fatalf("%d calls started with a limit of 3", calls.Load())
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 10 || peak.Load() != 3 {
		t.Fatalf("calls %d, peak in flight %d", calls.Load(), peak.Load())
	}
	boom := errors.New("boom")
	err := forEachLimit(context.Background(), 10, 2, func(ctx context.Context, i int) error {
		if i == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v", err)
	}
}
