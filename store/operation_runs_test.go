package store_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/store"
)

// An operation the API runs is leased to one runner at a time; a runner
// whose lease ran out (its process died) loses it to the next one, cannot
// record an outcome any more, and after maxRuns claims the operation fails
// with a message instead of looping.
func TestOperationLeaseAndReclaim(t *testing.T) {
	t.Parallel()
	st, url := migratedURL(t, 4)
	ctx := context.Background()
	db := pgtest.Pool(t, url)
	kinds := []string{"export"}
	op, _, err := st.CreateOperation(ctx, store.Operation{ID: uuid.New(), BankID: "b", Kind: "export"})
	if err != nil {
		t.Fatal(err)
	}
	// Two replicas claim at once: one gets it.
	var wg sync.WaitGroup
	got := make([]bool, 2)
	for i, owner := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok, err := st.ClaimOperation(ctx, kinds, owner, time.Minute)
			if err != nil {
				t.Error(err)
			}
			got[i] = ok
		}()
	}
	wg.Wait()
	if got[0] == got[1] {
		t.Fatalf("claims = %v; want exactly one", got)
	}
	holder, other := "a", "b"
	if got[1] {
		holder, other = "b", "a"
	}
	if ok, err := st.HeartbeatOperation(ctx, op.ID, holder, time.Minute); err != nil || !ok {
		t.Fatalf("holder heartbeat = %v, %v", ok, err)
	}
	if ok, _ := st.HeartbeatOperation(ctx, op.ID, other, time.Minute); ok {
		t.Fatal("a replica that does not hold the lease renewed it")
	}
	if lost, err := st.ReclaimOperations(ctx, 3); err != nil || len(lost) != 0 {
		t.Fatalf("reclaim of a live lease: %v, %v", lost, err)
	}

	// The holder dies: its lease runs out.
	expire := func() {
		t.Helper()
		if _, err := db.Exec(ctx, `UPDATE operations SET claimed_until = now() - interval '1 second' WHERE id = $1`, op.ID); err != nil {
			t.Fatal(err)
		}
	}
	expire()
	next, ok, err := st.NextOperationDue(ctx)
	if err != nil || !ok || time.Until(next) > 0 {
		t.Fatalf("next due = %v %v %v; want the lapsed lease, now", next, ok, err)
	}
	lost, err := st.ReclaimOperations(ctx, 3)
	if err != nil || len(lost) != 1 || lost[0].Status != "pending" || lost[0].Runs != 1 {
		t.Fatalf("reclaim = %+v, %v; want one pending operation after one run", lost, err)
	}
	second, ok, err := st.ClaimOperation(ctx, kinds, other, time.Minute)
	if err != nil || !ok || second.Runs != 2 || second.ClaimedBy != other {
		t.Fatalf("second claim = %+v %v %v", second, ok, err)
	}
	// The first holder comes back from a pause: it can neither renew nor
	// finish what it lost.
	if ok, _ := st.HeartbeatOperation(ctx, op.ID, holder, time.Minute); ok {
		t.Fatal("the old holder renewed a reclaimed lease")
	}
	if ok, _ := st.FinishClaimedOperation(ctx, op.ID, holder, "failed", "stale", nil); ok {
		t.Fatal("the old holder finished a reclaimed operation")
	}

	// A run that kills its process every time fails after three claims.
	expire()
	if _, err := st.ReclaimOperations(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := st.ClaimOperation(ctx, kinds, "c", time.Minute); !ok {
		t.Fatal("third claim refused")
	}
	expire()
	lost, err = st.ReclaimOperations(ctx, 3)
	if err != nil || len(lost) != 1 || lost[0].Status != "failed" || lost[0].ErrorMessage == "" || lost[0].CompletedAt == nil {
		t.Fatalf("after three runs: %+v, %v; want failed with a message", lost, err)
	}
	if _, ok, _ := st.ClaimOperation(ctx, kinds, "d", time.Minute); ok {
		t.Fatal("a failed operation was claimed")
	}
	// Retry starts the count again.
	if _, err := st.RetryOperation(ctx, "b", op.ID); err != nil {
		t.Fatal(err)
	}
	o, ok, err := st.ClaimOperation(ctx, kinds, "e", time.Minute)
	if err != nil || !ok || o.Runs != 1 {
		t.Fatalf("claim after retry = %+v %v %v", o, ok, err)
	}
	if ok, err := st.FinishClaimedOperation(ctx, op.ID, "e", "completed", "", json.RawMessage(`{"n":1}`)); err != nil || !ok {
		t.Fatalf("finish = %v, %v", ok, err)
	}
	if o, _ := st.GetOperation(ctx, "b", op.ID); o.Status != "completed" || string(o.Result) != `{"n": 1}` {
		t.Fatalf("finished operation: %+v", o)
	}
	if _, ok, err := st.NextOperationDue(ctx); err != nil || ok {
		t.Fatalf("next due with nothing open = %v, %v", ok, err)
	}
}

