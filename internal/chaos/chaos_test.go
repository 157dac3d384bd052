package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/memstream/memstream/internal/proctest"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/memstream/memstream/pgserver"
)

const (
	topic = "memstream.events"
	dlq   = "memstream.events.dlq"
	// good is the number of ordinary events; poison records, the long
	// event and the retains come on top.
	good = 400
	// The long event: one message of ~960 KB, one fact per sentence. The
	// 40 000-sentence variant of issue 15 is measured by the pipeline's
	// TestLongEventLatency (MEMSTREAM_MEASURE=1); here fewer, longer
	// sentences keep the run short.
	sentences = 8000
	retains   = 20
)

// TestChaos runs the whole scenario; see the package doc.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("builds memstream and runs its own PostgreSQL server")
	}
	if _, err := pgserver.FindBinDir(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no PostgreSQL binaries under CI: %v", err)
		}
		t.Skipf("no PostgreSQL binaries: %v", err)
	}
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	bin := proctest.Binary(t)
	began := time.Now()

	// The database: a server of the test's own, restarted mid-run.
	dir, err := pgserver.TempDir("memstream-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	port, err := pgserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	pgcfg := pgserver.Config{DataDir: filepath.Join(dir, "data"), Port: port}
	pg, err := pgserver.Start(ctx, pgserver.Deps{Logger: log}, pgcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })
	dbURL := pg.URL()

	// Kafka in process, so its faults can be injected: a third of the
	// offset commits fail, every fifth fetch fails, and every third
	// produce to the dead-letter topic fails.
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, topic, dlq))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	var commits, fetches, dlqProduces, injected atomic.Int64
	cluster.ControlKey(int16(kmsg.OffsetCommit), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		if commits.Add(1)%3 == 0 {
			injected.Add(1)
			return nil, errors.New("chaos: offset commit dropped"), true
		}
		return nil, nil, false
	})
	cluster.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		if fetches.Add(1)%5 == 0 {
			injected.Add(1)
			return nil, errors.New("chaos: fetch dropped"), true
		}
		return nil, nil, false
	})
	cluster.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		for _, tp := range req.(*kmsg.ProduceRequest).Topics {
			if tp.Topic == dlq && dlqProduces.Add(1)%3 == 0 {
				injected.Add(1)
				return nil, errors.New("chaos: dead-letter produce dropped"), true
			}
		}
		return nil, nil, false
	})
	brokers := cluster.ListenAddrs()
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchMaxBytes(16<<20))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	produce := func(recs ...*kgo.Record) {
		t.Helper()
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	s := &scenario{t: t, bin: bin, dbURL: dbURL, brokers: brokers}
	a := s.serve("a")
	s.waitReady(a)
	// A bank whose policy blocks secrets, for the blocked poison record.
	s.http(a, "PUT", "/v1/default/banks/locked", `{"defense_policy":{"default":"block"}}`, nil, 200)

	poison := poisonRecords()
	var first []*kgo.Record
	for i := 0; i < good/2; i++ {
		first = append(first, flightRecord(i))
	}
	first = append(first, &kgo.Record{Topic: topic, Key: []byte("chaosbig/manifest"), Value: longEvent("chaosbig", "big-1", sentences)})
	for _, v := range poison {
		first = append(first, &kgo.Record{Topic: topic, Key: []byte("poison"), Value: v})
	}
	rand.New(rand.NewPCG(7, 7)).Shuffle(len(first), func(i, j int) { first[i], first[j] = first[j], first[i] })
	produce(first...)

	// Fault 1: restart PostgreSQL once a quarter of the events is in.
	s.waitStored(good/4, 5*time.Minute)
	if err := pg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if pg, err = pgserver.Start(ctx, pgserver.Deps{Logger: log}, pgcfg); err != nil {
		t.Fatal(err)
	}
	var second []*kgo.Record
	for i := good / 2; i < good; i++ {
		second = append(second, flightRecord(i))
	}
	produce(second...)

	// Fault 2: SIGKILL the memstream process half way, start another.
	s.waitStored(good/2, 5*time.Minute)
	a.kill()
	b := s.serve("b")
	s.waitReady(b)

	// Retains, each retried with the same body and Idempotency-Key: the
	// first attempt's answer is lost (the client gives up after 20 ms, as
	// after a timeout), the retry gets its answer, and every third retain
	// is sent a third time.
	for i := 0; i < retains; i++ {
		key := fmt.Sprintf("chaos-retain-%03d", i)
		body := fmt.Sprintf(`{"items":[{"content":"Retained note %03d: the quarterly review moved to Porto.","document_id":"notes"}],"async":true}`, i)
		hdr := map[string]string{"Idempotency-Key": key}
		s.send(b, "POST", "/v1/default/banks/retainer/memories", body, hdr, 20*time.Millisecond)
		s.retain(b, "/v1/default/banks/retainer/memories", body, hdr)
		if i%3 == 0 {
			s.retain(b, "/v1/default/banks/retainer/memories", body, hdr)
		}
	}

	// Everything arrives: the good events, the long event, the retains,
	// and every poison record dead-lettered.
	deadline := 10 * time.Minute
	s.waitFor("all events stored or dead-lettered", deadline, func(n counter) bool {
		return n.is(`SELECT count(*) FROM events WHERE bank_id = 'chaos' AND unit_of IS NULL`, good, false) &&
			n.is(`SELECT count(*) FROM events WHERE bank_id = 'chaosbig' AND unit_of IS NULL`, 1, false) &&
			n.is(`SELECT count(DISTINCT text) FROM memory_units WHERE bank_id = 'retainer'`, retains, true) &&
			n.is(`SELECT count(*) FROM dead_letters`, len(poison), true)
	})
	b.term(t, 20*time.Second)

	c := s.conn(ctx)
	defer c.Close(ctx)
	storedGood := count(t, c, `SELECT count(DISTINCT substring(text from 'QX[0-9]{5}')) FROM memory_units WHERE bank_id = 'chaos' AND text ~ 'QX[0-9]{5}'`)
	doubledGood := count(t, c, `SELECT count(*) FROM (SELECT substring(text from 'QX[0-9]{5}') FROM memory_units WHERE bank_id = 'chaos' AND text ~ 'QX[0-9]{5}' GROUP BY 1 HAVING count(*) > 1) d`)
	bigFacts := count(t, c, `SELECT count(*) FROM memory_units WHERE bank_id = 'chaosbig' AND text LIKE 'Box %'`)
	bigDistinct := count(t, c, `SELECT count(DISTINCT text) FROM memory_units WHERE bank_id = 'chaosbig' AND text LIKE 'Box %'`)
	storedRetains := count(t, c, `SELECT count(DISTINCT substring(text from 'note [0-9]{3}')) FROM memory_units WHERE bank_id = 'retainer'`)
	doubledRetains := count(t, c, `SELECT count(*) FROM (SELECT substring(text from 'note [0-9]{3}') FROM memory_units WHERE bank_id = 'retainer' GROUP BY 1 HAVING count(*) > 1) d`)
	deadLettered := count(t, c, `SELECT count(*) FROM dead_letters`)

	sent := good + 1 + len(poison) + retains
	storedOnce := storedGood - doubledGood + storedRetains - doubledRetains
	if bigFacts == sentences && bigDistinct == sentences {
		storedOnce++
	}
	doubled := doubledGood + doubledRetains + (bigFacts - bigDistinct)
	lost := sent - storedOnce - deadLettered - doubled
	summary := fmt.Sprintf("chaos: events sent %d, stored once %d, dead-lettered %d, lost %d, doubled %d", sent, storedOnce, deadLettered, lost, doubled)
	fmt.Println(summary)
	t.Logf("%s (faults injected by kfake: %d; PostgreSQL restarted once; memstream SIGKILLed once; %s)", summary, injected.Load(), time.Since(began).Round(time.Second))
	if lost != 0 || doubled != 0 || deadLettered != len(poison) {
		t.Fatalf("%s; want lost 0, doubled 0, dead-lettered %d", summary, len(poison))
	}
	if bigFacts != sentences {
		t.Fatalf("the long event stored %d of its %d facts", bigFacts, sentences)
	}
	// The blocked record's dead letter keeps no secret.
	for _, r := range readAll(t, brokers, dlq, deadLettered) {
		if bytes.Contains(r.Value, []byte(awsKeyID)) {
			t.Fatal("the dead-letter topic keeps the blocked secret")
		}
	}
}

