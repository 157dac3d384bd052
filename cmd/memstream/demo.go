package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"time"
)

// demoQuestions are asked of the demo data after ingestion.
var demoQuestions = []struct{ bank, query string }{
	{"alice", "Where does Alice live now?"},
	{"alice", "How should emails to Alice be written?"},
	{"alice", "What is my order number?"},
	{"zhang-wei", "老张喜欢喝什么？"},
	{"zhang-wei", "What did Zhang Wei do in Hangzhou?"},
	{"support-team", "What is the refund window?"},
}

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path, sets := commonFlags(fs)
	exit := fs.Bool("exit", false, "exit after printing the results instead of serving")
	file := fs.String("file", "examples/chatlogs/demo.jsonl", "chat log to ingest")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: memstream demo [--exit] [--config F]\n\nStarts embedded Kafka and PostgreSQL, ingests the demo chat log through Kafka,\nprints recall results, then keeps serving (unless --exit). Flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := loadConfig(*path, *sets)
	if err != nil {
		return err
	}
	expected, err := countEventsByBank(*file)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	fmt.Fprintln(stdout, "== memstream demo: starting embedded Kafka and PostgreSQL (first start runs initdb) …")
	a, err := start(ctx, cfg, roles{ingest: true, api: true, worker: true}, newRegistry(), log)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.run(runCtx) }()
	var addr string
	select {
	case addr = <-a.apiAddr:
	case err := <-done:
		return err
	}
	fmt.Fprintf(stdout, "== HTTP API on http://%s; producing %s to Kafka topic %s …\n", addr, *file, cfg.Kafka.Topics[0])
	n, err := produceFile(ctx, a.prod, *file, cfg.Kafka.Topics[0], "", stderr)
	if err != nil {
		cancel()
		<-done
		return err
	}
	fmt.Fprintf(stdout, "== produced %d events; waiting for ingestion …\n", n)
	c := newAPIClient("http://" + addr)
	if err := waitIngested(ctx, c, expected, stdout); err != nil {
		cancel()
		<-done
		return err
	}
	for _, q := range demoQuestions {
		var resp struct {
			Results []recallResult `json:"results"`
		}
		if err := c.call(ctx, "POST", "/v1/default/banks/"+q.bank+"/memories/recall", map[string]any{"query": q.query, "max_tokens": 600}, &resp); err != nil {
			fmt.Fprintf(stdout, "\n? [%s] %s\n  error: %v\n", q.bank, q.query, err)
			continue
		}
		fmt.Fprintf(stdout, "\n? [%s] %s\n", q.bank, q.query)
		printResults(stdout, resp.Results, 4)
	}
	if *exit {
		cancel()
		return <-done
	}
	fmt.Fprintf(stdout, `
== memstream is serving. Try, in another terminal:
  curl -s http://%[1]s/v1/default/banks/alice/stats
  curl -s -XPOST http://%[1]s/v1/default/banks/alice/memories/recall -H 'Content-Type: application/json' -d '{"query":"Where does Alice live?","max_tokens":500}'
  curl -s -XPOST http://%[1]s/v1/default/banks/alice/memories -H 'Content-Type: application/json' -d '{"items":[{"content":"Alice adopted a cat named Miso."}]}'
  go run ./cmd/memstream recall --bank alice "cat"
Press Ctrl-C to stop.
`, addr)
	return <-done
}

// countEventsByBank reads the bank of every event in a JSONL file.
func countEventsByBank(file string) (map[string]int, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("demo data: %w", err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			BankID string `json:"bank_id"`
		}
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("demo data %s: %w", file, err)
		}
		out[ev.BankID]++
	}
	return out, sc.Err()
}

// waitIngested polls bank stats until every produced event is stored or
// dead-lettered, printing progress.
func waitIngested(ctx context.Context, c *apiClient, expected map[string]int, w io.Writer) error {
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
			if err := c.call(ctx, "GET", "/v1/default/banks/"+b+"/stats", nil, &raw); err == nil {
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
