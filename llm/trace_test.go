package llm_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

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
// retain_extract_facts, its chunks, the document when they share one).
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
		in[i].ChunkID = chunkUUID(i)
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
			string(q.Metadata) != `{"chunk_ids":`+map[string]string{"bank-a": chunkList(0, 2, 4), "bank-b": chunkList(1, 3, 5)}[q.BankID]+
				`,"document_id":"`+q.BankID+`-doc"}` {
			t.Errorf("row %+v", q)
		}
	}
	if len(st.rows) != 2 || !banks["bank-a"] || !banks["bank-b"] {
		t.Errorf("rows for banks %v (%d rows), want one per bank", banks, len(st.rows))
	}
}

// TestSplitCallNamesItsOwnChunk has the server reject a call of two
// chunks: the call is retried one chunk at a time, and each retry's row
// names its own chunk (the memories it extracted) in the same run.
func TestSplitCallNamesItsOwnChunk(t *testing.T) {
	f := newFake(t, status(400), valid(t))
	st := &traceStore{}
	rec, err := llmtrace.New(llmtrace.Deps{Store: st}, llmtrace.Config{Provider: "openai", Model: "fake-model", Retention: time.Hour,
		MaxPerBank: 100, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	e, err := llm.New(llm.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Trace: rec},
		llm.Config{BaseURL: f.srv.URL + "/v1", Model: "fake-model", ChunksPerCall: 4, Concurrency: 1, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	in := inputs(2)
	for i := range in {
		in[i].BankID, in[i].ChunkID = "bank-a", chunkUUID(i)
	}
	if _, err := e.Extract(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := rec.Run(ended); err != nil {
		t.Fatal(err)
	}
	var metas []string
	for _, q := range st.rows {
		metas = append(metas, string(q.Metadata))
		if q.TraceID != st.rows[0].TraceID {
			t.Errorf("row %+v is not in the rejected call's run", q)
		}
	}
	want := []string{`{"chunk_ids":` + chunkList(0, 1) + `}`, `{"chunk_ids":` + chunkList(0) + `}`, `{"chunk_ids":` + chunkList(1) + `}`}
	if strings.Join(metas, " ") != strings.Join(want, " ") {
		t.Errorf("metadata %v, want %v", metas, want)
	}
}

// chunkUUID is a test chunk id that reads as its number plus one (never nil).
func chunkUUID(i int) uuid.UUID {
	return uuid.MustParse(fmt.Sprintf("00000000-0000-0000-0000-%012d", i+1))
}

// chunkList is the JSON list of chunkUUIDs is.
func chunkList(is ...int) string {
	var ss []string
	for _, i := range is {
		ss = append(ss, `"`+chunkUUID(i).String()+`"`)
	}
	return "[" + strings.Join(ss, ",") + "]"
}