// scenario holds what the helpers share.
type scenario struct {
	t       *testing.T
	bin     string
	dbURL   string
	brokers []string
}

func (s *scenario) conn(ctx context.Context) *pgx.Conn {
	s.t.Helper()
	c, err := pgx.Connect(ctx, s.dbURL)
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

func count(t *testing.T, c *pgx.Conn, q string) int {
	t.Helper()
	var n int
	if err := c.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// waitFor polls cond on a fresh connection (the server restarts) until it
// holds. cond's counter reports false when a query fails meanwhile.
func (s *scenario) waitFor(what string, timeout time.Duration, cond func(n counter) bool) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ok := false
		if c, err := pgx.Connect(ctx, s.dbURL); err == nil {
			ok = cond(func(q string) (int, bool) {
				var n int
				err := c.QueryRow(ctx, q).Scan(&n)
				return n, err == nil
			})
			c.Close(ctx)
		}
		cancel()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// counter runs a count query, reporting false if it failed.
type counter func(q string) (int, bool)

// is reports whether q counts exactly want (at least want when atLeast).
func (n counter) is(q string, want int, atLeast bool) bool {
	v, ok := n(q)
	if !ok {
		return false
	}
	if atLeast {
		return v >= want
	}
	return v == want
}

func (s *scenario) waitStored(want int, timeout time.Duration) {
	s.t.Helper()
	s.waitFor(fmt.Sprintf("%d events stored", want), timeout, func(n counter) bool {
		return n.is(`SELECT count(*) FROM events WHERE bank_id = 'chaos'`, want, true)
	})
}

// proc is one `memstream serve` process.
type proc struct {
	name   string
	cmd    *exec.Cmd
	addr   string
	log    *proctest.LogBuffer
	exited chan struct{}
	err    error
}

func (s *scenario) serve(name string) *proc {
	s.t.Helper()
	port, err := pgserver.FreePort()
	if err != nil {
		s.t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(s.bin, "serve")
	cmd.Env = append(os.Environ(),
		"MEMSTREAM_DATA_DIR="+filepath.Join(s.t.TempDir(), name),
		"MEMSTREAM_DATABASE_URL="+s.dbURL,
		"MEMSTREAM_DATABASE_MAX_CONNS=8",
		"MEMSTREAM_KAFKA_BROKERS="+strings.Join(s.brokers, ","),
		"MEMSTREAM_KAFKA_TOPICS="+topic,
		"MEMSTREAM_KAFKA_DLQ_TOPIC="+dlq,
		"MEMSTREAM_KAFKA_COMMIT_INTERVAL=200ms",
		"MEMSTREAM_KAFKA_SHUTDOWN_TIMEOUT=10s",
		"MEMSTREAM_HTTP_ADDR="+addr,
		"MEMSTREAM_EMBED_PROVIDER=hash",
		"MEMSTREAM_EMBED_DIM=64",
		"MEMSTREAM_DEFENSE_AUDIT_SALT=chaos-fingerprint-salt",
		"MEMSTREAM_CONSOLIDATION_ENABLED=false",
		"MEMSTREAM_LOG_LEVEL=warn",
	)
	p := &proc{name: name, cmd: cmd, addr: addr, log: &proctest.LogBuffer{}, exited: make(chan struct{})}
	cmd.Stdout = io.Discard
	cmd.Stderr = p.log
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	s.t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if s.t.Failed() {
			s.t.Logf("log of memstream %s:\n%s", name, proctest.Tail(p.log.String(), 4000))
		}
	})
	return p
}

func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// term stops the process with SIGTERM, as an orchestrator does, and fails
// the test if it outlives kafka.shutdown_timeout by more than slack.
func (p *proc) term(t *testing.T, within time.Duration) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		if p.err != nil {
			t.Fatalf("memstream %s exited with %v", p.name, p.err)
		}
	case <-time.After(within):
		t.Fatalf("memstream %s still running %s after SIGTERM", p.name, within)
	}
}

