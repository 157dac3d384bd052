package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/memstream/memstream/recallapi"
)

// caller makes one tool's calls to the HTTP API, as the MCP client: with
// its Authorization header, on the bank the tool resolved.
type caller struct {
	api  http.Handler
	auth string // the Authorization header value to send, if any
	bank string
}

// APIError is an error answer of the HTTP API, passed on to the MCP
// client as the tool's error.
type APIError struct {
	Status  int
	Code    string
	Message string
	Field   string
}

func (e *APIError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s (%s): %s", e.Code, e.Field, e.Message)
	}
	return e.Code + ": " + e.Message
}

// bankPath is the API path of the caller's bank, with more path segments
// (escaped) after it.
func (c *caller) bankPath(segments ...string) string {
	var b strings.Builder
	b.WriteString("/v1/default/banks/")
	b.WriteString(url.PathEscape(c.bank))
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// do calls the API route method path (with query q and a JSON body unless
// body is nil) and decodes a 2xx answer into out (a pointer, or nil). A
// non-2xx answer comes back as *APIError. It returns the status.
func (c *caller) do(ctx context.Context, method, path string, q url.Values, body, out any) (int, error) {
	var rd *bytes.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(raw)
	} else {
		rd = bytes.NewReader(nil)
	}
	target := path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	// The API audits these calls under the mcp transport.
	req, err := http.NewRequestWithContext(recallapi.WithTransport(ctx, "mcp"), method, "http://memstream"+target, rd)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.RemoteAddr = "127.0.0.1:0"
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	rec := &response{header: http.Header{}}
	c.api.ServeHTTP(rec, req)
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	if status >= 300 {
		return status, apiError(status, rec.body.Bytes())
	}
	if out != nil && rec.body.Len() > 0 {
		if err := json.Unmarshal(rec.body.Bytes(), out); err != nil {
			return status, fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
		}
	}
	return status, nil
}

// enabledTools reads the bank's mcp_enabled_tools: the tools it allows,
// and whether it limits them at all. When the configuration cannot be read
// (no such bank yet, a key without read access), nothing is limited here:
// the tool's own API call gives the real answer.
func (c *caller) enabledTools(ctx context.Context) (map[string]bool, bool) {
	var view struct {
		Config struct {
			Tools *[]string `json:"mcp_enabled_tools"`
		} `json:"config"`
	}
	if _, err := c.do(ctx, http.MethodGet, c.bankPath("config"), nil, nil, &view); err != nil || view.Config.Tools == nil {
		return nil, false
	}
	on := make(map[string]bool, len(*view.Config.Tools))
	for _, t := range *view.Config.Tools {
		on[t] = true
	}
	return on, true
}

// apiError reads the API's error shape {"error": {code, message, field}};
// anything else (a proxy's page) is kept as the message.
func apiError(status int, raw []byte) *APIError {
	var e struct {
		Error struct{ Code, Message, Field string } `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
		return &APIError{Status: status, Code: e.Error.Code, Message: e.Error.Message, Field: e.Error.Field}
	}
	msg := strings.TrimSpace(string(raw))
	if len(msg) > 300 {
		msg = msg[:300]
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &APIError{Status: status, Code: strings.ToLower(strings.ReplaceAll(http.StatusText(status), " ", "_")), Message: msg}
}

// response buffers what a route writes.
type response struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *response) Header() http.Header { return r.header }

func (r *response) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

func (r *response) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
