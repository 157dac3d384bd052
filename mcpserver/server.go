package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/memstream/memstream/event"
)

// Authenticator checks bearer keys as the HTTP API does
// (*recallapi.Server).
type Authenticator interface {
	// AuthRequired reports whether keys are configured at all.
	AuthRequired() bool
	// Authenticate tells whether token is a configured key.
	Authenticate(token string) (name string, ok bool)
}

// Deps are the server's collaborators.
type Deps struct {
	// API is memstream's HTTP API, whose routes the tools call: the
	// in-process recallapi handler, or Remote for a server elsewhere.
	API http.Handler
	// Auth checks the key of each HTTP request to /mcp; nil leaves that to
	// the API, which checks every call a tool makes anyway.
	Auth Authenticator
	// Registerer, when set, gets memstream_mcp_tool_calls_total and
	// memstream_mcp_tool_seconds.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Config configures the server.
type Config struct {
	// Version is reported to clients in the initialize handshake.
	Version string
	// DefaultBank is the bank of a multi-bank tool call without bank_id
	// and without an X-Bank-Id header (Hindsight's default: "default").
	DefaultBank string
	// MaxRequestBytes bounds an HTTP request body (default 10 MiB, the
	// API's http.max_body_bytes default).
	MaxRequestBytes int64
}

// WithDefaults fills the zero fields.
func (c Config) WithDefaults() Config {
	if c.DefaultBank == "" {
		c.DefaultBank = "default"
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = 10 << 20
	}
	return c
}

func (c Config) validate() error {
	if !event.BankIDPattern.MatchString(c.DefaultBank) {
		return fmt.Errorf("mcpserver: Config.DefaultBank %q must match %s", c.DefaultBank, event.BankIDPattern)
	}
	return nil
}

// Server is memstream's MCP server.
type Server struct {
	d   Deps
	cfg Config
	log *slog.Logger

	multi, single *mcp.Server // the HTTP modes
	http          http.Handler

	calls   *prometheus.CounterVec
	seconds *prometheus.HistogramVec
}

// bankHeader carries the bank of a /mcp/{bank_id}/ request from Handler to
// the tools. Handler sets it from the path and drops any a client sent.
const bankHeader = "Memstream-Mcp-Bank"

// New builds the server; Handler serves it over HTTP, ServeStdio over
// stdio.
func New(d Deps, cfg Config) (*Server, error) {
	if d.API == nil {
		return nil, errors.New("mcpserver: Deps.API is required")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{d: d, cfg: cfg, log: d.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "memstream_mcp_tool_calls_total",
		Help: "MCP tool calls by tool and outcome (ok, error)."}, []string{"tool", "outcome"})
	s.seconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "memstream_mcp_tool_seconds",
		Help: "MCP tool call latency by tool.", Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12)}, []string{"tool"})
	if d.Registerer != nil {
		for _, c := range []prometheus.Collector{s.calls, s.seconds} {
			if err := d.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("mcpserver: register metrics: %w", err)
			}
		}
	}
	fromHeader := func(extra *mcp.RequestExtra, name string) string {
		if extra == nil || extra.Header == nil {
			return ""
		}
		return extra.Header.Get(name)
	}
	auth := func(extra *mcp.RequestExtra) string { return fromHeader(extra, "Authorization") }
	var err error
	s.single, err = s.newServer(binding{single: true, auth: auth,
		bank: func(extra *mcp.RequestExtra) string { return fromHeader(extra, bankHeader) }})
	if err != nil {
		return nil, err
	}
	s.multi, err = s.newServer(binding{auth: auth, bank: func(extra *mcp.RequestExtra) string {
		if b := strings.TrimSpace(fromHeader(extra, "X-Bank-Id")); b != "" {
			return b
		}
		return cfg.DefaultBank
	}})
	if err != nil {
		return nil, err
	}
	// Stateless: any API replica can answer any request, with no session
	// to pin a client to one; the tools need nothing from the client
	// between calls.
	s.http = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if r.Header.Get(bankHeader) != "" {
			return s.single
		}
		return s.multi
	}, &mcp.StreamableHTTPOptions{Stateless: true, Logger: s.log, MaxRequestBodyBytes: cfg.MaxRequestBytes})
	return s, nil
}

// binding is how one MCP server's tools find their bank and key.
type binding struct {
	// single: the tools take no bank_id; bank management tools are left out.
	single bool
	// bank is the session's bank for a call that names none.
	bank func(*mcp.RequestExtra) string
	// auth is the Authorization header value to call the API with.
	auth func(*mcp.RequestExtra) string
}

