package llm_test

import (
	"context"
	"testing"
	"time"

	"github.com/memstream/memstream/llm"
	"github.com/memstream/memstream/priority"
)

// The extractor's calls hold slots of the shared LLM gate: with one of
// two slots held by background work (consolidation), extraction runs one
// call at a time whatever its own concurrency.
func TestCallsHoldTheSharedGate(t *testing.T) {
	t.Parallel()
	f := newFake(t, valid(t))
	f.delay = 20 * time.Millisecond
	g, err := priority.NewGate(priority.GateDeps{}, priority.GateConfig{Name: "llm", Slots: 2})
	if err != nil {
		t.Fatal(err)
	}
	release, err := g.Acquire(priority.WithClass(context.Background(), priority.Background))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	e, _ := newGatedExtractor(t, f, g, llm.Config{ChunksPerCall: 1, Concurrency: 4})
	in := inputs(6)
	out, err := e.Extract(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkLLMFacts(t, in, out)
	if got := f.numCalls(); got != 6 {
		t.Errorf("calls = %d, want 6", got)
	}
	if m := f.maxIn.Load(); m != 1 {
		t.Errorf("max in-flight calls = %d, want 1 (the gate's free slot)", m)
	}
	if n := g.InUse(); n != 1 {
		t.Errorf("gate slots in use after the extraction: %d, want the background one", n)
	}
}