func (s *scenario) waitReady(p *proc) {
	s.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get("http://" + p.addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		select {
		case <-p.exited:
			s.t.Fatalf("memstream %s exited at start: %v\n%s", p.name, p.err, proctest.Tail(p.log.String(), 4000))
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("memstream %s not serving after 2 minutes", p.name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// send sends one request with a client timeout and ignores the outcome:
// a client whose answer was lost.
func (s *scenario) send(p *proc, method, path, body string, headers map[string]string, timeout time.Duration) {
	req, err := http.NewRequest(method, "http://"+p.addr+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if resp, err := (&http.Client{Timeout: timeout}).Do(req); err == nil {
		resp.Body.Close()
	}
}

// http sends one request and checks its status.
func (s *scenario) http(p *proc, method, path, body string, headers map[string]string, want int) {
	s.t.Helper()
	req, err := http.NewRequest(method, "http://"+p.addr+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	cl := &http.Client{Timeout: time.Minute}
	resp, err := cl.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		s.t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, out)
	}
}

// retain sends an idempotent retain as a careful client does: a 503, or a
// 409 in_progress (the key's first attempt has not answered yet), is
// retried after Retry-After or a growing pause, a bounded number of times,
// so a key that never frees still fails the test.
func (s *scenario) retain(p *proc, path, body string, headers map[string]string) {
	s.t.Helper()
	pause := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequest("POST", "http://"+p.addr+path, strings.NewReader(body))
		if err != nil {
			s.t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
		if err != nil {
			s.t.Fatalf("POST %s: %v", path, err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			return
		}
		retryable := resp.StatusCode == 503 || resp.StatusCode == 409 && bytes.Contains(out, []byte(`"in_progress"`))
		if !retryable || attempt == 5 {
			s.t.Fatalf("POST %s (attempt %d): status %d, want 200: %s", path, attempt, resp.StatusCode, out)
		}
		wait := pause
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			wait = time.Duration(secs) * time.Second
		}
		time.Sleep(wait)
		pause *= 2
	}
}

func flightRecord(i int) *kgo.Record {
	v, _ := json.Marshal(map[string]any{
		"bank_id": "chaos", "event_id": fmt.Sprintf("chaos-e%05d", i), "document_id": fmt.Sprintf("conv-%d", i%17),
		"messages": []map[string]string{
			{"role": "user", "name": "Alice", "content": fmt.Sprintf("I booked flight number QX%05d to Lisbon for the conference.", i), "timestamp": "2026-11-01T10:00:00Z"},
			{"role": "assistant", "content": "Noted, I will remind you the day before.", "timestamp": "2026-11-01T10:00:05Z"},
		},
	})
	return &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("chaos/conv-%d", i%17)), Value: v}
}

func longEvent(bank, eventID string, n int) []byte {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "Box %05d went to bay %02d of the northern loading dock after the morning inspection of its seals and labels was done. ", i, i%97)
	}
	b, _ := json.Marshal(map[string]any{"bank_id": bank, "event_id": eventID, "document_id": "manifest",
		"messages": []map[string]string{{"role": "user", "name": "Alice", "content": sb.String(), "timestamp": "2026-11-01T10:00:00Z"}}})
	return b
}

