package recallapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
)

// What another front end on the API's address (the MCP server) needs from
// the API: its key check, a place on its mux, and a way to have its calls
// audited under its own transport name. Everything else such a front end
// does goes through Handler, so its auth, bank scoping, validation and
// answers are the routes' own.

// AuthRequired reports whether bearer keys are configured (auth.keys);
// without them every route is open, and the server is loopback-only.
func (s *Server) AuthRequired() bool { return len(s.keys) > 0 }

// Authenticate tells whether token is one of the configured keys, as the
// routes check it (SHA-256, constant-time compare), and returns the key's
// name. It says nothing about banks or scopes: each route checks those.
func (s *Server) Authenticate(token string) (name string, ok bool) {
	k := s.keyFor(token)
	if k == nil {
		return "", false
	}
	return k.name, true
}

// keyFor finds the configured key whose hash matches token, comparing
// every key in constant time so that timing reveals nothing.
func (s *Server) keyFor(token string) *apiKey {
	h := sha256.Sum256([]byte(token))
	var key *apiKey
	for i := range s.keys {
		if subtle.ConstantTimeCompare(h[:], s.keys[i].hash[:]) == 1 {
			key = &s.keys[i]
		}
	}
	return key
}

// Mount serves h at pattern on the API's address, beside the route table:
// h does its own authentication, is not in /openapi.json and is not cut at
// the API's request timeout. Call Mount before Serve.
func (s *Server) Mount(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
}

type transportCtx struct{}

// WithTransport marks requests made with ctx as coming through another
// transport than plain HTTP (for example "mcp"): the audit log records it.
func WithTransport(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, transportCtx{}, name)
}

func transportOf(ctx context.Context) string {
	if t, ok := ctx.Value(transportCtx{}).(string); ok && t != "" {
		return t
	}
	return "http"
}
