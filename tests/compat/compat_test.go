package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memstream/memstream/internal/bench"
	"github.com/memstream/memstream/internal/proctest"

	"github.com/memstream/memstream/internal/toolcache"
)

var update = flag.Bool("update", false, "rewrite docs/COMPATIBILITY.md from the measured results")

const (
	adminKey = "compat-admin-key-0001"
	bankKey  = "compat-scoped-key-0002"
)

// TestHindsightClient runs Hindsight's own Python client (hindsight-client
// 1.1.0 from PyPI, in a cached virtualenv) and one of Hindsight's published
// integrations against a real `memstream serve` with embedded Kafka and a
// managed PostgreSQL, then holds docs/COMPATIBILITY.md to what it measured.
func TestHindsightClient(t *testing.T) {
	if testing.Short() {
		t.Skip("the client suite starts a server and a Python virtualenv")
	}
	py := venv(t)
	bin := proctest.Binary(t)
	url := startServer(t, bin, "")
	llmURL := startLLMServer(t, bin)

	results := filepath.Join(t.TempDir(), "results.json")
	cmd := exec.Command(filepath.Join(py, "bin", "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfEX", ".")
	cmd.Env = append(os.Environ(), "MEMSTREAM_URL="+url, "MEMSTREAM_LLM_URL="+llmURL, "MEMSTREAM_ADMIN_KEY="+adminKey,
		"MEMSTREAM_BANK_KEY="+bankKey, "COMPAT_RESULTS="+results, "PYTHONDONTWRITEBYTECODE=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	summary := lines[len(lines)-1]
	t.Logf("pytest: %s", summary)

	rep, err := readResults(results)
	if err == nil && len(rep.Methods) < 90 {
		err = fmt.Errorf("only %d client methods found; is hindsight-client 1.1.0 installed?", len(rep.Methods))
	}
	if err != nil {
		t.Fatalf("read pytest results: %v\n%s", err, out.String())
	}
	doc := rep.markdown()
	t.Logf("client methods working: %s", rep.headline())
	checkDocSection(t, beginMark, endMark, doc)
	if runErr != nil {
		t.Fatalf("the client suite failed (%v):\n%s", runErr, out.String())
	}
}

// venv returns a virtualenv with requirements.txt installed. It lives in
// the user cache directory, keyed by the requirements, so it is built once
// per machine and never inside the repository.
func venv(t *testing.T) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is missing; scripts/install-deps.sh installs it")
		}
		t.Skip("python3 is not installed")
	}
	req, err := os.ReadFile("requirements.txt")
	if err != nil {
		t.Fatal(err)
	}
	// A venv records its own path in scripts; python -m works wherever it
	// lives, so it may be built beside its place and renamed.
	return toolcache.Dir(t, "compat-venv", req, func(dir string) error {
		steps := [][]string{
			{python, "-m", "venv", dir},
			{filepath.Join(dir, "bin", "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r", "requirements.txt"},
		}
		for _, s := range steps {
			if b, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
				return fmt.Errorf("%s: %v\n%s", strings.Join(s, " "), err, b)
			}
		}
		return nil
	})
}

// startLLMServer runs a second `memstream serve` whose LLM is the
// benchmarks' fake OpenAI-compatible server (internal/bench.FakeOpenAI:
// real facts from the extraction prompt, schema-shaped answers, free text
// otherwise), for the routes that need LLM calls to have happened: the
// LLM-request traces. The first server keeps the offline providers, which
// the rest of the suite's answers are written for.
func startLLMServer(t *testing.T, bin string) string {
	t.Helper()
	fake, err := bench.NewFakeOpenAI(384, 0)
	if err != nil {
		t.Fatal(err)
	}
	var unanswered bytes.Buffer
	fake.SetLog(&unanswered)
	srv := httptest.NewServer(fake)
	t.Cleanup(func() {
		srv.Close()
		if unanswered.Len() > 0 {
			t.Logf("calls the fake LLM did not answer:\n%s", proctest.Tail(unanswered.String(), 2000))
		}
	})
	return startServer(t, bin, fmt.Sprintf("llm:\n  provider: openai\n  base_url: %s/v1\n  model: compat-fake\n  max_retries: 0\n", srv.URL))
}

// startServer runs `memstream serve` with its own data directory and free
// ports, and extra configuration appended, and returns its base URL once it
// is ready.
func startServer(t *testing.T, bin, extra string) string {
	t.Helper()
	dir := t.TempDir()
	// As root the managed PostgreSQL runs as another user, who must be
	// able to enter the data directory.
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	httpAddr := proctest.FreeAddr(t)
	_, pgPort, _ := net.SplitHostPort(proctest.FreeAddr(t))
	cfg := fmt.Sprintf(`data_dir: %s
http:
  addr: %s
  retain_wait: 20s
kafka:
  embedded_addr: %s
  embedded_partitions: 2
database:
  embedded_port: %s
embed:
  provider: hash
consolidation:
  poll_interval: 100ms
  mental_model_min_interval: 0s
log:
  level: warn
webhooks:
  # The suite's webhook sink listens on loopback.
  allow_private: true
auth:
  keys:
    - {name: admin, key: %s, banks: ["*"], scopes: [admin]}
    - {name: scoped, key: %s, banks: [scoped-bank], scopes: [write]}
`, filepath.Join(dir, "data"), httpAddr, proctest.FreeAddr(t), pgPort, adminKey, bankKey) + extra
	cfgPath := filepath.Join(dir, "memstream.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logf.Name()); err == nil {
				t.Logf("serve log (tail):\n%s", proctest.Tail(string(b), 4000))
			}
		}
	})
	url := "http://" + httpAddr
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("memstream serve exited: %v\n%s", err, proctest.Tail(string(b), 4000))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", url+"/health/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return url
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("memstream serve was not ready within 3 minutes")
	return ""
}

