package apiclient

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// DialAddr is where a client reaches a server listening on addr: a
// wildcard host becomes loopback.
func DialAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// WarnIfDown logs a warning when the API at base does not answer
// /health within two seconds: a long-lived client (the MCP stdio session)
// starts anyway, since the server may start later, but says so where its
// user looks.
func WarnIfDown(ctx context.Context, base string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
	if err != nil {
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Warn("the memstream API does not answer; tool calls fail until it does (is memstream serve running?)", "api", base, "error", err)
		return
	}
	resp.Body.Close()
}
