// Package demo is the script of `memstream demo`: it produces the demo
// chat log to Kafka, waits until the running memstream has ingested it,
// asks recall questions, waits for consolidation and shows what was
// learned (an observation with its evidence and trend, a reflect answer, a
// mental model). It only talks to Kafka and the HTTP API, as a user would;
// main starts the memstream it talks to.
package demo

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/apiclient"
	"github.com/memstream/memstream/broker"
	"github.com/memstream/memstream/eval"
)

// questions are asked of the demo data after ingestion.
var questions = []struct{ bank, query string }{
	{"alice", "Where does Alice live now?"},
	{"alice", "How should emails to Alice be written?"},
	{"alice", "What is my order number?"},
	{"zhang-wei", "老张喜欢喝什么？"},
	{"zhang-wei", "What did Zhang Wei do in Hangzhou?"},
	{"support-team", "What is the refund window?"},
}

// chatLog is the built-in demo chat log (examples/chatlogs/demo.jsonl
// links to it), so the binary runs the demo from any directory.
//
//go:embed demo.jsonl
var chatLog []byte

// BuiltIn names the built-in chat log in messages.
const BuiltIn = "the built-in demo chat log"

// Script is a loaded demo chat log.
type Script struct {
	file     string         // "" for the built-in chat log
	expected map[string]int // events per bank
}

// Load reads the chat log's banks, so a missing or broken file fails
// before anything is started. An empty file name loads the built-in chat
// log.
func Load(file string) (*Script, error) {
	var r io.Reader
	if file == "" {
		r = bytes.NewReader(chatLog)
	} else {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("demo data: %w", err)
		}
		defer f.Close()
		r = f
	}
	sc := &Script{file: file}
	expected, err := countEventsByBank(r, sc.name())
	if err != nil {
		return nil, err
	}
	sc.expected = expected
	return sc, nil
}

func (s *Script) name() string {
	if s.file == "" {
		return BuiltIn
	}
	return s.file
}

func (s *Script) produce(ctx context.Context, deps Deps) (int, error) {
	if s.file == "" {
		return broker.ProduceReader(ctx, deps.Producer, bytes.NewReader(chatLog), int64(len(chatLog)), BuiltIn, deps.Topic, "", deps.Progress)
	}
	return broker.ProduceFile(ctx, deps.Producer, s.file, deps.Topic, "", deps.Progress)
}

// Deps are the running memstream the script talks to.
type Deps struct {
	// API is a client of its HTTP API.
	API *apiclient.Client
	// Producer and Topic are where the chat log is produced.
	Producer *kgo.Client
	Topic    string
	// Progress receives the produce progress bar.
	Progress io.Writer
}

// Run produces the chat log, waits for ingestion and consolidation, and
// prints what was recalled and learned to stdout.
func (s *Script) Run(ctx context.Context, deps Deps, stdout io.Writer) error {
	fmt.Fprintf(stdout, "== HTTP API on %s; producing %s to Kafka topic %s …\n", deps.API.Base(), s.name(), deps.Topic)
	n, err := s.produce(ctx, deps)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "== produced %d events; waiting for ingestion …\n", n)
	c := deps.API
	if err := waitIngested(ctx, c, s.expected, stdout); err != nil {
		return err
	}
	for _, q := range questions {
		var resp struct {
			Results []apiclient.RecallResult `json:"results"`
		}
		if err := c.Call(ctx, "POST", "/v1/default/banks/"+q.bank+"/memories/recall", map[string]any{"query": q.query, "max_tokens": 600}, &resp); err != nil {
			fmt.Fprintf(stdout, "\n? [%s] %s\n  error: %v\n", q.bank, q.query, err)
			continue
		}
		fmt.Fprintf(stdout, "\n? [%s] %s\n", q.bank, q.query)
		apiclient.WriteResults(stdout, resp.Results, 4)
	}
	fmt.Fprintln(stdout, "\n== waiting for consolidation to fold facts into observations …")
	stats := func(ctx context.Context, bank string) (eval.BankStats, error) {
		var s eval.BankStats
		err := c.Call(ctx, "GET", "/v1/default/banks/"+bank+"/stats", nil, &s)
		return s, err
	}
	if note, err := eval.WaitConsolidated(ctx, stats, slices.Sorted(maps.Keys(s.expected)), 3*time.Minute, 30*time.Second); err != nil || note != "" {
		fmt.Fprintf(stdout, "(consolidation: %v%s)\n", err, note)
	}
	showLearning(ctx, c, stdout)
	return nil
}

