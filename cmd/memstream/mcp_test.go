package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/internal/proctest"
	"github.com/memstream/memstream/internal/toolcache"
)

const (
	mcpAliceKey = "mcp-alice-key-0001"
	mcpBobKey   = "mcp-bob-key-0002"
	mcpAdminKey = "mcp-admin-key-0003"
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
		{Name: "admin", Key: mcpAdminKey, Banks: []string{"*"}, Scopes: []string{"admin"}},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	var logs proctest.LogBuffer
	a, err := start(ctx, cfg, config.AllRoles, newRegistry(), cfg.Log.NewLogger(&logs))
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
	t.Run("every tool", func(t *testing.T) { testEveryTool(t, base) })
	t.Run("typescript sdk", func(t *testing.T) { testMCPTypeScriptClient(t, base) })
	t.Run("mcp_enabled_tools", func(t *testing.T) { testEnabledTools(t, base) })
}

// testEnabledTools: a bank whose configuration sets mcp_enabled_tools (as
// Hindsight's does) lists only those tools and refuses the others.
func testEnabledTools(t *testing.T, base string) {
	const bank = "mcp-limited"
	admin := connectMCP(t, base+"/mcp", mcpAdminKey)
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"create_bank", map[string]any{"bank_id": bank}},
		{"update_bank", map[string]any{"bank_id": bank, "config_updates": map[string]any{"mcp_enabled_tools": []string{"recall", "get_bank"}}}},
	} {
		if out, isErr := callTool(t, admin, c.name, c.args); isErr {
			t.Fatalf("%s: %v", c.name, out)
		}
	}
	limited := connectMCP(t, base+"/mcp/"+bank+"/", mcpAdminKey)
	if names := toolNames(t, limited); !slices.Equal(names, []string{"get_bank", "recall"}) {
		t.Errorf("tools of a bank that enables recall and get_bank: %v", names)
	}
	if out, isErr := callTool(t, limited, "retain", map[string]any{"content": "Not stored."}); !isErr || out["code"] != "tool_not_enabled" {
		t.Errorf("retain where it is not enabled: error=%v %v", isErr, out)
	}
	if out, isErr := callTool(t, limited, "get_bank", nil); isErr {
		t.Errorf("get_bank where it is enabled: %v", out)
	}
}

// testMCPTypeScriptClient runs tests/mcp-ts/client.mjs: the official
// TypeScript SDK's client (@modelcontextprotocol/sdk, pinned by its lock
// file), which Claude Code, Claude Desktop and Cursor build on, does
// sync_retain → recall → reflect on its key's bank and is refused on the
// other.
func testMCPTypeScriptClient(t *testing.T, base string) {
	dir := tsClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "client.mjs"))
	cmd.Env = append(os.Environ(), "MCP_BASE="+base, "MCP_BANK="+aliceBank, "MCP_OTHER="+bobBank, "MCP_KEY="+mcpAliceKey)
	out, err := cmd.CombinedOutput()
	t.Logf("typescript client:\n%s", out)
	if err != nil {
		t.Fatalf("the TypeScript SDK client failed: %v", err)
	}
}

// tsClient installs tests/mcp-ts (npm ci from its lock file) into the
// user cache directory, once per lock file, with the current client.mjs
// beside it; it returns that directory.
func tsClient(t *testing.T) string {
	return toolcache.NPM(t, "mcp-ts", filepath.Join("..", "..", "tests", "mcp-ts"), "client.mjs")
}

