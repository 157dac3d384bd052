// Package ops serves /health, /health/ready and /metrics for memstream
// processes that do not run the api role (ingest-only or worker-only
// replicas), so that orchestrators can probe and scrape every replica
// alike; the api role serves the same routes itself (package recallapi).
package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/memstream/memstream/internal/lifetime"
)

// Deps are what the server reports on.
type Deps struct {
	// Gatherer is scraped at /metrics.
	Gatherer prometheus.Gatherer
	// Ready are the checks of /health/ready, by name.
	Ready map[string]func(context.Context) error
}

// Config says where to listen.
type Config struct {
	Addr string
}

// Server is the ops HTTP server.
type Server struct {
	addr     string
	ready    map[string]func(context.Context) error
	gatherer prometheus.Gatherer
	draining atomic.Bool
	life     lifetime.Stopper
}

// New returns a server; Run starts it.
func New(deps Deps, cfg Config) (*Server, error) {
	if deps.Gatherer == nil {
		return nil, errors.New("ops: nil Gatherer")
	}
	return &Server{addr: cfg.Addr, ready: deps.Ready, gatherer: deps.Gatherer}, nil
}

// SetDraining makes /health/ready fail, so that probes stop routing to a
// process that is shutting down.
func (o *Server) SetDraining() { o.draining.Store(true) }

// Handler serves the routes.
func (o *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		writeOpsJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /health/ready", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		ok, checks := !o.draining.Load(), map[string]string{}
		if !ok {
			checks["server"] = "draining"
		}
		for name, check := range o.ready {
			if err := check(ctx); err != nil {
				ok, checks[name] = false, err.Error()
			} else {
				checks[name] = "ok"
			}
		}
		status := http.StatusOK
		if !ok {
			status = http.StatusServiceUnavailable
		}
		writeOpsJSON(w, status, map[string]any{"ready": ok, "checks": checks})
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(o.gatherer, promhttp.HandlerOpts{}))
	return mux
}

func writeOpsJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Run serves until ctx ends or Stop is called; readiness fails first so
// probes stop routing, then the server shuts down within five seconds.
func (o *Server) Run(ctx context.Context) error {
	ctx, end, ok := o.life.Begin(ctx)
	defer end()
	if !ok {
		return nil
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("http listen %s: %w", o.addr, err)
	}
	srv := &http.Server{Handler: o.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	o.draining.Store(true)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Stop ends Run and waits for its shutdown, or until ctx ends.
func (o *Server) Stop(ctx context.Context) error { return o.life.Stop(ctx) }