// A graceful stop gives the operation back without counting a run.
func TestReleaseClaimedOperation(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	op, _, _ := st.CreateOperation(ctx, store.Operation{ID: uuid.New(), BankID: "b", Kind: "import"})
	if _, ok, _ := st.ClaimOperation(ctx, []string{"import"}, "a", time.Minute); !ok {
		t.Fatal("no claim")
	}
	if err := st.ReleaseClaimedOperation(ctx, op.ID, "a"); err != nil {
		t.Fatal(err)
	}
	o, ok, err := st.ClaimOperation(ctx, []string{"import"}, "b", time.Minute)
	if err != nil || !ok || o.Runs != 1 {
		t.Fatalf("claim after release = %+v %v %v; want runs 1", o, ok, err)
	}
}

// Open retains are looked at with a growing interval, and the look is a
// claim: a second runner right after the first sees nothing due.
func TestDueOperationsBackOff(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	op, _, _ := st.CreateOperation(ctx, store.Operation{ID: uuid.New(), BankID: "b", Kind: "retain"})
	due, err := st.DueOperations(ctx, []string{"retain"}, 10)
	if err != nil || len(due) != 1 || due[0].ID != op.ID {
		t.Fatalf("first look = %v, %v", due, err)
	}
	if due, _ := st.DueOperations(ctx, []string{"retain"}, 10); len(due) != 0 {
		t.Fatalf("second look right away found %d", len(due))
	}
	next, ok, err := st.NextOperationDue(ctx)
	if err != nil || !ok || time.Until(next) <= 0 || time.Until(next) > 30*time.Second {
		t.Fatalf("next look at %v (%v, %v); want within 30 s", next, ok, err)
	}
	// A retain is never claimed as work to run.
	if _, ok, _ := st.ClaimOperation(ctx, []string{"export"}, "a", time.Minute); ok {
		t.Fatal("claimed a retain as an export")
	}
}

// A delivery whose sender's claim ran out is sent by another sender; the
// first cannot record its late outcome over the second's.
func TestDeliveryClaimToken(t *testing.T) {
	t.Parallel()
	st, url := migratedURL(t, 4)
	ctx := context.Background()
	db := pgtest.Pool(t, url)
	hook, err := st.CreateWebhook(ctx, store.Webhook{ID: uuid.New(), BankID: "b", URL: "http://x.invalid/", EventTypes: []string{"retain.completed"},
		Enabled: true, HTTPConfig: json.RawMessage(`{"timeout_seconds": 5}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.QueueWebhookEvent(ctx, store.WebhookEvent{ID: uuid.New(), BankID: "b", Type: "retain.completed", Payload: "{}"}); err != nil {
		t.Fatal(err)
	}
	first, err := st.ClaimDeliveries(ctx, 10)
	if err != nil || len(first) != 1 || first[0].WebhookID != hook.ID {
		t.Fatalf("claim = %v, %v", first, err)
	}
	// Leased for the webhook's timeout and half a minute more.
	if next, ok, _ := st.NextDeliveryDue(ctx); !ok || time.Until(next) < 30*time.Second || time.Until(next) > 40*time.Second {
		t.Fatalf("lease ends in %v; want 35 s", time.Until(next))
	}
	if again, _ := st.ClaimDeliveries(ctx, 10); len(again) != 0 {
		t.Fatal("a leased delivery was claimed twice")
	}
	if _, err := db.Exec(ctx, `UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	second, err := st.ClaimDeliveries(ctx, 10)
	if err != nil || len(second) != 1 || second[0].ID != first[0].ID || second[0].ClaimToken == first[0].ClaimToken {
		t.Fatalf("reclaim = %v, %v", second, err)
	}
	if ok, err := st.DeliverySucceeded(ctx, second[0], 200, "ok"); err != nil || !ok {
		t.Fatalf("second sender's record = %v, %v", ok, err)
	}
	if ok, _ := st.DeliveryFailed(ctx, first[0], nil, "", "timeout", 6, time.Second); ok {
		t.Fatal("the first sender's late failure overwrote the delivery")
	}
	ds, err := st.ListDeliveries(ctx, "b", hook.ID, nil, 10)
	if err != nil || len(ds) != 1 || ds[0].Status != "delivered" || ds[0].Attempts != 1 {
		t.Fatalf("deliveries = %+v, %v", ds, err)
	}
	if _, ok, _ := st.NextDeliveryDue(ctx); ok {
		t.Fatal("a delivered delivery is still due")
	}
}

// New work is announced on the channels idle runners listen to.
func TestWorkIsNotified(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	got := make(chan string, 16)
	done := make(chan error, 1)
	go func() {
		done <- st.Listen(ctx, []string{store.OperationsChannel, store.WebhooksChannel}, func() { close(ready) },
			func(ch, _ string) { got <- ch })
	}()
	<-ready
	if _, err := st.CreateWebhook(ctx, store.Webhook{ID: uuid.New(), BankID: "nb", URL: "http://x.invalid/",
		EventTypes: []string{"retain.completed"}, Enabled: true, HTTPConfig: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.CreateOperation(ctx, store.Operation{ID: uuid.New(), BankID: "nb", Kind: "export"}); err != nil {
		t.Fatal(err)
	}
	if err := st.QueueWebhookEvent(ctx, store.WebhookEvent{ID: uuid.New(), BankID: "nb", Type: "retain.completed", Payload: "{}"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{store.OperationsChannel: true, store.WebhooksChannel: true}
	for len(want) > 0 {
		select {
		case ch := <-got:
			delete(want, ch)
		case err := <-done:
			t.Fatalf("listener ended: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatalf("no notification on %v", want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
