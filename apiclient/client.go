// Package apiclient is the HTTP API client of memstream's command line
// (memstream recall, reflect and demo): it finds the server and the bearer
// key from the environment, decodes the API's JSON errors into messages that
// name their code, and prints answers for people.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/memstream/memstream/reflect"
)

// Client calls the memstream HTTP API.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// Config says which server a Client calls.
type Config struct {
	// Base is the server's base URL; empty means $MEMSTREAM_API_URL, else
	// http://$MEMSTREAM_HTTP_ADDR, else http://127.0.0.1:8888.
	Base string
	// Token is the bearer key; empty means $MEMSTREAM_API_KEY.
	Token string
}

// New returns a client of the server at cfg.Base. It has no dependencies,
// so it takes cfg alone.
func New(cfg Config) (*Client, error) {
	base := cfg.Base
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
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("api url %q: want http(s)://host[:port]", base)
	}
	token := cfg.Token
	if token == "" {
		token = os.Getenv("MEMSTREAM_API_KEY")
	}
	return &Client{base: strings.TrimRight(base, "/"), token: token, http: &http.Client{Timeout: 120 * time.Second}}, nil
}

// Base is the server's base URL.
func (c *Client) Base() string { return c.base }

// Call sends body as JSON and decodes the answer into out (a
// *json.RawMessage keeps it as is); API errors come back with their code
// and message.
func (c *Client) Call(ctx context.Context, method, path string, body, out any) error {
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

// RecallResult is the part of a recall result the command line prints.
type RecallResult struct {
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

// WriteResults prints the first n results, one a line.
func WriteResults(w io.Writer, rs []RecallResult, n int) {
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

// WriteReflect prints the answer, its sources and a one-line trace.
func WriteReflect(w io.Writer, r reflect.Response) {
	fmt.Fprintln(w, strings.TrimSpace(r.Text))
	if r.StructuredOutput != nil {
		b, _ := json.MarshalIndent(r.StructuredOutput, "", "  ")
		fmt.Fprintf(w, "\nStructured output:\n%s\n", b)
	}
	if r.StructuredOutputError != "" {
		fmt.Fprintf(w, "\nStructured output failed: %s\n", r.StructuredOutputError)
	}
	fmt.Fprintln(w, "\nBased on:")
	n := 0
	for _, g := range []struct {
		name string
		ids  []string
	}{{"mental model", r.BasedOn.MentalModels}, {"observation", r.BasedOn.Observations}, {"memory", r.BasedOn.Memories}} {
		for _, id := range g.ids {
			fmt.Fprintf(w, "  %-12s %s\n", g.name, id)
			n++
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "  (nothing)")
	}
	tools := make([]string, len(r.Trace.ToolCalls))
	for i, tc := range r.Trace.ToolCalls {
		tools[i] = tc.Tool
	}
	mode := "llm"
	if r.Extractive {
		mode = "extractive (offline)"
	}
	fmt.Fprintf(w, "\n[%s; %d iterations; forced %v; stop %s; tools %s; %d tokens]\n", mode, r.Trace.Iterations, r.Trace.Forced,
		r.Trace.StopReason, strings.Join(tools, " → "), r.Usage.TotalTokens)
}