// awsKeyID is shaped like an AWS access key id (the test never holds a
// real one): the blocked record carries it.
var awsKeyID = "AKIA" + strings.ToUpper(strconv.FormatInt(rand.New(rand.NewPCG(3, 4)).Int64N(1<<60), 32) + "QRSTUVWXYZ234567")[:16]

// poisonRecords are one record of every dead-letter class the decoder and
// the defense gate give.
func poisonRecords() [][]byte {
	return [][]byte{
		[]byte(`{"bank_id": "chaos", "content": `),
		append([]byte(`{"bank_id":"chaos","content":"`), 0xff, 0xfe, '"', '}'),
		[]byte(`{"bank_id":"chaos","content":"` + strings.Repeat("x", 2<<20) + `"}`),
		[]byte(`{"content":"hello there, I live in Paris"}`),
		[]byte(`{"bank_id":"chaos","content":"x","messages":[{"role":"user","content":"y"}]}`),
		[]byte(`{"bank_id":"chaos"}`),
		[]byte(`{"bank_id":"../etc","content":"x"}`),
		[]byte(`{"bank_id":"chaos","messages":[{"role":"robot","content":"y"}]}`),
		[]byte(`{"bank_id":"locked","event_id":"locked-1","content":"The deploy key is ` + awsKeyID + `, keep it safe."}`),
	}
}

func readAll(t *testing.T, brokers []string, topic string, want int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < want && ctx.Err() == nil {
		out = append(out, cl.PollFetches(ctx).Records()...)
	}
	return out
}
