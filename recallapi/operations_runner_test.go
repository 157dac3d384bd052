package recallapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/store"
)

// countingRefresher counts refreshes per model, from any replica.
type countingRefresher struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingRefresher) Refresh(_ context.Context, _, id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[id]++
	return nil
}

func (c *countingRefresher) DryRefresh(context.Context, string, string) (string, []string, error) {
	return "", nil, nil
}

// Two replicas over one database run every operation once: each refresh
// is claimed by one of them.
func TestOperationsRunOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	ref := &countingRefresher{calls: map[string]int{}}
	a := newEnv(t, envOpts{refresher: ref, listener: true})
	b := newEnv(t, envOpts{refresher: ref, listener: true, st: a.st})
	ctx, cancel := context.WithCancel(context.Background())
	a.srv.Start(ctx)
	b.srv.Start(ctx)
	defer func() { cancel(); a.srv.Close(); b.srv.Close() }()
	const n = 12
	var ops []string
	for i := 0; i < n; i++ {
		e := a
		if i%2 == 1 {
			e = b
		}
		r := e.call("POST", "/v1/default/banks/b1/mental-models", fmt.Sprintf(`{"name":"m%d","source_query":"q%d"}`, i, i), "")
		if r.status != 200 {
			t.Fatalf("create: %d %s", r.status, r.raw)
		}
		ops = append(ops, r.body["operation_id"].(string))
	}
	for _, id := range ops {
		waitUntil(t, "operation "+id+" completed", func() bool {
			return a.call("GET", "/v1/default/banks/b1/operations/"+id, "", "").body["status"] == "completed"
		})
	}
	ref.mu.Lock()
	defer ref.mu.Unlock()
	if len(ref.calls) != n {
		t.Fatalf("%d models refreshed, want %d", len(ref.calls), n)
	}
	for id, c := range ref.calls {
		if c != 1 {
			t.Errorf("model %s refreshed %d times", id, c)
		}
	}
}

// blockingRefresher holds a refresh until released, or until its context
// ends.
type blockingRefresher struct {
	started chan struct{}
	release chan struct{}
	ended   chan error
}

func (f *blockingRefresher) Refresh(ctx context.Context, _, _ string) error {
	close(f.started)
	select {
	case <-f.release:
		f.ended <- nil
		return nil
	case <-ctx.Done():
		f.ended <- ctx.Err()
		return ctx.Err()
	}
}

func (f *blockingRefresher) DryRefresh(context.Context, string, string) (string, []string, error) {
	return "", nil, nil
}

