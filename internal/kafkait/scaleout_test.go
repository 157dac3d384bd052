package kafkait

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memstream/memstream/internal/proctest"
)

// proc is one `memstream serve` process.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    *proctest.LogBuffer
	exited chan struct{}
	err    error // set before exited closes
	addr   string
}

// serve starts `memstream serve --roles ingest` against the harness's
// topics, schema and group, and waits until its /health/ready reports the
// database and Kafka reachable. Settings go through MEMSTREAM_* variables as
// a deployment sets them.
func (h *harness) serve(name, group string, extraEnv ...string) *proc {
	h.t.Helper()
	bin := proctest.Binary(h.t)
	addr := proctest.FreeAddr(h.t)
	cmd := exec.Command(bin, "serve", "--roles", "ingest")
	cmd.Env = append(os.Environ(),
		"MEMSTREAM_DATA_DIR="+filepath.Join(h.t.TempDir(), name),
		"MEMSTREAM_DATABASE_URL="+h.dbURL,
		"MEMSTREAM_DATABASE_MAX_CONNS=6",
		"MEMSTREAM_KAFKA_BROKERS="+strings.Join(h.brokers, ","),
		"MEMSTREAM_KAFKA_TOPICS="+h.topic,
		"MEMSTREAM_KAFKA_DLQ_TOPIC="+h.dlq,
		"MEMSTREAM_KAFKA_GROUP="+group,
		"MEMSTREAM_KAFKA_CLIENT_ID="+name,
		"MEMSTREAM_KAFKA_EMBEDDED_PARTITIONS=12",
		"MEMSTREAM_KAFKA_SHUTDOWN_TIMEOUT=20s",
		"MEMSTREAM_HTTP_ADDR="+addr,
		"MEMSTREAM_EMBED_PROVIDER=hash", // delivery tests: the model's cost is not what they measure
		"MEMSTREAM_EMBED_DIM="+strconv.Itoa(dim),
		"MEMSTREAM_DEFENSE_AUDIT_SALT=kafkait-fingerprint-salt",
		"MEMSTREAM_CONSOLIDATION_ENABLED=false",
		"MEMSTREAM_LOG_LEVEL=info",
	)
	cmd.Env = append(cmd.Env, extraEnv...)
	p := &proc{name: name, cmd: cmd, log: &proctest.LogBuffer{}, exited: make(chan struct{}), addr: addr}
	cmd.Stdout = io.Discard
	cmd.Stderr = p.log
	if err := cmd.Start(); err != nil {
		h.t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	h.t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if h.t.Failed() {
			h.t.Logf("--- log of %s ---\n%s", p.name, proctest.Tail(p.log.String(), 40))
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, body := p.get("/health/ready")
		if code == http.StatusOK {
			// Readiness of the ingest role: both of its dependencies.
			if !strings.Contains(body, `"database":"ok"`) || !strings.Contains(body, `"kafka":"ok"`) {
				h.t.Fatalf("%s: readiness %s does not check database and kafka", name, body)
			}
			break
		}
		select {
		case <-p.exited:
			h.t.Fatalf("%s exited during start: %v\n%s", name, p.err, p.log.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s not ready within 2m (last: %d %s):\n%s", name, code, body, proctest.Tail(p.log.String(), 30))
		}
	}
	return p
}

// waitLog waits until the log holds at least n lines containing s.
func (p *proc) waitLog(t *testing.T, s string, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for strings.Count(p.log.String(), s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d × %q not logged within %s:\n%s", p.name, n, s, timeout, proctest.Tail(p.log.String(), 30))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill is a crash: SIGKILL, no drain, no commit, no LeaveGroup.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s: %v", p.name, err)
	}
	<-p.exited
}

// terminate is a graceful shutdown: SIGTERM, then the process must drain,
// commit, leave the group and exit 0.
func (p *proc) terminate(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM %s: %v", p.name, err)
	}
	select {
	case <-p.exited:
	case <-time.After(90 * time.Second):
		t.Fatalf("%s did not exit within 90s of SIGTERM:\n%s", p.name, proctest.Tail(p.log.String(), 30))
	}
	if p.err != nil {
		t.Fatalf("%s exited with %v after SIGTERM:\n%s", p.name, p.err, proctest.Tail(p.log.String(), 30))
	}
}

