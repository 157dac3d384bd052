//go:build browser

// The browser suite: a real `memstream serve` with the demo data, driven in
// headless Debian Chromium through chromedp. `make test` runs it (with
// -tags browser); `make console-screenshots` runs it with
// MEMSTREAM_SCREENSHOTS=docs/console to refresh the pictures in the docs.
//
// Every wait is on a condition in the page or the API, never a fixed
// sleep, and nothing is timed: the two-core machines this runs on are slow
// and noisy.
package console_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memstream/memstream/internal/proctest"

	"github.com/chromedp/chromedp"
)

const (
	adminKey = "console-test-admin-key"
	aliceKey = "console-test-alice-reader-key"
)

// srv is the memstream process under test.
type srv struct {
	base   string
	bin    string
	cfg    string
	logBuf *bytes.Buffer
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(dir) // this file lives in <repo>/console
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// call sends one API request with a key and decodes the JSON answer.
func (s *srv) call(ctx context.Context, key, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, rd)
	if err != nil {
		return 0, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		return resp.StatusCode, json.Unmarshal(raw, out)
	}
	return resp.StatusCode, nil
}

// errGiveUp, wrapped in a condition's error, ends waitFor at once.
var errGiveUp = errors.New("giving up")

// waitFor polls cond with a growing pause until it holds or ctx ends.
func waitFor(ctx context.Context, what string, cond func() (bool, error)) error {
	delay := 50 * time.Millisecond
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if errors.Is(err, errGiveUp) {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), last)
		case <-time.After(delay):
		}
		delay = min(delay*2, time.Second)
	}
}

type stats struct {
	Facts              int `json:"facts"`
	Observations       int `json:"observations"`
	Pending            int `json:"pending_consolidation"`
	EventsIngested     int `json:"events_ingested"`
	EventsDeadLettered int `json:"events_dead_lettered"`
	MentalModels       int `json:"mental_models"`
}

func demoBanks(t *testing.T, file string) map[string]int {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev struct {
			BankID string `json:"bank_id"`
		}
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		out[ev.BankID]++
	}
	return out
}

