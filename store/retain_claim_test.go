package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

// An idempotent retain's first attempt holds its key with a lease: only it
// renews or gives the claim up; a retry takes over only once the claim is
// given up or has lapsed (its process died), never after the retain
// answered.
func TestRetainClaimTakeOver(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	op, existing, err := st.CreateOperation(ctx, store.Operation{ID: uuid.New(), BankID: "b", Kind: "retain",
		IdempotencyKey: "k", RequestHash: "h", ClaimedBy: "first", ClaimFor: time.Minute})
	if err != nil || existing {
		t.Fatalf("create: %v existing=%v", err, existing)
	}
	if op.ClaimedBy != "first" || op.ClaimedUntil == nil {
		t.Fatalf("new retain not claimed: %+v", op)
	}
	if _, err := st.TakeOverRetain(ctx, "b", op.ID, "retry", time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("take over a held claim: %v, want ErrNotFound", err)
	}
	// The holder renews; another attempt cannot.
	if ok, err := st.HeartbeatRetain(ctx, op.ID, "first", time.Minute); err != nil || !ok {
		t.Fatalf("holder renew = %v, %v", ok, err)
	}
	if ok, _ := st.HeartbeatRetain(ctx, op.ID, "retry", time.Minute); ok {
		t.Fatal("an attempt that does not hold the claim renewed it")
	}
	// Nobody renews (the process died): the claim lapses and a retry takes
	// over; the dead attempt cannot renew any more. Its last renewal was for
	// a microsecond, so the claim has lapsed by the next statement.
	if ok, err := st.HeartbeatRetain(ctx, op.ID, "first", time.Microsecond); err != nil || !ok {
		t.Fatalf("holder renew = %v, %v", ok, err)
	}
	got, err := st.TakeOverRetain(ctx, "b", op.ID, "retry", time.Minute)
	if err != nil || got.ClaimedBy != "retry" {
		t.Fatalf("take over a lapsed claim: %+v, %v", got, err)
	}
	if ok, _ := st.HeartbeatRetain(ctx, op.ID, "first", time.Minute); ok {
		t.Fatal("the attempt that lost its claim renewed it")
	}
	// Given up by its holder (a release by another is ignored): at once.
	if err := st.ReleaseRetain(ctx, op.ID, "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.TakeOverRetain(ctx, "b", op.ID, "third", time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("take over after a release by a non-holder: %v, want ErrNotFound", err)
	}
	if err := st.ReleaseRetain(ctx, op.ID, "retry"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.TakeOverRetain(ctx, "b", op.ID, "third", time.Minute); err != nil {
		t.Fatalf("take over a released claim: %v", err)
	}
	// A retain the runner failed (no event seen) is open again once taken
	// over.
	if _, err := st.FinishOperation(ctx, op.ID, "failed", "no event was produced", nil); err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseRetain(ctx, op.ID, "third"); err != nil {
		t.Fatal(err)
	}
	got, err = st.TakeOverRetain(ctx, "b", op.ID, "fourth", time.Minute)
	if err != nil || got.Status != "pending" || got.ErrorMessage != "" || got.CompletedAt != nil {
		t.Fatalf("take over a failed retain: %+v, %v", got, err)
	}
	// Answered: nothing to take over, and the claim is gone.
	if err := st.SetOperationResponse(ctx, op.ID, json.RawMessage(`{"status":200}`)); err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseRetain(ctx, op.ID, "fourth"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.TakeOverRetain(ctx, "b", op.ID, "fifth", time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("take over an answered retain: %v, want ErrNotFound", err)
	}
	if ok, _ := st.HeartbeatRetain(ctx, op.ID, "fourth", time.Minute); ok {
		t.Fatal("renewed the claim of an answered retain")
	}
}