// WriteServing tells how to try the server that goes on running.
func WriteServing(w io.Writer, addr string) {
	fmt.Fprintf(w, `
== memstream is serving. Open the web console at http://%[1]s/console/
Or try, in another terminal:
  curl -s http://%[1]s/v1/default/banks/alice/stats
  curl -s -XPOST http://%[1]s/v1/default/banks/alice/memories/recall -H 'Content-Type: application/json' -d '{"query":"Where does Alice live?","max_tokens":500}'
  curl -s -XPOST http://%[1]s/v1/default/banks/alice/memories -H 'Content-Type: application/json' -d '{"items":[{"content":"Alice adopted a cat named Miso."}]}'
  curl -s http://%[1]s/v1/default/banks/alice/observations
  curl -s -XPOST http://%[1]s/v1/default/banks/alice/reflect -H 'Content-Type: application/json' -d '{"query":"Where does Alice live now?"}'
  ./bin/memstream recall --bank alice --api http://%[1]s "cat"
  ./bin/memstream reflect --bank alice --api http://%[1]s "How should I write emails to Alice?"
  claude mcp add --transport http memstream http://%[1]s/mcp/alice/    # the same memory as an MCP server
Press Ctrl-C to stop.
`, addr)
}

// countEventsByBank reads the bank of every event in a JSONL file.
func countEventsByBank(r io.Reader, name string) (map[string]int, error) {
	out := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			BankID string `json:"bank_id"`
		}
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("demo data %s: %w", name, err)
		}
		out[ev.BankID]++
	}
	return out, sc.Err()
}

