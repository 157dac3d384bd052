package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// apiClient calls the memstream HTTP API.
type apiClient struct {
	base  string
	token string
	http  *http.Client
}

func newAPIClient(base string) *apiClient {
	if base == "" {
		base = os.Getenv("MEMSTREAM_API_URL")
	}
	if base == "" {
		addr := os.Getenv("MEMSTREAM_HTTP_ADDR")
		if addr == "" {
			addr = "127.0.0.1:8888"
		}
		base = "http://" + addr
	}
	return &apiClient{base: strings.TrimRight(base, "/"), token: os.Getenv("MEMSTREAM_API_KEY"), http: &http.Client{Timeout: 120 * time.Second}}
}

// call sends body as JSON and decodes the answer into out; API errors come
// back with their code and message.
func (c *apiClient) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w (is memstream serve running?)", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error struct{ Code, Message, Field string } `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			return fmt.Errorf("%s %s: %d %s: %s", method, path, resp.StatusCode, e.Error.Code, e.Error.Message)
		}
		return fmt.Errorf("%s %s: HTTP %d", method, path, resp.StatusCode)
	}
	if out == nil {
		return nil
	}
	if r, ok := out.(*json.RawMessage); ok {
		*r = raw
		return nil
	}
	return json.Unmarshal(raw, out)
}

type recallResult struct {
	ID          string            `json:"id"`
	Text        string            `json:"text"`
	Type        string            `json:"type"`
	MentionedAt time.Time         `json:"mentioned_at"`
	Entities    []string          `json:"entities"`
	Metadata    map[string]string `json:"metadata"`
	Scores      struct {
		Final float64 `json:"final"`
	} `json:"scores"`
}

func cmdRecall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("recall", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bank := fs.String("bank", "", "bank id (required)")
	asJSON := fs.Bool("json", false, "print the raw JSON response")
	api := fs.String("api", "", "API base URL (default $MEMSTREAM_API_URL or http://127.0.0.1:8888); bearer key from $MEMSTREAM_API_KEY")
	maxTokens := fs.Int("max-tokens", 4096, "token budget of the results")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: memstream recall --bank B [--json] QUERY\n\nAsks the running server's recall API. Flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	query := strings.Join(fs.Args(), " ")
	if *bank == "" || query == "" {
		fs.Usage()
		return fmt.Errorf("recall: --bank and a QUERY are required")
	}
	c := newAPIClient(*api)
	var raw json.RawMessage
	if err := c.call(ctx, "POST", "/v1/default/banks/"+*bank+"/memories/recall", map[string]any{"query": query, "max_tokens": *maxTokens}, &raw); err != nil {
		return err
	}
	if *asJSON {
		_, err := stdout.Write(append(raw, '\n'))
		return err
	}
	var resp struct {
		Results []recallResult `json:"results"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return err
	}
	printResults(stdout, resp.Results, 10)
	return nil
}

func printResults(w io.Writer, rs []recallResult, n int) {
	if len(rs) == 0 {
		fmt.Fprintln(w, "  (no results)")
	}
	for i, r := range rs {
		if i >= n {
			break
		}
		fmt.Fprintf(w, "  %2d. [%.3f %-11s %s] %s\n", i+1, r.Scores.Final, r.Type, r.MentionedAt.Format("2006-01-02"), r.Text)
	}
}
