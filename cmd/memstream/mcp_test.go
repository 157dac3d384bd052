package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/internal/pgtest"
)

const (
	mcpAliceKey = "mcp-alice-key-0001"
	mcpBobKey   = "mcp-bob-key-0002"
	aliceBank   = "mcp-alice"
	bobBank     = "mcp-bob"
)

// bearer adds a key to every request of an MCP client.
type bearer struct {
	key  string
	base http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.base.RoundTrip(r)
}

// startMemstream runs every role in process (embedded Kafka, the test
// PostgreSQL in the test's own schema, hash embeddings), with one key per
// bank, and returns the API's address.
func startMemstream(t *testing.T) string {
	t.Helper()
	dbURL, _ := pgtest.Schema(t)
	cfg := config.Default()
	cfg.Database.URL = dbURL
	cfg.Log.Level = "warn"
	cfg.Embed.Provider, cfg.Embed.Dim = "hash", 64
	cfg, err := inProcessConfig(cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Auth = config.Auth{Keys: []config.Key{
		{Name: "alice", Key: mcpAliceKey, Banks: []string{aliceBank}, Scopes: []string{"write"}},
		{Name: "bob", Key: mcpBobKey, Banks: []string{bobBank}, Scopes: []string{"write"}},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	var logs bytes.Buffer
	a, err := start(ctx, cfg, roles{ingest: true, api: true, worker: true}, newRegistry(), newLogger(cfg, &syncWriter{w: &logs}))
	if err != nil {
		cancel()
		t.Fatalf("start: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("in-process memstream: %v", err)
		}
	})
	select {
	case addr := <-a.apiAddr:
		return addr
	case err := <-done:
		done <- err
		t.Fatalf("memstream stopped before serving: %v\n%s", err, logs.String())
	case <-time.After(2 * time.Minute):
		t.Fatal("memstream did not start serving within 2 minutes")
	}
	return ""
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func connectMCP(t *testing.T, endpoint, key string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "memstream-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{key: key, base: http.DefaultTransport}, Timeout: time.Minute}}
	cs, err := c.Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", endpoint, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// callTool calls a tool and decodes its JSON answer; isError tells whether
// the tool reported an error.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (out map[string]any, isError bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content blocks, want 1", name, len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content is %T, want text", name, res.Content[0])
	}
	if err := json.Unmarshal([]byte(text.Text), &out); err != nil {
		t.Fatalf("%s: answer is not a JSON object: %v\n%s", name, err, text.Text)
	}
	return out, res.IsError
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// TestMCPOverHTTP: the official Go SDK's client, over Streamable HTTP
// against a real memstream (kfake, PostgreSQL, the ingest pipeline), lists
// Hindsight's tools and does retain → recall → reflect with a key scoped
// to one bank; the other bank's data is refused, and /mcp without a key
// is refused before any tool runs.
func TestMCPOverHTTP(t *testing.T) {
	addr := startMemstream(t)
	base := "http://" + addr

	// No key, or an unknown one: 401 in the API's JSON error shape.
	for _, key := range []string{"", "not-a-key"} {
		req, _ := http.NewRequest(http.MethodPost, base+"/mcp/"+aliceBank+"/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), `"code":"unauthorized"`) {
			t.Fatalf("key %q: %d %s, want 401 unauthorized", key, resp.StatusCode, body)
		}
	}

	// Stateless: no standalone event stream to hold open.
	req, _ := http.NewRequest(http.MethodGet, base+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+mcpAliceKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /mcp: %d, want 405", resp.StatusCode)
	}

	alice := connectMCP(t, base+"/mcp/"+aliceBank+"/", mcpAliceKey)
	names := toolNames(t, alice)
	for _, want := range []string{"retain", "sync_retain", "recall", "reflect", "list_mental_models", "get_mental_model",
		"create_mental_model", "list_documents", "get_document", "delete_document", "get_bank", "get_operation"} {
		if !slices.Contains(names, want) {
			t.Errorf("single-bank tools lack %s: %v", want, names)
		}
	}
	for _, multiOnly := range []string{"list_banks", "create_bank", "get_bank_stats"} {
		if slices.Contains(names, multiOnly) {
			t.Errorf("single-bank tools include the bank-management tool %s", multiOnly)
		}
	}

	out, isErr := callTool(t, alice, "sync_retain", map[string]any{
		"content": "Alice moved to Lisbon in March 2024. She works as a marine biologist at the city aquarium.",
		"context": "biography", "tags": `["person:alice"]`, // a list sent as JSON text, as LLMs do
		"explanation": "the user told me", // an argument no tool has: dropped
	})
	if isErr || out["status"] != "completed" {
		t.Fatalf("sync_retain: error=%v %v", isErr, out)
	}
	ids, _ := out["memory_ids"].([]any)
	if len(ids) == 0 {
		t.Fatalf("sync_retain stored no memories: %v", out)
	}

	out, isErr = callTool(t, alice, "recall", map[string]any{"query": "Where does Alice live?"})
	if isErr {
		t.Fatalf("recall: %v", out)
	}
	results, _ := out["results"].([]any)
	if len(results) == 0 || !strings.Contains(mustJSON(t, results), "Lisbon") {
		t.Fatalf("recall did not find Lisbon: %v", out)
	}

	out, isErr = callTool(t, alice, "reflect", map[string]any{"query": "Where does Alice live?", "include_based_on": true})
	if isErr {
		t.Fatalf("reflect: %v", out)
	}
	if text, _ := out["text"].(string); !strings.Contains(text, "Lisbon") {
		t.Fatalf("reflect answer does not mention Lisbon: %v", out)
	}
	if _, ok := out["based_on"]; !ok {
		t.Errorf("reflect with include_based_on has no based_on: %v", out)
	}

	// Alice's key on Bob's bank: the API's 403, as a tool error; nothing is
	// written there.
	multi := connectMCP(t, base+"/mcp", mcpAliceKey)
	if n := toolNames(t, multi); !slices.Contains(n, "list_banks") || len(n) != len(names)+3 {
		t.Errorf("multi-bank tools = %v, want the %d single-bank ones plus list_banks, create_bank, get_bank_stats", n, len(names))
	}
	for _, call := range []struct {
		name string
		args map[string]any
	}{
		{"recall", map[string]any{"query": "anything", "bank_id": bobBank}},
		{"retain", map[string]any{"content": "Mallory was here.", "bank_id": bobBank}},
		{"list_documents", map[string]any{"bank_id": bobBank}},
	} {
		out, isErr := callTool(t, multi, call.name, call.args)
		if !isErr || out["status"] != float64(http.StatusForbidden) || out["code"] != "forbidden" {
			t.Errorf("%s on bank %s with alice's key: error=%v %v, want a 403 tool error", call.name, bobBank, isErr, out)
		}
	}
	bobOnAlice := connectMCP(t, base+"/mcp/"+aliceBank+"/", mcpBobKey)
	if out, isErr := callTool(t, bobOnAlice, "recall", map[string]any{"query": "Where does Alice live?"}); !isErr || out["code"] != "forbidden" {
		t.Errorf("bob's key on alice's bank: error=%v %v, want forbidden", isErr, out)
	}
	out, _ = callTool(t, multi, "list_banks", nil)
	if s := mustJSON(t, out); !strings.Contains(s, aliceBank) || strings.Contains(s, bobBank) {
		t.Errorf("list_banks with alice's key shows other banks or not hers: %s", s)
	}
	bob := connectMCP(t, base+"/mcp/"+bobBank+"/", mcpBobKey)
	if out, isErr := callTool(t, bob, "list_memories", nil); isErr || out["total"] != float64(0) {
		t.Errorf("bob's bank after alice's refused retain: error=%v %v, want no memories", isErr, out)
	}

	// The documents tools see what retain stored, and the audit log files
	// the calls under the mcp transport.
	if out, isErr := callTool(t, alice, "list_documents", nil); isErr || out["total"] != float64(1) {
		t.Errorf("list_documents: error=%v %v, want one document", isErr, out)
	}
	var audit struct {
		Items []struct{ Action, Transport string } `json:"items"`
	}
	getJSON(t, base+"/v1/default/banks/"+aliceBank+"/audit-logs?transport=mcp", mcpAliceKey, &audit)
	if !slices.ContainsFunc(audit.Items, func(e struct{ Action, Transport string }) bool { return e.Action == "retain" && e.Transport == "mcp" }) {
		t.Errorf("audit log has no retain through mcp: %+v", audit.Items)
	}

	// memstream mcp: the stdio command, against the same server.
	t.Run("stdio", func(t *testing.T) { testMCPStdio(t, base) })
}

// testMCPStdio runs `memstream mcp --bank` on pipes and drives it with the
// SDK's client: the same tools, the same scoping.
func testMCPStdio(t *testing.T, base string) {
	for _, tc := range []struct {
		bank, key string
		forbidden bool
	}{{aliceBank, mcpAliceKey, false}, {bobBank, mcpAliceKey, true}} {
		ctx, cancel := context.WithCancel(t.Context())
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		var stderr bytes.Buffer
		done := make(chan error, 1)
		t.Setenv("MEMSTREAM_API_KEY", tc.key)
		go func() {
			done <- cmdMCP(ctx, []string{"--api", base, "--bank", tc.bank}, inR, outW, &syncWriter{w: &stderr})
			outW.Close()
		}()
		c := mcp.NewClient(&mcp.Implementation{Name: "memstream-test", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
		if err != nil {
			t.Fatalf("connect over stdio: %v\n%s", err, stderr.String())
		}
		if n := toolNames(t, cs); !slices.Contains(n, "recall") || slices.Contains(n, "list_banks") {
			t.Errorf("stdio single-bank tools: %v", n)
		}
		out, isErr := callTool(t, cs, "recall", map[string]any{"query": "Where does Alice live?"})
		switch {
		case tc.forbidden && (!isErr || out["code"] != "forbidden"):
			t.Errorf("stdio on %s with alice's key: error=%v %v, want forbidden", tc.bank, isErr, out)
		case !tc.forbidden && (isErr || !strings.Contains(mustJSON(t, out), "Lisbon")):
			t.Errorf("stdio recall on %s: error=%v %v", tc.bank, isErr, out)
		}
		_ = cs.Close()
		inW.Close()
		if err := <-done; err != nil {
			t.Errorf("memstream mcp: %v\n%s", err, stderr.String())
		}
		cancel()
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func getJSON(t *testing.T, url, key string, out any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}