// waitIngested polls bank stats until every produced event is stored or
// dead-lettered, printing progress.
func waitIngested(ctx context.Context, c *apiclient.Client, expected map[string]int, w io.Writer) error {
	banks := make([]string, 0, len(expected))
	for b := range expected {
		banks = append(banks, b)
	}
	sort.Strings(banks)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		all := true
		line := ""
		for _, b := range banks {
			var st struct {
				Facts, EventsIngested, EventsDeadLettered int64
			}
			var raw json.RawMessage
			if err := c.Call(ctx, "GET", "/v1/default/banks/"+b+"/stats", nil, &raw); err == nil {
				var s struct {
					Facts              int64 `json:"facts"`
					EventsIngested     int64 `json:"events_ingested"`
					EventsDeadLettered int64 `json:"events_dead_lettered"`
				}
				_ = json.Unmarshal(raw, &s)
				st.Facts, st.EventsIngested, st.EventsDeadLettered = s.Facts, s.EventsIngested, s.EventsDeadLettered
			}
			if st.EventsIngested+st.EventsDeadLettered < int64(expected[b]) {
				all = false
			}
			line += fmt.Sprintf("  %s: %d/%d events, %d facts", b, st.EventsIngested+st.EventsDeadLettered, expected[b], st.Facts)
		}
		if all {
			fmt.Fprintln(w, "== ingested:"+line)
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("demo: ingestion did not finish within 5 minutes:" + line)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

type demoMemory struct {
	ID         string    `json:"id"`
	Text       string    `json:"text"`
	ProofCount int       `json:"proof_count"`
	Trend      string    `json:"trend"`
	UpdatedAt  time.Time `json:"updated_at"`
	Evidence   []struct {
		Quote     string    `json:"quote"`
		Timestamp time.Time `json:"timestamp"`
	} `json:"evidence"`
	History []struct {
		Action  string  `json:"action"`
		OldText *string `json:"old_text"`
		Reason  string  `json:"reason"`
	} `json:"history"`
}

// showLearning prints what consolidation learned: an observation with its
// evidence, trend and history, a reflect answer, and a mental model.
func showLearning(ctx context.Context, c *apiclient.Client, w io.Writer) {
	var list struct {
		Items []demoMemory `json:"items"`
	}
	if err := c.Call(ctx, "GET", "/v1/default/banks/alice/observations?q=Shanghai&limit=20", nil, &list); err != nil || len(list.Items) == 0 {
		fmt.Fprintf(w, "\n(no observation about Shanghai yet: %v)\n", err)
	} else {
		// Show the best-supported one: the observation the evidence piled onto.
		best := list.Items[0]
		for _, o := range list.Items {
			if o.ProofCount > best.ProofCount {
				best = o
			}
		}
		var obs demoMemory
		if err := c.Call(ctx, "GET", "/v1/default/banks/alice/observations/"+best.ID, nil, &obs); err == nil {
			fmt.Fprintf(w, "\n== observation (proof_count %d, trend %s): %s\n", obs.ProofCount, obs.Trend, obs.Text)
			for i, e := range obs.Evidence {
				if i == 5 {
					fmt.Fprintf(w, "     … %d more\n", len(obs.Evidence)-5)
					break
				}
				fmt.Fprintf(w, "   evidence %s: %q\n", e.Timestamp.Format("2006-01-02"), e.Quote)
			}
			for _, h := range obs.History {
				if h.OldText != nil && h.Action == "update" {
					fmt.Fprintf(w, "   history: %s (was %q): %s\n", h.Action, *h.OldText, h.Reason)
				}
			}
		}
	}
	var ans struct {
		Text    string `json:"text"`
		BasedOn struct {
			Memories []struct {
				Type string `json:"type"`
			} `json:"memories"`
		} `json:"based_on"`
	}
	q := "Where does Alice live now?"
	// include.facts: the Hindsight-shaped answer lists its sources only
	// when asked to.
	if err := c.Call(ctx, "POST", "/v1/default/banks/alice/reflect", map[string]any{"query": q, "include": map[string]any{"facts": map[string]any{}}}, &ans); err != nil {
		fmt.Fprintf(w, "\n(reflect: %v)\n", err)
	} else {
		obs := 0
		for _, m := range ans.BasedOn.Memories {
			if m.Type == "observation" {
				obs++
			}
		}
		fmt.Fprintf(w, "\n== reflect %q\n%s\n   (based on %d observations, %d facts)\n", q, indent(ans.Text), obs, len(ans.BasedOn.Memories)-obs)
	}
	var mm struct {
		ID          string `json:"id"`
		Content     string `json:"content"`
		OperationID string `json:"operation_id"`
	}
	body := map[string]any{"name": "email-style", "source_query": "How does Alice want her emails written?"}
	if err := c.Call(ctx, "POST", "/v1/default/banks/alice/mental-models", body, &mm); err != nil {
		// Already created by an earlier demo run: find it, and refresh it.
		var models struct {
			Items []struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"items"`
		}
		if c.Call(ctx, "GET", "/v1/default/banks/alice/mental-models", nil, &models) == nil {
			for _, m := range models.Items {
				if m.Name == "email-style" {
					mm.ID = m.ID
				}
			}
		}
		if mm.ID == "" {
			return
		}
		if err := c.Call(ctx, "POST", "/v1/default/banks/alice/mental-models/"+mm.ID+"/refresh", map[string]any{}, &mm); err != nil {
			fmt.Fprintf(w, "\n(mental model refresh: %v)\n", err)
			return
		}
	}
	// Its content is written by an asynchronous operation.
	if err := waitOperation(ctx, c, "alice", mm.OperationID, time.Minute); err != nil {
		fmt.Fprintf(w, "\n(mental model: %v)\n", err)
		return
	}
	if err := c.Call(ctx, "GET", "/v1/default/banks/alice/mental-models/"+mm.ID, nil, &mm); err == nil {
		fmt.Fprintf(w, "\n== mental model \"email-style\" (How does Alice want her emails written?)\n%s\n", indent(mm.Content))
	}
}

// waitOperation polls an asynchronous operation until it completes, and
// fails if it fails, is cancelled, or is still running after limit.
func waitOperation(ctx context.Context, c *apiclient.Client, bank, id string, limit time.Duration) error {
	if id == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		var op struct {
			Status       string `json:"status"`
			ErrorMessage string `json:"error_message"`
		}
		if err := c.Call(ctx, "GET", "/v1/default/banks/"+bank+"/operations/"+id, nil, &op); err != nil {
			return fmt.Errorf("operation %s: %w", id, err)
		}
		switch op.Status {
		case "completed":
			return nil
		case "failed", "cancelled", "not_found":
			return fmt.Errorf("operation %s %s: %s", id, op.Status, op.ErrorMessage)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("operation %s still %s after %s", id, op.Status, limit)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func indent(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 12 {
		lines = append(lines[:12], "…")
	}
	return "   " + strings.Join(lines, "\n   ")
}