// startServer builds memstream (unless MEMSTREAM_BIN names a binary),
// serves it on free ports with two keys, ingests the demo chat log through
// Kafka, dead-letters two bad records and creates a mental model.
func startServer(t *testing.T, ctx context.Context) *srv {
	t.Helper()
	root := repoRoot(t)
	// The managed PostgreSQL runs as user postgres when the test runs as
	// root, so its data dir must be reachable by others (t.TempDir is 0700).
	dir, err := os.MkdirTemp("", "memstream-console-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	bin := proctest.Binary(t)
	httpPort, kafkaPort, pgPort := freePort(t), freePort(t), freePort(t)
	cfg := filepath.Join(dir, "memstream.yaml")
	yaml := fmt.Sprintf(`data_dir: %s
http:
  addr: 127.0.0.1:%d
kafka:
  embedded_addr: 127.0.0.1:%d
database:
  embedded_port: %d
auth:
  keys:
    - {name: admin, key: %s, banks: ["*"], scopes: [admin]}
    - {name: alice-reader, key: %s, banks: [alice], scopes: [read]}
`, filepath.Join(dir, "data"), httpPort, kafkaPort, pgPort, adminKey, aliceKey)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &srv{base: fmt.Sprintf("http://127.0.0.1:%d", httpPort), bin: bin, cfg: cfg, logBuf: &bytes.Buffer{}}
	serve := exec.Command(bin, "serve", "--config", cfg)
	serve.Dir = root
	serve.Stdout, serve.Stderr = s.logBuf, s.logBuf
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	t.Cleanup(func() {
		_ = serve.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			_ = serve.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("memstream serve log (tail):\n%s", proctest.Tail(s.logBuf.String(), 6000))
		}
	})
	err = waitFor(ctx, "memstream serve to be ready", func() (bool, error) {
		select {
		case err := <-exited:
			exited <- err
			return false, fmt.Errorf("%w: memstream serve exited: %v", errGiveUp, err)
		default:
		}
		code, err := s.call(ctx, "", "GET", "/health/ready", nil, nil)
		return code == 200, err
	})
	if err != nil {
		t.Fatal(err)
	}

	demo := filepath.Join(root, "examples", "chatlogs", "demo.jsonl")
	s.produce(t, ctx, demo, "")
	expected := demoBanks(t, demo)
	for bank, n := range expected {
		err := waitFor(ctx, "bank "+bank+" ingested and consolidated", func() (bool, error) {
			var st stats
			_, err := s.call(ctx, adminKey, "GET", "/v1/default/banks/"+bank+"/stats", nil, &st)
			return err == nil && st.EventsIngested >= n && st.Pending == 0 && st.Observations > 0, err
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	// A dead letter for alice: a card number her policy now blocks. The
	// console must show its value redacted. (Records that fail to decode
	// are dead-lettered without a bank, so no bank's page lists them.)
	if _, err := s.call(ctx, adminKey, "PATCH", "/v1/default/banks/alice", map[string]any{
		"defense_policy": map[string]any{"labels": map[string]string{"credit_card": "block"}}}, nil); err != nil {
		t.Fatal(err)
	}
	bad := `{"bank_id":"alice","event_id":"alice-bad-card","content":"My card is 4111 1111 1111 1111, mail me at alice.chen@example.com","timestamp":"2026-11-25T09:00:00Z"}
`
	s.produce(t, ctx, "-", bad)
	if err := waitFor(ctx, "a dead letter in alice", func() (bool, error) {
		var st stats
		_, err := s.call(ctx, adminKey, "GET", "/v1/default/banks/alice/stats", nil, &st)
		return err == nil && st.EventsDeadLettered >= 1, err
	}); err != nil {
		t.Fatal(err)
	}
	var mm struct {
		ID string `json:"id"`
	}
	if _, err := s.call(ctx, adminKey, "POST", "/v1/default/banks/alice/mental-models",
		map[string]any{"name": "email-style", "source_query": "How does Alice want her emails written?"}, &mm); err != nil {
		t.Fatal(err)
	}
	if _, err := s.call(ctx, adminKey, "POST", "/v1/default/banks/alice/mental-models/"+mm.ID+"/refresh", map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	return s
}

type observation struct {
	ID       string `json:"id"`
	Evidence []struct {
		Quote     string    `json:"quote"`
		Timestamp time.Time `json:"timestamp"`
	} `json:"evidence"`
	History []struct {
		Action  string `json:"action"`
		OldText string `json:"old_text"`
		NewText string `json:"new_text"`
	} `json:"history"`
}

// movedObservation finds, through the API, alice's observation whose
// history records the move: an update from Beijing to Shanghai.
func (s *srv) movedObservation(t *testing.T, ctx context.Context) observation {
	t.Helper()
	var list struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	if _, err := s.call(ctx, adminKey, "GET", "/v1/default/banks/alice/observations?q=Shanghai&limit=200", nil, &list); err != nil {
		t.Fatal(err)
	}
	for _, it := range list.Items {
		var o observation
		if _, err := s.call(ctx, adminKey, "GET", "/v1/default/banks/alice/observations/"+it.ID, nil, &o); err != nil {
			t.Fatal(err)
		}
		for _, h := range o.History {
			if h.Action == "update" && strings.Contains(h.OldText, "Beijing") && strings.Contains(h.NewText, "Shanghai") {
				return o
			}
		}
	}
	t.Fatalf("no observation of alice's records the move from Beijing to Shanghai (%d observations mention Shanghai)", len(list.Items))
	return observation{}
}

func (s *srv) produce(t *testing.T, ctx context.Context, file, stdin string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, s.bin, "produce", file, "--config", s.cfg)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("memstream produce %s: %v\n%s", file, err, out)
	}
}

// browser starts headless Chromium with the flags this machine needs: no
// sandbox as root, and no background networking (the network is closed,
// and Chromium would otherwise retry its own services many times a second).
func browser(t *testing.T, parent context.Context) context.Context {
	t.Helper()
	exe := os.Getenv("CHROMIUM")
	if exe == "" {
		var err error
		if exe, err = exec.LookPath("chromium"); err != nil {
			t.Fatal("chromium is not on PATH: run scripts/install-browser.sh (make test does)")
		}
	}
	// Not t.TempDir: Chromium's helper processes may still write to the
	// profile for a moment after the browser exits, and t.TempDir's cleanup
	// fails the test on a directory that is not empty.
	profile, err := os.MkdirTemp("", "memstream-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 20 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
		t.Logf("could not remove the Chromium profile %s", profile)
	})
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(profile),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("font-render-hinting", "none"),
		chromedp.WindowSize(1440, 900),
	}
	// On two loaded cores a first start (a new profile, the font cache)
	// can take well over chromedp's default 20 s to print its address.
	var out bytes.Buffer
	opts = append(opts, chromedp.WSURLReadTimeout(2*time.Minute), chromedp.CombinedOutput(&out))
	for attempt := 1; ; attempt++ {
		actx, cancelA := chromedp.NewExecAllocator(parent, opts...)
		bctx, cancelB := chromedp.NewContext(actx)
		err := chromedp.Run(bctx)
		if err == nil {
			t.Cleanup(func() {
				cancelB()
				cancelA()
			})
			return bctx
		}
		cancelB()
		cancelA()
		if attempt == 2 {
			t.Fatalf("start chromium %s: %v\n%s", exe, err, proctest.Tail(out.String(), 4000))
		}
		t.Logf("start chromium %s: %v; trying once more", exe, err)
	}
}