const instructions = `memstream is long-term memory for agents. Call recall before answering anything that may depend on what the user said before; call retain (or sync_retain, which waits until the memory is stored) whenever the user shares facts, preferences, plans or decisions worth keeping; call reflect for a reasoned answer over everything the bank knows.`

func (s *Server) newServer(b binding) (*mcp.Server, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "memstream", Title: "memstream memory", Version: s.cfg.Version},
		&mcp.ServerOptions{Instructions: instructions, Logger: s.log, Capabilities: &mcp.ServerCapabilities{}})
	for _, t := range tools() {
		if t.multiOnly && b.single {
			continue
		}
		schema, err := inputSchema(t.in, t.defaults, !b.single && !t.ownBank && !t.noBank)
		if err != nil {
			return nil, fmt.Errorf("mcpserver: tool %s: %w", t.name, err)
		}
		args, err := newArguments(schema, t.defaults)
		if err != nil {
			return nil, fmt.Errorf("mcpserver: tool %s: %w", t.name, err)
		}
		srv.AddTool(&mcp.Tool{Name: t.name, Description: t.desc, InputSchema: schema, Annotations: t.annotations()},
			s.handler(t, args, b))
	}
	srv.AddReceivingMiddleware(s.filterTools(b))
	return srv, nil
}

// handler runs one tool call: arguments, bank, the API calls, and the
// answer or the error as the tool's result.
func (s *Server) handler(t tool, args *arguments, b binding) mcp.ToolHandler {
	run := s.call(t, args, b)
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		start := time.Now()
		res := run(ctx, req)
		outcome := "ok"
		if res.IsError {
			outcome = "error"
		}
		s.calls.WithLabelValues(t.name, outcome).Inc()
		s.seconds.WithLabelValues(t.name).Observe(time.Since(start).Seconds())
		return res, nil
	}
}

func (s *Server) call(t tool, args *arguments, b binding) func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult {
	return func(ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult {
		m, err := args.prepare(req.Params.Arguments)
		if err != nil {
			return s.failure(t, "", err)
		}
		bank, _ := m["bank_id"].(string)
		if !t.ownBank {
			delete(m, "bank_id")
		}
		if bank == "" {
			bank = b.bank(req.Extra)
		}
		if bank == "" && !t.noBank {
			return s.failure(t, "", errors.New("no bank: give bank_id, or connect to /mcp/{bank_id}/"))
		}
		raw, err := json.Marshal(m)
		if err != nil {
			return s.failure(t, bank, err)
		}
		c := &caller{api: s.d.API, auth: b.auth(req.Extra), bank: bank}
		if bank != "" && !t.noBank {
			if on, ok := c.enabledTools(ctx); ok && !on[t.name] {
				return s.failure(t, bank, &APIError{Status: http.StatusForbidden, Code: "tool_not_enabled",
					Message: fmt.Sprintf("tool %s is not enabled for bank %s (its mcp_enabled_tools)", t.name, bank)})
			}
		}
		out, err := t.run(ctx, c, raw)
		if err != nil {
			return s.failure(t, bank, err)
		}
		text, err := json.Marshal(out)
		if err != nil {
			return s.failure(t, bank, err)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: out}
	}
}

// filterTools lists only the tools the session bank's configuration
// enables (mcp_enabled_tools), as Hindsight does; a bank without the key
// (or whose configuration this key cannot read) lists them all.
func (s *Server) filterTools(b binding) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			list, ok := res.(*mcp.ListToolsResult)
			if err != nil || method != "tools/list" || !ok {
				return res, err
			}
			bank := b.bank(req.GetExtra())
			if bank == "" {
				return res, nil
			}
			on, limited := (&caller{api: s.d.API, auth: b.auth(req.GetExtra()), bank: bank}).enabledTools(ctx)
			if !limited {
				return res, nil
			}
			kept := make([]*mcp.Tool, 0, len(list.Tools))
			for _, t := range list.Tools {
				if on[t.Name] {
					kept = append(kept, t)
				}
			}
			out := *list
			out.Tools = kept
			return &out, nil
		}
	}
}

// failure is a tool error as Hindsight's tools shape it ({"error": "…"},
// with the empty collection the tool would have returned), plus the API's
// code, field and status, and isError set so the model sees it failed.
func (s *Server) failure(t tool, bank string, err error) *mcp.CallToolResult {
	body := map[string]any{"error": err.Error()}
	for k, v := range t.errExtra {
		body[k] = v
	}
	var ae *APIError
	if errors.As(err, &ae) {
		body["error"], body["code"], body["status"] = ae.Message, ae.Code, ae.Status
		if ae.Field != "" {
			body["field"] = ae.Field
		}
		if ae.Status >= 500 {
			s.log.Warn("mcp tool failed", slog.String("tool", t.name), slog.String("bank_id", bank), slog.Any("error", err))
		}
	} else {
		s.log.Debug("mcp tool refused", slog.String("tool", t.name), slog.String("bank_id", bank), slog.Any("error", err))
	}
	text, _ := json.Marshal(body)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}
}