// A replica that loses its lease (its heartbeats stopped reaching the
// database, and another replica took the operation back) stops the run;
// a replica shutting down gives the operation back for the next one.
func TestRunStopsWhenLeaseIsLostAndReleasesOnShutdown(t *testing.T) {
	t.Parallel()
	url, _ := pgtest.Schema(t)
	st := openStoreAt(t, url)
	db := pgtest.Pool(t, url)
	ref := &blockingRefresher{started: make(chan struct{}), release: make(chan struct{}), ended: make(chan error, 1)}
	e := newEnv(t, envOpts{refresher: ref, st: st})
	e.srv.cfg.OperationLease = 3 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	e.srv.Start(ctx)
	r := e.call("POST", "/v1/default/banks/b1/mental-models", `{"name":"m","source_query":"q"}`, "")
	if r.status != 200 {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	op := uuid.MustParse(r.body["operation_id"].(string))
	<-ref.started
	// Another replica reclaims it: the holder's next heartbeat finds the
	// lease gone and the run is cancelled.
	if _, err := db.Exec(ctx, `UPDATE operations SET claimed_by = 'other', claimed_until = now() + interval '1 hour' WHERE id = $1`, op); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ref.ended:
		if err == nil {
			t.Fatal("the refresh finished instead of being stopped")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run went on after its lease was lost")
	}
	o, err := st.GetOperation(ctx, "b1", op)
	if err != nil || o.Status != "processing" || o.ClaimedBy != "other" {
		t.Fatalf("after the lost lease: %+v, %v; want it left to its new holder", o, err)
	}

	// Shutdown mid-run: the operation goes back to pending.
	if _, err := db.Exec(ctx, `UPDATE operations SET status = 'pending', claimed_by = NULL, claimed_until = NULL WHERE id = $1`, op); err != nil {
		t.Fatal(err)
	}
	ref.started, ref.ended = make(chan struct{}), make(chan error, 1)
	e.srv.kick()
	<-ref.started
	cancel()
	e.srv.Close()
	o, err = st.GetOperation(context.Background(), "b1", op)
	if err != nil || o.Status != "pending" || o.ClaimedBy != "" {
		t.Fatalf("after shutdown: %+v, %v; want pending for the next replica", o, err)
	}
}

// Idle, the runner and the sender sleep for the idle poll; with work due
// later they sleep until then, not a fixed tick.
func TestIdleLoopsSleepUntilDue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{listener: true})
	ctx := context.Background()
	if e.srv.idlePoll != idlePollListening {
		t.Fatalf("idle poll with a listener = %v", e.srv.idlePoll)
	}
	client := e.srv.webhookClient()
	if w := e.srv.operationsPass(ctx); w != idlePollListening {
		t.Fatalf("idle operations pass sleeps %v, want %v", w, idlePollListening)
	}
	if w := e.srv.deliveryPass(ctx, client); w != idlePollListening {
		t.Fatalf("idle delivery pass sleeps %v, want %v", w, idlePollListening)
	}
	// An open retain is looked at again soon, then less and less often.
	if _, _, err := e.st.CreateOperation(ctx, store.Operation{ID: uuid.New(), BankID: "b1", Kind: "retain"}); err != nil {
		t.Fatal(err)
	}
	if w := e.srv.operationsPass(ctx); w <= 0 || w > time.Second {
		t.Fatalf("with a young retain open the runner sleeps %v", w)
	}
	// A failed delivery is retried after 5 s: the sender sleeps until then.
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	defer sink.Close()
	if r := e.call("POST", "/v1/default/banks/b1/webhooks", `{"url":"`+sink.URL+`","event_types":["retain.completed"]}`, ""); r.status != 201 {
		t.Fatalf("webhook: %d %s", r.status, r.raw)
	}
	if err := e.st.QueueWebhookEvent(ctx, store.WebhookEvent{ID: uuid.New(), BankID: "b1", Type: "retain.completed", Payload: "{}"}); err != nil {
		t.Fatal(err)
	}
	if w := e.srv.deliveryPass(ctx, client); w < time.Second || w > 5*time.Second {
		t.Fatalf("after a failed attempt the sender sleeps %v, want until the 5 s retry", w)
	}
}

// An idle replica is woken by another replica's new operation (NOTIFY),
// not by its poll.
func TestRunnerWokenByNotify(t *testing.T) {
	t.Parallel()
	ref := &countingRefresher{calls: map[string]int{}}
	a := newEnv(t, envOpts{refresher: ref})
	b := newEnv(t, envOpts{refresher: ref, listener: true, st: a.st})
	b.srv.idlePoll = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	b.srv.Start(ctx)
	defer func() { cancel(); b.srv.Close() }()
	waitUntil(t, "b's first pass", func() bool {
		return counterValue(b.srv.passes.WithLabelValues("operations")) >= 1 && len(b.srv.wake) == 0
	})
	var done atomic.Bool
	r := a.call("POST", "/v1/default/banks/b1/mental-models", `{"name":"m","source_query":"q"}`, "")
	if r.status != 200 {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	id := r.body["operation_id"].(string)
	waitUntil(t, "replica b ran a's operation", func() bool {
		if !done.Load() && a.call("GET", "/v1/default/banks/b1/operations/"+id, "", "").body["status"] == "completed" {
			done.Store(true)
		}
		return done.Load()
	})
}