// get fetches a path from the process's HTTP listener; code 0 when it is
// not listening (yet).
func (p *proc) get(path string) (int, string) {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + p.addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var sampleRE = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$`)

// metric scrapes /metrics and sums the samples of name whose label set
// contains every one of labels (each written as key="value").
func (p *proc) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v", p.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", p.name, resp.Status)
	}
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
next:
	for sc.Scan() {
		m := sampleRE.FindStringSubmatch(sc.Text())
		if m == nil || m[1] != name {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(m[2], l) {
				continue next
			}
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("scrape %s: %q: %v", p.name, sc.Text(), err)
		}
		sum += v
	}
	return sum
}

// streamer produces events [0, n) of bank in batches with a pause between
// them, so that processes come and go while records are still arriving.
func (h *harness) streamer(bank string, n, batch int, pause time.Duration) (wait func()) {
	done := make(chan error, 1)
	go func() {
		for from := 0; from < n; from += batch {
			to := min(from+batch, n)
			if err := h.prod.ProduceSync(context.Background(), h.records(bank, from, to)...).FirstErr(); err != nil {
				done <- err
				return
			}
			time.Sleep(pause)
		}
		done <- nil
	}()
	return func() {
		h.t.Helper()
		if err := <-done; err != nil {
			h.t.Fatalf("producer: %v", err)
		}
	}
}

// streamUntil produces events 0, 1, 2, … of bank in batches with a pause
// between them until stop is closed, and returns how many it produced.
func (h *harness) streamUntil(bank string, batch int, pause time.Duration, stop <-chan struct{}) (wait func() int) {
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				done <- result{n, nil}
				return
			default:
			}
			if err := h.prod.ProduceSync(context.Background(), h.records(bank, n, n+batch)...).FirstErr(); err != nil {
				done <- result{n, err}
				return
			}
			n += batch
			time.Sleep(pause)
		}
	}()
	return func() int {
		h.t.Helper()
		r := <-done
		if r.err != nil {
			h.t.Fatalf("producer: %v", r.err)
		}
		return r.n
	}
}

// TestKafkaThreeIngestersKillAndRebalance runs three ingester processes in
// one group over a 12-partition topic while events stream in, SIGKILLs one
// a quarter of the way in, adds a fourth at the half, and checks that every
// event is persisted exactly once.
func TestKafkaThreeIngestersKillAndRebalance(t *testing.T) {
	h := newHarness(t, 12)
	const group, n = "g-scale", 3000
	procs := []*proc{h.serve("ing-0", group), h.serve("ing-1", group), h.serve("ing-2", group)}
	for _, p := range procs {
		p.waitLog(t, "partitions assigned", 1, time.Minute)
	}
	wait := h.streamer("dora", n, 100, 150*time.Millisecond)

	h.waitCount(n/4, 5*time.Minute, `SELECT count(*) FROM events`)
	killedAt := h.count(`SELECT count(*) FROM events`)
	procs[1].kill(t)
	t.Logf("SIGKILLed ing-1 with %d of %d events persisted", killedAt, n)

	h.waitCount(n/2, 5*time.Minute, `SELECT count(*) FROM events`)
	addedAt := h.count(`SELECT count(*) FROM events`)
	p3 := h.serve("ing-3", group)
	p3.waitLog(t, "partitions assigned", 1, time.Minute)
	t.Logf("added ing-3 with %d of %d events persisted", addedAt, n)
	wait()

	h.waitCommitted(group, n, 8*time.Minute)
	for _, p := range []*proc{procs[0], procs[2], p3} {
		p.terminate(t)
	}
	h.checkExactlyOnce("dora", n)
	for _, p := range []*proc{procs[0], procs[2], p3} {
		if !strings.Contains(p.log.String(), "partitions assigned") {
			t.Errorf("%s never got partitions", p.name)
		}
	}
	// The survivors took over the killed member's partitions, and ing-3 took
	// some: at least two assignment rounds on ing-0 and ing-2.
	if got := strings.Count(procs[0].log.String(), "partitions assigned") + strings.Count(procs[2].log.String(), "partitions assigned"); got < 3 {
		t.Errorf("ing-0 and ing-2 logged %d assignments, want at least 3 (initial + takeover)", got)
	}
	t.Logf("exactly once: %d events, %d distinct facts, %d duplicated facts, group committed %d",
		h.count(`SELECT count(*) FROM events`), h.count(qFacts), h.count(qDupFacts), h.committed(group))
}

// TestKafkaRollingRestart restarts each of three ingesters in turn with
// SIGTERM while events stream in. The commit interval is long, so progress
// reaches Kafka through the revoke and shutdown commits: losing one of those
// would show as a gap in commits (the group never reaches the end) and
// their absence in the metric.
func TestKafkaRollingRestart(t *testing.T) {
	h := newHarness(t, 12)
	const group = "g-rolling"
	slow := "MEMSTREAM_KAFKA_COMMIT_INTERVAL=30s"
	procs := []*proc{h.serve("ing-0", group, slow), h.serve("ing-1", group, slow), h.serve("ing-2", group, slow)}
	for _, p := range procs {
		p.waitLog(t, "partitions assigned", 1, time.Minute)
	}
	// About 20 events/s until the last restart is done: every rejoin
	// revokes partitions with progress not yet committed.
	stop := make(chan struct{})
	wait := h.streamUntil("erin", 10, 500*time.Millisecond, stop)
	var revokeCommits, revokeErrors float64
	var oldLogs []string
	for i := range procs {
		h.waitCount((i+1)*300, 5*time.Minute, `SELECT count(*) FROM events`)
		// A process's counters die with it: scrape it just before.
		old := procs[i]
		before := old.metric(t, "memstream_consumer_commits_total", `trigger="revoke"`, `outcome="ok"`)
		revokeErrors += old.metric(t, "memstream_consumer_commits_total", `trigger="revoke"`, `outcome="error"`)
		survivors := append(append([]*proc{}, procs[:i]...), procs[i+1:]...)
		takeovers := nonEmptyAssignments(survivors)
		old.terminate(t)
		revokeCommits += before
		oldLogs = append(oldLogs, old.log.String())
		if !strings.Contains(old.log.String(), "partitions revoked") {
			t.Errorf("%s left the group without logging revoked partitions", old.name)
		}
		// The survivors take over the leaver's partitions and make progress
		// on them; the replacement's join then makes them give partitions
		// back, with progress the 30s periodic commit has not covered: the
		// revoke commit must carry it. (A replacement joining before the
		// takeover would simply receive the orphaned partitions.)
		deadline := time.Now().Add(2 * time.Minute)
		for nonEmptyAssignments(survivors) == takeovers {
			if time.Now().After(deadline) {
				t.Fatalf("survivors did not take over %s's partitions", old.name)
			}
			time.Sleep(50 * time.Millisecond)
		}
		h.waitCount(h.count(`SELECT count(*) FROM events`)+40, 2*time.Minute, `SELECT count(*) FROM events`)
		procs[i] = h.serve(fmt.Sprintf("ing-%d-r", i), group, slow)
		procs[i].waitLog(t, "partitions assigned", 1, time.Minute)
		t.Logf("restarted ing-%d at %d events persisted", i, h.count(`SELECT count(*) FROM events`))
	}
	// Let the restarted members work on fresh records for a moment.
	time.Sleep(3 * time.Second)
	close(stop)
	n := wait()
	// With commit_interval 30s, the final shutdown commits must cover the end.
	h.waitCount(n, 8*time.Minute, `SELECT count(*) FROM events`)
	for _, p := range procs {
		revokeCommits += p.metric(t, "memstream_consumer_commits_total", `trigger="revoke"`, `outcome="ok"`)
		revokeErrors += p.metric(t, "memstream_consumer_commits_total", `trigger="revoke"`, `outcome="error"`)
	}
	for _, p := range procs {
		p.terminate(t)
	}
	if got := h.committed(group); got != int64(n) {
		t.Errorf("group committed %d after graceful shutdowns, want %d (a commit on revoke or shutdown was lost)", got, n)
	}
	h.checkExactlyOnce("erin", n)
	revokedLines, warnLines := 0, []string{}
	for _, p := range procs {
		oldLogs = append(oldLogs, p.log.String())
	}
	for _, l := range oldLogs {
		revokedLines += strings.Count(l, "partitions revoked")
		for _, line := range strings.Split(l, "\n") {
			if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				warnLines = append(warnLines, line)
			}
		}
	}
	if len(warnLines) > 0 {
		t.Logf("warnings in the ingesters' logs:\n%s", strings.Join(warnLines, "\n"))
	}
	if revokeCommits == 0 {
		t.Errorf("no commit with trigger=revoke observed in any process's metrics (%d revoke log lines)", revokedLines)
	}
	t.Logf("rolling restart: %d events produced, %d stored, %d distinct facts, %d duplicated; %d 'partitions revoked' log lines; revoke commits scraped: %v ok, %v failed",
		n, h.count(`SELECT count(*) FROM events`), h.count(qFacts), h.count(qDupFacts), revokedLines, revokeCommits, revokeErrors)
}

// nonEmptyAssignments counts the "partitions assigned" log lines that name
// at least one partition (an empty assignment logs partitions=map[]).
func nonEmptyAssignments(ps []*proc) int {
	n := 0
	for _, p := range ps {
		n += strings.Count(p.log.String(), `msg="partitions assigned" partitions="map[`)
	}
	return n
}

// TestMain removes the memstream binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	proctest.RemoveBinary()
	os.Exit(code)
}
