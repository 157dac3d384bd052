package lifecycle

import (
	"fmt"
	"testing"
	"time"
)

// A server SIGKILLed while it runs an operation (a bank clone waiting for
// its chunks to be ingested) leaves it "processing" with a lease nobody
// renews. The next server takes it back once the lease has run out, runs it
// again, and the operation ends completed, with nothing copied twice; a
// retain accepted by the killed server ends completed too.
func TestOperationsSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three server processes")
	}
	s := newSite(t, "MEMSTREAM_HTTP_OPERATION_LEASE=2s")
	const src = "/v1/default/banks/src"

	first := s.serve("first", "ingest,api,worker")
	for i, text := range []string{"Alice moved to Lisbon in March.", "Bob repairs bicycles in Porto.", "Carol studies marine biology."} {
		body := fmt.Sprintf(`{"async":false,"items":[{"content":%q,"document_id":"doc-%d","timestamp":"2024-01-1%dT10:00:00Z"}]}`, text, i, i+5)
		first.must(t, 200, "POST", src+"/memories", body)
	}
	first.must(t, 200, "POST", src+"/directives", `{"name":"brief","content":"Answer in one sentence."}`)
	want := facts(t, first, src)
	if want == 0 {
		t.Fatal("nothing stored in the source bank")
	}
	first.terminate(t)

	// An api-only server: the clone's chunks are produced but never
	// ingested, so the clone stays processing until the crash.
	second := s.serve("second", "api")
	op := second.must(t, 202, "POST", src+"/clone?target_bank_id=dst", "")["operation_id"].(string)
	waitFor(t, "the clone running", time.Minute, func() bool {
		_, o := second.call(t, "GET", src+"/operations/"+op, "")
		return o["status"] == "processing"
	})
	// The clone has copied the bank's configuration and produced the
	// chunks, and waits for them to be ingested.
	waitFor(t, "the clone's directive", time.Minute, func() bool {
		code, out := second.call(t, "GET", "/v1/default/banks/dst/directives", "")
		return code == 200 && out["total"] == 1.0
	})
	const other = "/v1/default/banks/other"
	retain := second.must(t, 200, "POST", other+"/memories", `{"async":true,"items":[{"content":"Dana plays the cello.","document_id":"doc-9"}]}`)["operation_id"].(string)
	second.kill(t)

	third := s.serve("third", "ingest,api,worker")
	var final map[string]any
	waitFor(t, "the clone to end", 3*time.Minute, func() bool {
		_, final = third.call(t, "GET", src+"/operations/"+op, "")
		st := final["status"]
		return st != "processing" && st != "pending"
	})
	if final["status"] != "completed" {
		t.Fatalf("clone after the crash: %v", final)
	}
	waitFor(t, "the retain to complete", 2*time.Minute, func() bool {
		_, o := third.call(t, "GET", other+"/operations/"+retain, "")
		return o["status"] == "completed"
	})
	if got := facts(t, third, "/v1/default/banks/dst"); got != want {
		t.Errorf("clone holds %d facts, the source %d", got, want)
	}
	if got := total(t, third, "/v1/default/banks/dst/directives"); got != 1 {
		t.Errorf("clone holds %d directives after two runs, want 1", got)
	}
}

// total reads a list route's total.
func total(t *testing.T, p *proc, path string) int {
	t.Helper()
	out := p.must(t, 200, "GET", path, "")
	n, ok := out["total"].(float64)
	if !ok {
		t.Fatalf("GET %s: no total in %v", path, out)
	}
	return int(n)
}

// facts reads a bank's fact count (observations apart).
func facts(t *testing.T, p *proc, bank string) int {
	t.Helper()
	out := p.must(t, 200, "GET", bank+"/stats", "")
	n, ok := out["facts"].(float64)
	if !ok {
		t.Fatalf("GET %s/stats: no facts in %v", bank, out)
	}
	return int(n)
}

// A server SIGKILLed while it waits for an idempotent retain to be stored
// leaves the key claimed by an attempt nobody renews. The client's retry
// with the same Idempotency-Key against the next server takes the retain
// over once the claim has lapsed, and gets its answer; the retain is
// stored once. Before, the retry was a 409 in_progress until the claim's
// fixed term (http.retain_wait + the request timeout) ran out.
func TestIdempotentRetainSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two server processes")
	}
	s := newSite(t, "MEMSTREAM_HTTP_OPERATION_LEASE=2s")
	const bank = "/v1/default/banks/kept"
	body := `{"async":false,"items":[{"content":"Erin keeps bees on the roof of the library.","document_id":"bees"}]}`
	key := map[string]string{"Idempotency-Key": "retain-before-crash"}

	// An api-only server: the retain is produced but never ingested, so
	// the request is still waiting when the server dies.
	first := s.serve("first", "api")
	answered := make(chan int, 1)
	go func() {
		code, _ := first.callWith(t, "POST", bank+"/memories", body, key)
		answered <- code
	}()
	waitFor(t, "the retain's operation", time.Minute, func() bool {
		code, out := first.call(t, "GET", bank+"/operations", "")
		return code == 200 && out["total"] == 1.0
	})
	time.Sleep(500 * time.Millisecond) // the produce, acknowledged
	first.kill(t)
	if code := <-answered; code != 0 {
		t.Fatalf("the first attempt answered %d before the crash", code)
	}

	second := s.serve("second", "ingest,api,worker")
	code, out := second.callWith(t, "POST", bank+"/memories", body, key)
	if code != 200 || out["status"] != "persisted" {
		t.Fatalf("retry after the crash: %d %v", code, out)
	}
	code, again := second.callWith(t, "POST", bank+"/memories", body, key)
	if code != 200 || again["operation_id"] != out["operation_id"] {
		t.Fatalf("second retry: %d %v (first answer %v)", code, again, out)
	}
	if n := facts(t, second, bank); n != 1 {
		t.Fatalf("the retain stored %d facts, want 1", n)
	}
	if n := total(t, second, bank+"/documents"); n != 1 {
		t.Fatalf("%d documents, want 1", n)
	}
}
