package consolidate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/consolidate"
	"github.com/memstream/memstream/llmtrace"
	"github.com/memstream/memstream/store"
)

// TestAdjudicationCallNamesItsFacts consolidates two facts through the
// openai adjudicator under the trace recorder: the call's row names the
// facts it decided (metadata.source_memory_ids) and, read back, the
// observation it created (memory_ids), and the memory_id filter finds it
// by either.
func TestAdjudicationCallNamesItsFacts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	fake := &fakeModel{t: t}
	fake.answer = func(_ int, facts, _ []map[string]any) string {
		return fmt.Sprintf(`{"creates":[{"text":"Erin lives in Oslo","source_fact_ids":[%q,%q],"reason":"residence"}],"updates":[],"deletes":[]}`,
			ref(facts, "lives"), ref(facts, "home"))
	}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	rec, err := llmtrace.New(llmtrace.Deps{Store: e.st}, llmtrace.Config{Provider: "openai", Model: "fake-model", Retention: time.Hour,
		MaxPerBank: 100, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rec.Run(ctx) }()
	adj, err := consolidate.NewOpenAI(consolidate.OpenAIDeps{HTTPClient: &http.Client{Transport: rec.Transport(nil)}},
		consolidate.OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "fake-model", FactsPerCall: 4})
	if err != nil {
		t.Fatal(err)
	}
	w := e.worker(consolidate.Deps{Adjudicator: adj}, consolidate.Config{})
	facts := e.persist("erin", fact{text: "Erin lives in Oslo", at: now.AddDate(0, -2, 0)}, fact{text: "Erin's home is in Oslo", at: now.AddDate(0, -1, 0)})
	if res := e.drain(w, "erin"); res.Created != 1 {
		t.Fatalf("drain = %+v", res)
	}
	// Stop writes every buffered row.
	if err := rec.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	obs := e.observations("erin")
	if len(obs) != 1 {
		t.Fatalf("observations %+v", obs)
	}
	calls, total, err := e.st.ListLLMRequests(ctx, "erin", store.LLMRequestFilter{Limit: 10})
	if err != nil || total != 1 {
		t.Fatalf("calls: %d, %v", total, err)
	}
	var meta struct {
		Sources []uuid.UUID `json:"source_memory_ids"`
		Created []uuid.UUID `json:"memory_ids"`
	}
	if err := json.Unmarshal(calls[0].Metadata, &meta); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(facts, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	slices.SortFunc(meta.Sources, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	if calls[0].Operation != "consolidation" || !slices.Equal(meta.Sources, facts) || !slices.Equal(meta.Created, []uuid.UUID{obs[0].ID}) {
		t.Errorf("the call %+v metadata %s: want sources %v, created %v", calls[0], calls[0].Metadata, facts, obs[0].ID)
	}
	for _, id := range []uuid.UUID{facts[0], obs[0].ID} {
		if _, n, err := e.st.ListLLMRequests(ctx, "erin", store.LLMRequestFilter{MemoryID: id.String(), Limit: 10}); err != nil || n != 1 {
			t.Errorf("calls of %s: %d, %v; want the adjudication call", id, n, err)
		}
	}
}