// Handler serves MCP's Streamable HTTP transport: /mcp (multi-bank) and
// /mcp/{bank_id} or /mcp/{bank_id}/ (single-bank). Mount it at "/mcp" and
// "/mcp/". With keys configured, a request needs a valid bearer key (401
// otherwise); which banks and scopes it may use is checked by each API
// call a tool makes.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bank, ok := pathBank(r.URL.Path)
		if !ok {
			writeError(w, http.StatusNotFound, "route_not_found", "", "no MCP endpoint at "+r.URL.Path+"; use /mcp or /mcp/{bank_id}/")
			return
		}
		if bank != "" && !event.BankIDPattern.MatchString(bank) {
			writeError(w, http.StatusBadRequest, "bad_request", "bank_id", "bank_id must match "+event.BankIDPattern.String())
			return
		}
		if s.d.Auth != nil && s.d.Auth.AuthRequired() {
			scheme, tok, found := strings.Cut(r.Header.Get("Authorization"), " ")
			tok = strings.TrimSpace(tok)
			if !found || !strings.EqualFold(scheme, "Bearer") || tok == "" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="memstream"`)
				writeError(w, http.StatusUnauthorized, "unauthorized", "", "missing bearer token")
				return
			}
			if _, ok := s.d.Auth.Authenticate(tok); !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="memstream", error="invalid_token"`)
				writeError(w, http.StatusUnauthorized, "unauthorized", "", "unknown bearer token")
				return
			}
		}
		r = r.Clone(r.Context())
		r.Header.Del(bankHeader)
		if bank != "" {
			r.Header.Set(bankHeader, bank)
		}
		// Some clients send no Accept header; the transport requires both
		// types, and either answer suits such a client.
		if a := r.Header.Get("Accept"); r.Method == http.MethodPost && !strings.Contains(a, "text/event-stream") {
			r.Header.Set("Accept", "application/json, text/event-stream")
		}
		s.http.ServeHTTP(w, r)
	})
}

// pathBank reads the bank of /mcp/{bank_id}[/]; "" for /mcp[/]. Deeper
// paths are not MCP endpoints.
func pathBank(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, "/mcp")
	if !ok || (rest != "" && rest[0] != '/') {
		return "", false
	}
	rest = strings.Trim(rest, "/")
	if strings.Contains(rest, "/") {
		return "", false
	}
	return rest, true
}

func writeError(w http.ResponseWriter, status int, code, field, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	e := map[string]string{"code": code, "message": msg}
	if field != "" {
		e["field"] = field
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": e})
}

// Session is how a stdio session calls the API.
type Session struct {
	// Bank, when set, makes the session single-bank: the tools act on it
	// and take no bank_id. Empty: multi-bank.
	Bank string
	// DefaultBank is a multi-bank session's bank for calls without bank_id
	// (default Config.DefaultBank).
	DefaultBank string
	// Key is the bearer key sent with every API call; empty when the API
	// has no keys.
	Key string
}

// ServeStdio serves one MCP session over newline-delimited JSON-RPC on in
// and out (a local client's stdin and stdout) until the client closes it
// or ctx ends.
func (s *Server) ServeStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser, sess Session) error {
	def := sess.DefaultBank
	if def == "" {
		def = s.cfg.DefaultBank
	}
	for _, b := range []struct{ field, v string }{{"bank", sess.Bank}, {"default bank", def}} {
		if b.v != "" && !event.BankIDPattern.MatchString(b.v) {
			return fmt.Errorf("mcp: %s %q must match %s", b.field, b.v, event.BankIDPattern)
		}
	}
	auth := ""
	if sess.Key != "" {
		auth = "Bearer " + sess.Key
	}
	b := binding{single: sess.Bank != "", auth: func(*mcp.RequestExtra) string { return auth },
		bank: func(*mcp.RequestExtra) string {
			if sess.Bank != "" {
				return sess.Bank
			}
			return def
		}}
	srv, err := s.newServer(b)
	if err != nil {
		return err
	}
	err = srv.Run(ctx, &mcp.IOTransport{Reader: in, Writer: out})
	if err != nil && (errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || ctx.Err() != nil) {
		return nil
	}
	return err
}
