package main

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
)

// opsServer serves /health, /health/ready and /metrics for processes that
// do not run the api role (ingest-only or worker-only replicas), so that
// orchestrators can probe and scrape every replica alike.
type opsServer struct {
	addr     string
	ready    map[string]func(context.Context) error
	gatherer prometheus.Gatherer
	draining atomic.Bool
}

func (o *opsServer) handler() http.Handler {
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

// serve runs until ctx ends; readiness fails first so probes stop routing.
func (o *opsServer) serve(ctx context.Context) error {
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("http listen %s: %w", o.addr, err)
	}
	srv := &http.Server{Handler: o.handler(), ReadHeaderTimeout: 10 * time.Second}
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
