package recallapi

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestServerRunStop: Listen names the bound port before Run serves, and Stop
// ends Run's graceful shutdown and the background work it started.
func TestServerRunStop(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.srv.cfg.Addr = "127.0.0.1:0"
	addr, err := e.srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- e.srv.Run(context.Background()) }()
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/health = %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ran:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	default:
		t.Fatal("Stop returned before Run")
	}
	if _, err := http.Get("http://" + addr + "/health"); err == nil {
		t.Fatal("the server still answers after Stop")
	}
}
