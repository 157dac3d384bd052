package recallapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/memstream/memstream/internal/lifetimetest"
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
	lifetimetest.CheckStop(t, e.srv, 20*time.Second, func() {
		resp, err := http.Get("http://" + addr + "/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/health = %d", resp.StatusCode)
		}
	})
	if _, err := http.Get("http://" + addr + "/health"); err == nil {
		t.Fatal("the server still answers after Stop")
	}
}