// step runs browser actions with a deadline of its own, so one stuck wait
// fails with its name instead of eating the whole test's time.
func step(t *testing.T, ctx context.Context, name string, actions ...chromedp.Action) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := chromedp.Run(sctx, actions...); err != nil {
		var loc string
		_ = chromedp.Run(ctx, chromedp.Location(&loc))
		t.Fatalf("%s: %v (page %s)", name, err, loc)
	}
}

// until waits for a JavaScript condition in the page.
func until(js string) chromedp.Action {
	return chromedp.Poll(js, nil, chromedp.WithPollingInterval(100*time.Millisecond))
}

// shot saves a screenshot of the whole page to MEMSTREAM_SCREENSHOTS/name
// when that is set (make console-screenshots sets it to docs/console).
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("MEMSTREAM_SCREENSHOTS")
	if dir == "" {
		return
	}
	var buf []byte
	step(t, ctx, "screenshot "+name, chromedp.FullScreenshot(&buf, 100))
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(repoRoot(t), dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

func signIn(t *testing.T, ctx context.Context, base, key string) {
	t.Helper()
	step(t, ctx, "sign in",
		chromedp.Navigate(base+"/console/"),
		chromedp.Evaluate(`sessionStorage.clear()`, nil),
		chromedp.Reload(),
		chromedp.WaitVisible(`input[name=key]`, chromedp.ByQuery),
		chromedp.SendKeys(`input[name=key]`, key, chromedp.ByQuery),
		chromedp.Click(`.login button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid=banks-table]`, chromedp.ByQuery),
	)
}

// open navigates to a console route and waits for its page to load.
func open(t *testing.T, ctx context.Context, base, route, ready string) {
	t.Helper()
	step(t, ctx, "open "+route,
		chromedp.Navigate(base+"/console/#"+route),
		until(ready),
	)
}

func TestConsole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s := startServer(t, ctx)
	b := browser(t, ctx)

	// The page is public, its data is not: a browser without a key gets the
	// sign-in form, never data.
	step(t, b, "sign-in form", chromedp.Navigate(s.base+"/console/"), chromedp.WaitVisible(`input[name=key]`, chromedp.ByQuery))
	shot(t, b, "sign-in")
	signIn(t, b, s.base, adminKey)

	t.Run("banks", func(t *testing.T) {
		open(t, b, s.base, "/", `document.querySelectorAll('[data-testid=banks-table] tbody tr').length === 3 &&
			!document.querySelector('[data-testid=banks-table]').innerText.includes('…')`)
		shot(t, b, "banks")
		open(t, b, s.base, "/b/alice/overview", `!!document.querySelector('[data-testid=backlog-chart] svg polyline') &&
			!document.querySelector('[data-testid=bank-counts]').innerText.includes('…') &&
			!!document.querySelector('[data-testid=event-rate]')`)
		shot(t, b, "bank")
		step(t, b, "pause and resume consolidation",
			chromedp.Click(`[data-testid=toggle-consolidation]`, chromedp.ByQuery),
			until(`document.querySelector('[data-testid=consolidation-state]').innerText.includes('paused')`),
			chromedp.Click(`[data-testid=toggle-consolidation]`, chromedp.ByQuery),
			until(`document.querySelector('[data-testid=consolidation-state]').innerText.includes('running')`),
		)
	})

	t.Run("memories", func(t *testing.T) {
		open(t, b, s.base, "/b/alice/memories", `document.querySelectorAll('[data-testid=memory-row]').length > 10`)
		step(t, b, "filter by type and text",
			chromedp.SetValue(`select[name=type]`, "experience", chromedp.ByQuery),
			chromedp.SendKeys(`input[name=q]`, "Shanghai", chromedp.ByQuery),
			chromedp.Click(`[data-testid=memory-filters] button[type=submit]`, chromedp.ByQuery),
			until(`(() => { const rows = [...document.querySelectorAll('[data-testid=memory-row]')];
				return rows.length > 0 && rows.every(r => r.querySelector('.badge').innerText === 'experience') })()`),
		)
		// The page lists what the API answers for the same filter, in order.
		var want struct {
			Items []struct {
				Text string `json:"text"`
			} `json:"items"`
		}
		if _, err := s.call(ctx, adminKey, "GET", "/v1/default/banks/alice/memories/list?type=experience&q=Shanghai&limit=50", nil, &want); err != nil {
			t.Fatal(err)
		}
		var shown []string
		step(t, b, "read the rows", chromedp.Evaluate(`[...document.querySelectorAll('[data-testid=memory-row] td:nth-child(2) > a')].map(a => a.innerText)`, &shown))
		if len(shown) != len(want.Items) || len(shown) == 0 {
			t.Fatalf("the filtered page shows %d memories, the API answers %d", len(shown), len(want.Items))
		}
		for i, it := range want.Items {
			if strings.TrimSpace(shown[i]) != strings.TrimSpace(it.Text) {
				t.Errorf("row %d = %q, the API's = %q", i, shown[i], it.Text)
			}
		}
		shot(t, b, "memories")
		step(t, b, "open a memory",
			chromedp.Click(`[data-testid=memory-row] td:nth-child(2) a`, chromedp.ByQuery),
			until(`!!document.querySelector('[data-testid=memory-chunk] pre') && !!document.querySelector('[data-testid=memory-event] dl') &&
				document.querySelector('[data-testid=memory-links]').innerText.includes('Links (')`),
		)
		shot(t, b, "memory")
	})

	t.Run("observations", func(t *testing.T) {
		open(t, b, s.base, "/b/alice/observations", `document.querySelectorAll('[data-testid=observation-row]').length > 0`)
		shot(t, b, "observations")
		step(t, b, "search Shanghai",
			chromedp.SendKeys(`input[name=q]`, "Shanghai", chromedp.ByQuery),
			chromedp.Click(`form.filters button[type=submit]`, chromedp.ByQuery),
			until(`(() => { const r = document.querySelectorAll('[data-testid=observation-row]'); return r.length > 0 && [...r].every(x => x.innerText.includes('Shanghai')) })()`),
		)
		// Which observation carries the move is consolidation's business;
		// the console's is to show the one that does as the API has it.
		obs := s.movedObservation(t, ctx)
		open(t, b, s.base, "/b/alice/observations/"+obs.ID, `document.querySelectorAll('[data-testid=evidence-item]').length > 0`)
		var ev []string
		var hist string
		step(t, b, "read the evidence timeline",
			chromedp.Evaluate(`[...document.querySelectorAll('[data-testid=evidence-item] blockquote')].map(e => e.innerText)`, &ev),
			chromedp.Text(`[data-testid=history]`, &hist, chromedp.ByQuery),
		)
		// The timeline shows every piece of evidence, oldest first, and so
		// runs from Beijing to Shanghai; the history shows the update.
		if len(ev) != len(obs.Evidence) {
			t.Fatalf("evidence timeline has %d items, the API %d: %q", len(ev), len(obs.Evidence), ev)
		}
		for i, e := range obs.Evidence {
			if strings.TrimSpace(ev[i]) != strings.TrimSpace(e.Quote) {
				t.Errorf("timeline item %d = %q, want %q (oldest first)", i, ev[i], e.Quote)
			}
		}
		if !strings.Contains(ev[0], "Beijing") || !strings.Contains(ev[len(ev)-1], "Shanghai") {
			t.Errorf("timeline does not run from Beijing to Shanghai: %q", ev)
		}
		if !strings.Contains(hist, "Beijing") || !strings.Contains(hist, "Shanghai") || !strings.Contains(hist, "updated") {
			t.Errorf("history does not show the Beijing → Shanghai update: %q", hist)
		}
		shot(t, b, "observation")
	})

	t.Run("entities", func(t *testing.T) {
		open(t, b, s.base, "/b/alice/entities", `document.querySelectorAll('[data-testid=entity-row]').length > 3`)
		shot(t, b, "entities")
		step(t, b, "open Alice",
			chromedp.Click(`[data-testid=entity-row] a`, chromedp.ByQuery),
			until(`document.querySelectorAll('[data-testid=entity-graph] g.node').length > 2 &&
				document.querySelector('[data-testid=aliases]').innerText.includes('Alice Chen')`),
		)
		shot(t, b, "entity")
		step(t, b, "the memories that mention Alice",
			chromedp.Click(`a.button[href*="memories?entity="]`, chromedp.ByQuery),
			until(`(() => { const rows = [...document.querySelectorAll('[data-testid=memory-row]')];
				return rows.length > 0 && rows.every(r => [...r.querySelectorAll('.chip')].some(c => c.innerText === 'Alice')) })()`),
		)
	})

	t.Run("recall", func(t *testing.T) {
		open(t, b, s.base, "/b/alice/recall", `!!document.querySelector('[data-testid=recall-form]')`)
		step(t, b, "run a recall",
			chromedp.SendKeys(`input[name=query]`, "Where does Alice live now?", chromedp.ByQuery),
			chromedp.Click(`[data-testid=recall-run]`, chromedp.ByQuery),
			until(`document.querySelectorAll('[data-testid=recall-result]').length > 0 &&
				document.querySelectorAll('[data-testid=arm-semantic] [data-testid=arm-candidate]').length > 0 &&
				document.querySelectorAll('[data-testid=arm-keyword] [data-testid=arm-candidate]').length > 0 &&
				!document.querySelector('[data-testid=trace]').innerText.match(/[0-9a-f]{8}-[0-9a-f]{4}-/)`),
		)
		var arms []string
		var top string
		step(t, b, "read the trace",
			chromedp.Evaluate(`[...document.querySelectorAll('[data-testid^=arm-]:not([data-testid=arm-candidate])')].map(a => a.dataset.testid)`, &arms),
			chromedp.Text(`[data-testid=recall-result]`, &top, chromedp.ByQuery),
		)
		for _, want := range []string{"arm-semantic", "arm-keyword", "arm-graph", "arm-temporal"} {
			if !contains(arms, want) {
				t.Errorf("trace shows arms %v, missing %s", arms, want)
			}
		}
		if !strings.Contains(top, "Shanghai") {
			t.Errorf("top recall result does not mention Shanghai: %q", top)
		}
		shot(t, b, "recall")
	})

	t.Run("reflect", func(t *testing.T) {
		open(t, b, s.base, "/b/alice/reflect", `!!document.querySelector('[data-testid=reflect-form]')`)
		step(t, b, "reflect",
			chromedp.SendKeys(`input[name=query]`, "Where does Alice live now?", chromedp.ByQuery),
			chromedp.Click(`[data-testid=reflect-run]`, chromedp.ByQuery),
			until(`document.querySelectorAll('[data-testid=citation]').length > 0 && document.querySelectorAll('[data-testid=tool-call]').length > 0 &&
				!document.querySelector('[data-testid=reflect-citations]').innerText.match(/[0-9a-f]{8}-[0-9a-f]{4}-/)`),
		)
		shot(t, b, "reflect")
	})

	t.Run("mental models", func(t *testing.T) {
		open(t, b, s.base, "/b/alice/models", `document.querySelectorAll('[data-testid=model-row]').length === 1`)
		shot(t, b, "models")
		step(t, b, "open and refresh the model",
			chromedp.Click(`[data-testid=model-row] a`, chromedp.ByQuery),
			until(`!!document.querySelector('[data-testid=model-content] .markdown li')`),
			chromedp.Click(`[data-testid=refresh-model]`, chromedp.ByQuery),
			until(`!document.querySelector('[data-testid=refresh-model]').disabled && !!document.querySelector('[data-testid=model-content] .markdown li')`),
		)
		shot(t, b, "model")
		var page string
		step(t, b, "page as markdown",
			chromedp.Click(`[data-testid=view-page]`, chromedp.ByQuery),
			until(`document.querySelector('[data-testid=model-page]').innerText.startsWith('---')`),
			chromedp.Text(`[data-testid=model-page]`, &page, chromedp.ByQuery),
		)
		shot(t, b, "model-page")
		if !strings.Contains(page, `question: "How does Alice want her emails written?"`) {
			t.Errorf("page front matter lacks the question:\n%s", page)
		}
	})

	t.Run("dead letters", func(t *testing.T) {
		open(t, b, s.base, "/b/alice/dead-letters", `document.querySelectorAll('[data-testid=dlq-row]').length === 1 &&
			document.querySelectorAll('[data-testid=dlq-class]').length === 1`)
		step(t, b, "open the blocked record",
			chromedp.Evaluate(`[...document.querySelectorAll('[data-testid=dlq-row]')].find(r => r.innerText.includes('blocked')).click()`, nil),
			until(`document.querySelector('[data-testid=dlq-value]') && document.querySelector('[data-testid=dlq-value]').innerText.includes('REDACTED')`),
		)
		var value, headers string
		step(t, b, "read the record",
			chromedp.Text(`[data-testid=dlq-value]`, &value, chromedp.ByQuery),
			chromedp.Text(`[data-testid=dlq-headers]`, &headers, chromedp.ByQuery),
		)
		if strings.Contains(value, "4111") || strings.Contains(value, "alice.chen@example.com") {
			t.Errorf("dead-letter value shows a secret: %s", value)
		}
		if !strings.Contains(value, "[REDACTED:credit_card]") {
			t.Errorf("dead-letter value lacks the card's redaction marker: %s", value)
		}
		if !strings.Contains(headers, "memstream.error.class") || !strings.Contains(headers, "memstream.source.offset") {
			t.Errorf("dead-letter headers lack the error headers: %s", headers)
		}
		shot(t, b, "dead-letters")
		// Replay the record. Its dead letter holds the event with the card
		// masked (the topic never keeps a secret the database refused), so
		// the replay is ingested as that redacted event: the secret is gone
		// for good, the rest of the message is kept. The dead letter shows
		// when it was replayed.
		var before stats
		if _, err := s.call(ctx, adminKey, "GET", "/v1/default/banks/alice/stats", nil, &before); err != nil {
			t.Fatal(err)
		}
		step(t, b, "replay it",
			chromedp.Click(`[data-testid=dlq-replay-one]`, chromedp.ByQuery),
			until(`document.querySelector('[data-testid=dlq-record]').innerText.includes('replayed 1')`),
		)
		err := waitFor(ctx, "the replayed record to be stored redacted", func() (bool, error) {
			var st stats
			_, err := s.call(ctx, adminKey, "GET", "/v1/default/banks/alice/stats", nil, &st)
			return err == nil && st.EventsIngested > before.EventsIngested, err
		})
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Items []map[string]any `json:"items"`
		}
		if _, err := s.call(ctx, adminKey, "GET", "/v1/default/banks/alice/memories/list?limit=500", nil, &list); err != nil {
			t.Fatal(err)
		}
		for _, it := range list.Items {
			if txt := fmt.Sprint(it["text"]); strings.Contains(txt, "4111") {
				t.Errorf("the replayed record stored the card: %s", txt)
			}
		}
		var replay struct {
			Replayed, Skipped int
		}
		if _, err := s.call(ctx, adminKey, "POST", "/v1/default/banks/alice/dead-letters/replay",
			map[string]any{"class": "blocked_by_policy"}, &replay); err != nil {
			t.Fatal(err)
		}
		if replay.Replayed != 0 {
			t.Errorf("replaying the class again replayed %d records, want 0 (its one dead letter was replayed already)", replay.Replayed)
		}
	})

	// A key scoped to one bank sees that bank only: in the list, in the
	// picker, and by address.
	t.Run("scoped key", func(t *testing.T) {
		signIn(t, b, s.base, aliceKey)
		var options []string
		step(t, b, "banks of the alice key",
			until(`document.querySelectorAll('[data-testid=banks-table] tbody tr').length === 1`),
			chromedp.Evaluate(`[...document.querySelectorAll('[data-testid=bank-select] option')].map(o => o.value).filter(Boolean)`, &options),
		)
		if len(options) != 1 || options[0] != "alice" {
			t.Fatalf("the alice key's bank picker offers %v, want [alice]", options)
		}
		shot(t, b, "scoped-key")
		open(t, b, s.base, "/b/zhang-wei/memories", `!!document.querySelector('[data-testid=error]')`)
		var body string
		step(t, b, "read the page", chromedp.Text(`main`, &body, chromedp.ByQuery))
		if strings.Contains(body, "老张") || strings.Contains(body, "Zhang") {
			t.Errorf("the alice key's page for zhang-wei shows its data: %s", body)
		}
		if code, err := s.call(ctx, aliceKey, "GET", "/v1/default/banks/zhang-wei/memories/list", nil, nil); code != http.StatusForbidden {
			t.Errorf("alice key reading zhang-wei: %d %v, want 403", code, err)
		}
		open(t, b, s.base, "/b/alice/memories", `document.querySelectorAll('[data-testid=memory-row]').length > 0`)
	})
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
