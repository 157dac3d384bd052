package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// connect runs a server in memory and returns a client session to it.
func connect(t *testing.T, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

type hindsightArg struct {
	Required bool `json:"required"`
	Default  any  `json:"default"`
}

// TestToolsMatchHindsight holds the tools, as a client lists them, to
// Hindsight 1.1.0's (testdata/hindsight_tools.json, read from its
// mcp_tools.py by testdata/hindsight_tools.py): the same tools in each
// mode, the same argument names, the same required ones, the same
// defaults.
func TestToolsMatchHindsight(t *testing.T) {
	raw, err := os.ReadFile("testdata/hindsight_tools.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]map[string]map[string]hindsightArg
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	s, err := New(Deps{API: http.NotFoundHandler()}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for mode, srv := range map[string]*mcp.Server{"single": s.single, "multi": s.multi} {
		got := map[string]*mcp.Tool{}
		for tool, err := range connect(t, srv).Tools(t.Context(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			got[tool.Name] = tool
		}
		var wantNames []string
		for name, modes := range want {
			if _, ok := modes[mode]; ok {
				wantNames = append(wantNames, name)
			}
		}
		sort.Strings(wantNames)
		gotNames := slices.Sorted(func(yield func(string) bool) {
			for n := range got {
				if !yield(n) {
					return
				}
			}
		})
		if !slices.Equal(gotNames, wantNames) {
			t.Errorf("%s-bank tools:\n got %v\nwant %v", mode, gotNames, wantNames)
		}
		for _, name := range wantNames {
			tool := got[name]
			if tool == nil {
				continue
			}
			if tool.Description == "" || tool.Annotations == nil {
				t.Errorf("%s/%s has no description or annotations", mode, name)
			}
			schema := tool.InputSchema.(map[string]any)
			props, _ := schema["properties"].(map[string]any)
			var required []string
			for _, r := range asSlice(schema["required"]) {
				required = append(required, r.(string))
			}
			for arg, w := range want[name][mode] {
				p, ok := props[arg].(map[string]any)
				if !ok {
					t.Errorf("%s/%s: no argument %s", mode, name, arg)
					continue
				}
				if slices.Contains(required, arg) != w.Required {
					t.Errorf("%s/%s: %s required=%v, Hindsight %v", mode, name, arg, !w.Required, w.Required)
				}
				if w.Default != nil && !reflect.DeepEqual(p["default"], w.Default) {
					t.Errorf("%s/%s: %s default %v, Hindsight %v", mode, name, arg, p["default"], w.Default)
				}
			}
			for arg := range props {
				if _, ok := want[name][mode][arg]; !ok {
					t.Errorf("%s/%s: argument %s is not Hindsight's", mode, name, arg)
				}
			}
		}
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// TestToolCallsTheAPIAsTheCaller: a tool calls the API's route on the
// session's bank with the caller's key, and an API error comes back as a
// tool error with Hindsight's shape and the API's code, field and status.
func TestToolCallsTheAPIAsTheCaller(t *testing.T) {
	var got []string
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery+" "+r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.Path, "/banks/other/") {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"error":{"code":"forbidden","message":"this key may not read this bank"}}`))
			return
		}
		if strings.HasSuffix(r.URL.Path, "/config") {
			tools := "null"
			if strings.Contains(r.URL.Path, "/banks/limited/") {
				tools = `["recall"]`
			}
			_, _ = w.Write([]byte(`{"config":{"mcp_enabled_tools":` + tools + `}}`))
			return
		}
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		_ = json.NewEncoder(w).Encode(map[string]any{"results": []any{}, "echo": body})
	})
	s, err := New(Deps{API: api}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	cs := func(path string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		tr := &mcp.StreamableClientTransport{Endpoint: srv.URL + path, MaxRetries: -1, DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
				r.Header.Set("Authorization", "Bearer k1")
				r.Header.Set(bankHeader, "spoofed") // dropped: the path decides
				return http.DefaultTransport.RoundTrip(r)
			})}}
		s, err := c.Connect(t.Context(), tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}

	res, err := cs("/mcp/alice/").CallTool(t.Context(), &mcp.CallToolParams{Name: "recall",
		Arguments: map[string]any{"query": "where", "types": `["world"]`, "explanation": "dropped", "budget": "MID"}})
	if err != nil || res.IsError {
		t.Fatalf("recall: %v %+v", err, res)
	}
	echo := res.StructuredContent.(map[string]any)["echo"].(map[string]any)
	if echo["query"] != "where" || echo["budget"] != "mid" || echo["max_tokens"] != float64(4096) ||
		!reflect.DeepEqual(echo["types"], []any{"world"}) || echo["explanation"] != nil {
		t.Errorf("recall sent %v", echo)
	}
	inc := echo["include"].(map[string]any)
	if inc["entities"] != nil || inc["chunks"] != nil {
		t.Errorf("recall include %v: entities and chunks off unless asked, as in Hindsight's tool", inc)
	}

	res, err = cs("/mcp").CallTool(t.Context(), &mcp.CallToolParams{Name: "recall",
		Arguments: map[string]any{"query": "where", "bank_id": "other"}})
	if err != nil || !res.IsError {
		t.Fatalf("recall on another bank: %v %+v", err, res)
	}
	var e map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &e); err != nil {
		t.Fatal(err)
	}
	if e["code"] != "forbidden" || e["status"] != float64(403) || e["error"] != "this key may not read this bank" || e["results"] == nil {
		t.Errorf("error shape %v", e)
	}
	want := []string{
		"GET /v1/default/banks/alice/config? Bearer k1", // mcp_enabled_tools
		"POST /v1/default/banks/alice/memories/recall? Bearer k1",
		"GET /v1/default/banks/other/config? Bearer k1",
		"POST /v1/default/banks/other/memories/recall? Bearer k1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("API calls:\n got %q\nwant %q", got, want)
	}

	// A bank whose mcp_enabled_tools names only recall lists only recall,
	// and refuses the others without calling their routes.
	limited := cs("/mcp/limited/")
	var names []string
	for tool, err := range limited.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, []string{"recall"}) {
		t.Errorf("tools of a bank limited to recall: %v", names)
	}
	got = nil
	res, err = limited.CallTool(t.Context(), &mcp.CallToolParams{Name: "retain", Arguments: map[string]any{"content": "x"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "tool_not_enabled") {
		t.Errorf("retain on a bank that does not enable it: %v %+v", err, res)
	}
	if !slices.Equal(got, []string{"GET /v1/default/banks/limited/config? Bearer k1"}) {
		t.Errorf("a disabled tool called %q", got)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestHandlerChecksKeysAndPaths: with keys configured a request needs a
// known one (401 in the API's shape otherwise), and only /mcp and
// /mcp/{bank_id}/ are endpoints.
func TestHandlerChecksKeysAndPaths(t *testing.T) {
	s, err := New(Deps{API: http.NotFoundHandler(), Auth: keys{"good": "k"}}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, auth string
		status     int
		code       string
	}{
		{"/mcp", "", 401, "unauthorized"},
		{"/mcp/alice/", "Bearer bad", 401, "unauthorized"},
		{"/mcp/alice/", "Basic good", 401, "unauthorized"},
		{"/mcp/al ice/", "Bearer good", 400, "bad_request"},
		{"/mcp/alice/extra", "Bearer good", 404, "route_not_found"},
		{"/mcpx", "Bearer good", 404, "route_not_found"},
	} {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1"+strings.ReplaceAll(tc.path, " ", "%20"), strings.NewReader(`{}`))
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		var e struct{ Error struct{ Code string } }
		_ = json.Unmarshal(rec.Body.Bytes(), &e)
		if rec.Code != tc.status || e.Error.Code != tc.code {
			t.Errorf("%s %q: %d %s, want %d %s", tc.path, tc.auth, rec.Code, rec.Body.String(), tc.status, tc.code)
		}
	}
}

type keys map[string]string // token → name

func (k keys) AuthRequired() bool { return len(k) > 0 }
func (k keys) Authenticate(tok string) (string, bool) {
	n, ok := k[tok]
	return n, ok
}

// TestArgumentsAreTolerant: unknown arguments and nulls are dropped, lists
// and objects sent as JSON text are decoded, a bare string stands for a
// one-tag list, defaults fill the rest, and what is still wrong is
// refused naming the argument.
func TestArgumentsAreTolerant(t *testing.T) {
	var retain tool
	for _, tl := range tools() {
		if tl.name == "retain" {
			retain = tl
		}
	}
	schema, err := inputSchema(retain.in, retain.defaults, false)
	if err != nil {
		t.Fatal(err)
	}
	args, err := newArguments(schema, retain.defaults)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in      string
		want    map[string]any
		wantErr string
	}{
		{in: `{"content":"x","reasoning":"dropped","timestamp":null,"tags":"[\"a\",\"b\"]","metadata":"{\"k\":\"v\"}"}`,
			want: map[string]any{"content": "x", "context": "general", "tags": []any{"a", "b"}, "metadata": map[string]any{"k": "v"}}},
		{in: `{"content":"x","tags":"solo","context":"work"}`, want: map[string]any{"content": "x", "context": "work", "tags": []any{"solo"}}},
		{in: `{"context":"work"}`, wantErr: "content"},
		{in: `{"content":7}`, wantErr: "content"},
		{in: `[1]`, wantErr: "JSON object"},
	} {
		got, err := args.prepare(json.RawMessage(tc.in))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want one naming %s", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestPathBank(t *testing.T) {
	for p, want := range map[string]string{"/mcp": "", "/mcp/": "", "/mcp/alice": "alice", "/mcp/alice/": "alice"} {
		if got, ok := pathBank(p); !ok || got != want {
			t.Errorf("pathBank(%q) = %q, %v; want %q", p, got, ok, want)
		}
	}
	for _, p := range []string{"/mcpx", "/mcp/a/b", "/other"} {
		if _, ok := pathBank(p); ok {
			t.Errorf("pathBank(%q) accepted", p)
		}
	}
}

// TestServeStdioEndsWithTheClient: a stdio session ends cleanly when the
// client closes its end, and refuses a bank id the API would refuse.
func TestServeStdioEndsWithTheClient(t *testing.T) {
	s, err := New(Deps{API: http.NotFoundHandler()}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ServeStdio(t.Context(), nil, nil, Session{Bank: "no spaces"}); err == nil || !strings.Contains(err.Error(), "bank") {
		t.Errorf("bad bank: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() { done <- s.ServeStdio(ctx, inR, outW, Session{Bank: "alice"}) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = cs.Close()
	_ = inW.Close()
	if err := <-done; err != nil {
		t.Errorf("ServeStdio after the client left: %v", err)
	}
	_ = outW.Close()
}

// TestCompatibilityDocListsTheTools holds docs/COMPATIBILITY.md's MCP tool
// table to the tools served.
func TestCompatibilityDocListsTheTools(t *testing.T) {
	raw, err := os.ReadFile("../docs/COMPATIBILITY.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, "<!-- mcp:tools:begin"), strings.Index(doc, "<!-- mcp:tools:end -->")
	if i < 0 || j < i {
		t.Fatal("docs/COMPATIBILITY.md has no mcp:tools table")
	}
	var documented []string
	for _, line := range strings.Split(doc[i:j], "\n") {
		if strings.HasPrefix(line, "| `") {
			documented = append(documented, strings.Trim(strings.SplitN(line, "|", 3)[1], " `"))
		}
	}
	var served []string
	for _, tl := range tools() {
		served = append(served, tl.name)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Errorf("docs/COMPATIBILITY.md lists\n %v\nthe server serves\n %v", documented, served)
	}
}
