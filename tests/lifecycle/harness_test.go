package lifecycle

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memstream/memstream/internal/proctest"

	"go.uber.org/goleak"

	"github.com/memstream/memstream/internal/pgtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// site is one deployment: a data directory (the embedded Kafka's log), a
// schema, and the addresses every process of it uses, so a restarted
// process finds what the last one left.
type site struct {
	t     *testing.T
	dir   string
	dbURL string
	http  string
	kafka string
	env   []string
}

func newSite(t *testing.T, env ...string) *site {
	t.Helper()
	url, _ := pgtest.Schema(t)
	return &site{t: t, dir: t.TempDir(), dbURL: url, http: proctest.FreeAddr(t), kafka: proctest.FreeAddr(t), env: env}
}

// proc is one `memstream serve` process.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    *proctest.LogBuffer
	exited chan struct{}
	err    error
	base   string
}

// serve starts `memstream serve --roles roles` and waits until it is ready.
func (s *site) serve(name, roles string, extra ...string) *proc {
	t := s.t
	t.Helper()
	cmd := exec.Command(proctest.Binary(t), "serve", "--roles", roles)
	cmd.Env = append(os.Environ(),
		"MEMSTREAM_DATA_DIR="+s.dir,
		"MEMSTREAM_DATABASE_URL="+s.dbURL,
		"MEMSTREAM_DATABASE_MAX_CONNS=8",
		"MEMSTREAM_KAFKA_EMBEDDED_ADDR="+s.kafka,
		"MEMSTREAM_KAFKA_EMBEDDED_PARTITIONS=2",
		"MEMSTREAM_KAFKA_SHUTDOWN_TIMEOUT=10s",
		"MEMSTREAM_HTTP_ADDR="+s.http,
		"MEMSTREAM_HTTP_RETAIN_WAIT=60s",
		"MEMSTREAM_EMBED_PROVIDER=hash",
		"MEMSTREAM_EMBED_DIM=64",
		"MEMSTREAM_DEFENSE_AUDIT_SALT=lifecycle-fingerprint-salt",
		"MEMSTREAM_CONSOLIDATION_POLL_INTERVAL=200ms",
		"MEMSTREAM_LOG_LEVEL=info",
	)
	cmd.Env = append(append(cmd.Env, s.env...), extra...)
	p := &proc{name: name, cmd: cmd, log: &proctest.LogBuffer{}, exited: make(chan struct{}), base: "http://" + s.http}
	cmd.Stdout, cmd.Stderr = io.Discard, p.log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(30 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.exited
			}
		}
		if t.Failed() {
			t.Logf("--- log of %s ---\n%s", p.name, proctest.Tail(p.log.String(), 40))
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if code, _ := p.call(t, "GET", "/health/ready", ""); code == http.StatusOK {
			return p
		}
		select {
		case <-p.exited:
			t.Fatalf("%s exited during start: %v\n%s", name, p.err, proctest.Tail(p.log.String(), 40))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within 2m:\n%s", name, proctest.Tail(p.log.String(), 40))
		}
	}
}

// kill is a crash: SIGKILL, nothing drained or released.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s: %v", p.name, err)
	}
	<-p.exited
}

// terminate is a graceful stop.
func (p *proc) terminate(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM %s: %v", p.name, err)
	}
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not stop within 60 s", p.name)
	}
}

// call sends a request and returns the status and the decoded JSON body
// (nil when it is not an object).
func (p *proc) call(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	return p.callWith(t, method, path, body, nil)
}

// callWith is call with request headers.
func (p *proc) callWith(t *testing.T, method, path, body string, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	if out == nil {
		out = map[string]any{"_raw": string(raw)}
	}
	return resp.StatusCode, out
}

// must is call that fails the test on any status but want.
func (p *proc) must(t *testing.T, want int, method, path, body string) map[string]any {
	t.Helper()
	code, out := p.call(t, method, path, body)
	if code != want {
		t.Fatalf("%s %s: %d %v; want %d", method, path, code, out, want)
	}
	return out
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