// report is what conftest.py (and ts/suite.mjs) writes: every method of
// the installed client and the outcome of the tests that cover it.
type report struct {
	Methods map[string]struct {
		Route      string `json:"route"`
		Deprecated bool   `json:"deprecated"`
	} `json:"methods"`
	Results map[string]struct {
		Outcome string `json:"outcome"`
		Reason  string `json:"reason"`
		Test    string `json:"test"`
	} `json:"results"`
}

func readResults(path string) (*report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// status is how the doc shows an outcome.
func status(outcome string) string {
	switch outcome {
	case "passed":
		return "works"
	case "xfailed":
		return "not served"
	case "":
		return "NOT TESTED"
	}
	return "FAILS"
}

// counts returns how many non-deprecated generated-client methods work and
// how many there are, and the same for the high-level Hindsight class.
func (r *report) counts() (ok, total, hlOK, hlTotal int) {
	for name, m := range r.Methods {
		if m.Deprecated {
			continue
		}
		total++
		if r.Results[name].Outcome == "passed" {
			ok++
		}
	}
	for name, res := range r.Results {
		if strings.HasPrefix(name, "Hindsight.") {
			hlTotal++
			if res.Outcome == "passed" {
				hlOK++
			}
		}
	}
	return
}

func (r *report) headline() string {
	ok, total, hlOK, hlTotal := r.counts()
	return fmt.Sprintf("%d of %d non-deprecated generated-client methods work (%.0f%%); %d of %d high-level Hindsight methods tested work",
		ok, total, 100*float64(ok)/float64(max(total, 1)), hlOK, hlTotal)
}

// markdown renders the measured table that docs/COMPATIBILITY.md carries
// between its markers.
func (r *report) markdown() string {
	var b strings.Builder
	ok, total, hlOK, hlTotal := r.counts()
	fmt.Fprintf(&b, "Measured by `go test ./tests/compat/` (hindsight-client 1.1.0): **%d of %d** non-deprecated client methods work (%.0f%%), and %d of %d high-level `Hindsight` methods the suite drives.\n\n",
		ok, total, 100*float64(ok)/float64(max(total, 1)), hlOK, hlTotal)
	b.WriteString("| method | route | status | note |\n|---|---|---|---|\n")
	names := make([]string, 0, len(r.Methods))
	for n := range r.Methods {
		names = append(names, n)
	}
	sort.Strings(names)
	row := func(name, route, st, note string) {
		note = strings.ReplaceAll(note, "|", "/")
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s |\n", name, route, st, note)
	}
	for _, n := range names {
		m := r.Methods[n]
		res := r.Results[n]
		if m.Deprecated {
			row(n, m.Route, "deprecated", "deprecated in Hindsight 1.1.0; not counted")
			continue
		}
		// Only an xfail's reason is stable text; a failure's message
		// varies from run to run, and the suite fails anyway.
		note := res.Test
		if res.Outcome == "xfailed" {
			note = res.Reason
		}
		row(n, m.Route, status(res.Outcome), note)
	}
	var extra []string
	for n := range r.Results {
		if _, known := r.Methods[n]; !known {
			extra = append(extra, n)
		}
	}
	slices.Sort(extra)
	b.WriteString("\n| high-level method or integration | status | test |\n|---|---|---|\n")
	for _, n := range extra {
		res := r.Results[n]
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", n, status(res.Outcome), res.Test)
	}
	return b.String()
}

const (
	docPath   = "../../docs/COMPATIBILITY.md"
	beginMark = "<!-- compat:begin (generated by go test ./tests/compat/ -update) -->\n"
	endMark   = "<!-- compat:end -->"
)

// checkDocSection holds the doc's measured section between the two
// markers to this run, or rewrites it with -update.
func checkDocSection(t *testing.T, beginMark, endMark, measured string) {
	t.Helper()
	raw, err := os.ReadFile(docPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, beginMark), strings.Index(doc, endMark)
	if *update {
		if i < 0 || j < i {
			t.Fatalf("%s lacks the markers %q and %q", docPath, beginMark, endMark)
		}
		doc = doc[:i+len(beginMark)] + measured + doc[j:]
		if err := os.WriteFile(docPath, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if i < 0 || j < i {
		t.Fatalf("%s has no measured section %q; run go test ./tests/compat/ -update", docPath, beginMark)
	}
	if got := doc[i+len(beginMark) : j]; got != measured {
		t.Errorf("docs/COMPATIBILITY.md does not match what the suite measured; run go test ./tests/compat/ -update.\nmeasured:\n%s", measured)
	}
}
