package ops

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memstream/memstream/internal/lifetimetest"
)

func TestOpsServerReadiness(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "memstream_test_things_total", Help: "x"})
	reg.MustRegister(c)
	dbUp := true
	o, err := New(Deps{Gatherer: reg, Ready: map[string]func(context.Context) error{
		"database": func(context.Context) error {
			if dbUp {
				return nil
			}
			return errors.New("connection refused")
		},
	}}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	h := o.Handler()
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Code, rec.Body.String()
	}
	if code, _ := get("/health/ready"); code != http.StatusOK {
		t.Fatalf("ready = %d", code)
	}
	dbUp = false
	if code, body := get("/health/ready"); code != http.StatusServiceUnavailable || !strings.Contains(body, "connection refused") {
		t.Fatalf("ready with db down = %d %s", code, body)
	}
	dbUp = true
	o.SetDraining()
	if code, body := get("/health/ready"); code != http.StatusServiceUnavailable || !strings.Contains(body, "draining") {
		t.Fatalf("ready while draining = %d %s", code, body)
	}
	if code, _ := get("/health"); code != http.StatusOK {
		t.Fatalf("liveness = %d", code)
	}
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, "memstream_test_things_total") {
		t.Fatalf("metrics = %d", code)
	}
}

// TestOpsServerRunStop: Stop ends Run, and the port is closed after it.
func TestOpsServerRunStop(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	o, err := New(Deps{Gatherer: prometheus.NewRegistry()}, Config{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	lifetimetest.CheckStop(t, o, 10*time.Second, func() {
		for range 100 {
			if resp, err := http.Get("http://" + addr + "/health"); err == nil {
				resp.Body.Close()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("ops server never answered")
	})
	if _, err := http.Get("http://" + addr + "/health"); err == nil {
		t.Fatal("ops server still answers after Stop")
	}
}
