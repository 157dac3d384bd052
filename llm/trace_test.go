package llm_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memstream/memstream/llm"
	"github.com/memstream/memstream/llmtrace"
	"github.com/memstream/memstream/store"
)

type traceStore struct {
	mu   sync.Mutex
	rows []store.LLMRequest
}

func (s *traceStore) AddLLMRequests(_ context.Context, rs []store.LLMRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = append(s.rows, rs...)
	return nil
}

func (s *traceStore) PruneLLMRequests(context.Context, time.Time, []string, int) (int64, error) {
	return 0, nil
}

// TestCallsCarryOneBankAndAreTraced extracts interleaved chunks of two
// banks: no call mixes them, every fact comes back in its input's place,
// and each call is a row of its bank's LLM trace (scope
// retain_extract_facts, the document when the call's chunks share one).
func TestCallsCarryOneBankAndAreTraced(t *testing.T) {
	f := newFake(t, valid(t))
	st := &traceStore{}
	rec, err := llmtrace.New(llmtrace.Deps{Store: st}, llmtrace.Config{Provider: "openai", Model: "fake-model", Retention: time.Hour,
		MaxPerBank: 100, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	e, err := llm.New(llm.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Trace: rec},
		llm.Config{BaseURL: f.srv.URL + "/v1", Model: "fake-model", ChunksPerCall: 4, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	in := inputs(6)
	for i := range in {
		in[i].BankID = []string{"bank-a", "bank-b"}[i%2]
		in[i].DocumentID = in[i].BankID + "-doc"
	}
	out, err := e.Extract(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for i, facts := range out {
		if len(facts) == 0 || !strings.Contains(facts[0].Text, in[i].Parts[0].Text) {
			t.Fatalf("input %d got %+v", i, facts)
		}
	}
	if n := f.numCalls(); n != 2 {
		t.Errorf("%d calls, want 2 (3 chunks of each bank)", n)
	}
	// An ended Run writes what is buffered and returns.
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := rec.Run(ended); err != nil {
		t.Fatal(err)
	}
	banks := map[string]bool{}
	for _, q := range st.rows {
		banks[q.BankID] = true
		if q.Operation != "retain" || q.Scope != "retain_extract_facts" || q.Status != "success" || q.InputTokens != 100 ||
			string(q.Metadata) != `{"document_id":"`+q.BankID+`-doc"}` {
			t.Errorf("row %+v", q)
		}
	}
	if len(st.rows) != 2 || !banks["bank-a"] || !banks["bank-b"] {
		t.Errorf("rows for banks %v (%d rows), want one per bank", banks, len(st.rows))
	}
}