// testEveryTool calls each of the 39 tools once, in multi-bank mode with
// an admin key on a bank of its own, so that a tool whose route or
// arguments the API does not take fails here.
func testEveryTool(t *testing.T, base string) {
	cs := connectMCP(t, base+"/mcp", mcpAdminKey)
	const bank = "mcp-tools"
	called := map[string]bool{}
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		if args == nil {
			args = map[string]any{}
		}
		if name != "list_banks" {
			args["bank_id"] = bank
		}
		called[name] = true
		out, isErr := callTool(t, cs, name, args)
		if isErr {
			t.Fatalf("%s %v: %v", name, args, out)
		}
		return out
	}
	str := func(m map[string]any, key string) string {
		t.Helper()
		s, ok := m[key].(string)
		if !ok || s == "" {
			t.Fatalf("no %s in %v", key, m)
		}
		return s
	}

	if out := call("create_bank", map[string]any{"name": "Tools", "mission": "Tell tools apart."}); out["name"] != "Tools" {
		t.Errorf("create_bank: %v", out)
	}
	if out := call("update_bank", map[string]any{"name": "Tools 2", "config_updates": map[string]any{"disposition_skepticism": 4}}); out["name"] != "Tools 2" {
		t.Errorf("update_bank: %v", out)
	}
	if out := call("get_bank", nil); out["bank_id"] != bank {
		t.Errorf("get_bank: %v", out)
	}
	call("get_bank_stats", nil)
	if out := call("list_banks", map[string]any{"query": "mcp-tools"}); !strings.Contains(mustJSON(t, out), bank) {
		t.Errorf("list_banks: %v", out)
	}

	ids := call("sync_retain", map[string]any{"content": "Carol plays the cello in Porto every Sunday.", "document_id": "doc-1", "tags": []string{"music"}})["memory_ids"].([]any)
	if len(ids) == 0 {
		t.Fatal("sync_retain stored nothing")
	}
	mem := ids[0].(string)
	op := str(call("retain", map[string]any{"content": "Dave plays chess.", "document_id": "doc-2", "update_mode": "append"}), "operation_id")
	// Poll the async retain as an agent would, until its item is stored,
	// so that nothing below races its ingest.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		out := call("get_operation", map[string]any{"operation_id": op})
		if out["operation_type"] != "retain" {
			t.Fatalf("get_operation: %v", out)
		}
		if items, _ := out["items"].([]any); len(items) == 1 && items[0].(map[string]any)["status"] == "persisted" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the async retain was not persisted within a minute: %v", out)
		}
	}
	call("list_operations", map[string]any{"type": "retain"})
	called["cancel_operation"] = true
	if out, isErr := callTool(t, cs, "cancel_operation", map[string]any{"operation_id": op, "bank_id": bank}); isErr && out["status"] != float64(http.StatusConflict) {
		t.Errorf("cancel_operation: %v (a finished retain may refuse with 409, nothing else)", out)
	}

	if out := call("list_memories", map[string]any{"tags": []string{"music"}}); out["total"].(float64) < 1 {
		t.Errorf("list_memories: %v", out)
	}
	if out := call("get_memory", map[string]any{"memory_id": mem}); out["id"] != mem {
		t.Errorf("get_memory: %v", out)
	}
	if out := call("update_memory", map[string]any{"memory_id": mem, "context": "music"}); out["context"] != "music" {
		t.Errorf("update_memory: %v", out)
	}
	if out := call("invalidate_memory", map[string]any{"memory_id": mem, "reason": "checking"}); out["state"] != "invalidated" {
		t.Errorf("invalidate_memory: %v", out)
	}
	if out := call("invalidate_memory", map[string]any{"memory_id": mem, "restore": true}); out["state"] != "valid" {
		t.Errorf("invalidate_memory restore: %v", out)
	}
	if out := call("list_tags", nil); !strings.Contains(mustJSON(t, out), "music") {
		t.Errorf("list_tags: %v", out)
	}
	if out := call("list_documents", map[string]any{"q": "doc-1"}); !strings.Contains(mustJSON(t, out), "doc-1") {
		t.Errorf("list_documents: %v", out)
	}
	if out := call("get_document", map[string]any{"document_id": "doc-1"}); out["id"] != "doc-1" {
		t.Errorf("get_document: %v", out)
	}

	dir := str(call("create_directive", map[string]any{"name": "Brief", "content": "Answer in one sentence."}), "id")
	if out := call("list_directives", nil); out["total"] != float64(1) {
		t.Errorf("list_directives: %v", out)
	}
	call("delete_directive", map[string]any{"directive_id": dir})

	mm := str(call("create_mental_model", map[string]any{"name": "Music", "source_query": "Who plays what?", "tags_match": "any"}), "mental_model_id")
	if out := call("get_mental_model", map[string]any{"mental_model_id": mm, "detail": "metadata"}); out["name"] != "Music" || out["content"] != nil {
		t.Errorf("get_mental_model metadata: %v", out)
	}
	if out := call("list_mental_models", nil); out["total"] != float64(1) || strings.Contains(mustJSON(t, out), `"content"`) {
		t.Errorf("list_mental_models: %v", out)
	}
	if out := call("update_mental_model", map[string]any{"mental_model_id": mm, "name": "Instruments"}); out["name"] != "Instruments" {
		t.Errorf("update_mental_model: %v", out)
	}
	str(call("refresh_mental_model", map[string]any{"mental_model_id": mm}), "operation_id")
	call("clear_mental_model", map[string]any{"mental_model_id": mm})
	call("delete_mental_model", map[string]any{"mental_model_id": mm})

	folder := str(call("create_knowledge_folder", map[string]any{"name": "People"}), "id")
	page := str(call("create_knowledge_page", map[string]any{"name": "Carol", "source_query": "What does Carol do?", "parent_id": folder}), "page_id")
	if out := call("get_knowledge_base_tree", nil); !strings.Contains(mustJSON(t, out), page) {
		t.Errorf("get_knowledge_base_tree: %v", out)
	}
	call("search_knowledge_base", map[string]any{"query": "Carol"})
	if out := call("get_knowledge_page", map[string]any{"page_id": page}); out["id"] != page {
		t.Errorf("get_knowledge_page: %v", out)
	}
	call("update_knowledge_node", map[string]any{"node_id": page, "parent_id": "root"})
	call("delete_knowledge_node", map[string]any{"node_id": page})
	call("delete_knowledge_node", map[string]any{"node_id": folder})

	if out := call("recall", map[string]any{"query": "Who plays the cello?", "include_chunks": true}); !strings.Contains(mustJSON(t, out), "cello") {
		t.Errorf("recall: %v", out)
	}
	call("reflect", map[string]any{"query": "Who plays the cello?", "include_trace": true})
	if out := call("clear_memories", map[string]any{"type": "observation"}); out["status"] != "cleared" {
		t.Errorf("clear_memories: %v", out)
	}
	if out := call("delete_document", map[string]any{"document_id": "doc-1"}); out["status"] != "deleted" {
		t.Errorf("delete_document: %v", out)
	}
	if out := call("delete_bank", nil); out["status"] != "deleted" {
		t.Errorf("delete_bank: %v", out)
	}
	var missed []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if !called[tool.Name] {
			missed = append(missed, tool.Name)
		}
	}
	if len(missed) > 0 {
		t.Errorf("tools never called: %v", missed)
	}
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
		var stderr proctest.LogBuffer
		done := make(chan error, 1)
		t.Setenv("MEMSTREAM_API_KEY", tc.key)
		go func() {
			done <- cmdMCP(ctx, []string{"--api", base, "--bank", tc.bank}, inR, outW, &stderr)
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

// TestMCPCommand: memstream mcp explains itself, refuses what it cannot
// use, and when the API is down says so in each tool's answer instead of
// failing the session.
func TestMCPCommand(t *testing.T) {
	var stderr bytes.Buffer
	if err := cmdMCP(t.Context(), []string{"--help"}, strings.NewReader(""), io.Discard, &stderr); !errors.Is(err, flag.ErrHelp) ||
		!strings.Contains(stderr.String(), "single-bank") || !strings.Contains(stderr.String(), "MEMSTREAM_API_KEY") {
		t.Errorf("--help: %v\n%s", err, stderr.String())
	}
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"extra"}, "no arguments"},
		{[]string{"--api", "ftp://x"}, "not an http(s) URL"},
		{[]string{"--api", "http://127.0.0.1:1", "--bank", "no spaces"}, "bank"},
	} {
		err := cmdMCP(t.Context(), tc.args, strings.NewReader(""), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%v: %v, want an error containing %q", tc.args, err, tc.wantErr)
		}
	}

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var down proctest.LogBuffer
	done := make(chan error, 1)
	go func() {
		done <- cmdMCP(t.Context(), []string{"--api", "http://127.0.0.1:1", "--bank", "alice"}, inR, outW, &down)
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, isErr := callTool(t, cs, "recall", map[string]any{"query": "anything"})
	if !isErr || out["status"] != float64(http.StatusServiceUnavailable) || !strings.Contains(out["error"].(string), "is memstream serve running") {
		t.Errorf("recall with the API down: error=%v %v", isErr, out)
	}
	_ = cs.Close()
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("memstream mcp: %v", err)
	}
	if !strings.Contains(down.String(), "does not answer") {
		t.Errorf("no warning that the API is down on stderr:\n%s", down.String())
	}
}
