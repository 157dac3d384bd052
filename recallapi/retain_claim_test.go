package recallapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/store"
)

// claimLikeFirstAttempt records what a first attempt of an idempotent
// retain leaves when it has claimed the key and not answered: the row,
// claimed by owner for lease.
func claimLikeFirstAttempt(t *testing.T, e *env, bank, body, key, owner string, lease time.Duration) store.Operation {
	t.Helper()
	var req RetainRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	canon, _ := json.Marshal(req)
	sum := sha256.Sum256(canon)
	op, _, err := e.st.CreateOperation(context.Background(), store.Operation{ID: uuid.New(), BankID: bank, Kind: "retain", ItemsCount: len(req.Items),
		IdempotencyKey: key, RequestHash: hex.EncodeToString(sum[:]), ClaimedBy: owner, ClaimFor: lease})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// A retry of an idempotent retain whose first attempt died mid-way (its
// claim is never renewed) waits for the claim to lapse, takes the retain
// over under the first attempt's operation id and stores it once. While a
// first attempt is alive and renewing, a retry is a 409 in_progress with
// Retry-After, and takes over as soon as the renewals stop.
func TestRetainRetryTakesOverADeadFirstAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{persist: true, retainWait: 3 * time.Second})
	const path = "/v1/default/banks/b1/memories"
	body := `{"items":[{"content":"Alice moved to Lisbon"}]}`
	dead := claimLikeFirstAttempt(t, e, "b1", body, "key-dead", "killed-process", time.Second)
	began := time.Now()
	r := e.retainWithKey(path, body, "key-dead")
	if r.status != 200 || r.body["status"] != "persisted" || r.body["operation_id"] != dead.ID.String() || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("retry after a dead first attempt: %d %s", r.status, r.raw)
	}
	if waited := time.Since(began); waited < 500*time.Millisecond {
		t.Fatalf("took over after %s, before the first attempt's claim lapsed", waited)
	}
	if n := len(e.pub.published()); n != 1 {
		t.Fatalf("published %d events, want 1", n)
	}
	if again := e.retainWithKey(path, body, "key-dead"); again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry after the takeover answered: %d %s", again.status, again.raw)
	}
	var stored int
	if err := pgtest.DB(e.st).QueryRow(context.Background(), `SELECT count(*) FROM events WHERE bank_id = 'b1'`).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("stored %d events (%v), want 1", stored, err)
	}

	// A first attempt that is alive keeps the key: the retry gets a 409
	// naming it, with Retry-After.
	alive := claimLikeFirstAttempt(t, e, "b1", body, "key-alive", "live-process", time.Second)
	ctx, stop := context.WithCancel(context.Background())
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		for ctx.Err() == nil {
			if ok, err := e.st.HeartbeatRetain(ctx, alive.ID, "live-process", time.Second); err != nil || !ok {
				if ctx.Err() == nil {
					t.Errorf("renew = %v, %v", ok, err)
				}
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	busy := e.retainWithKey(path, body, "key-alive")
	stop()
	<-renewed
	if busy.status != 409 || busy.errField() != "Idempotency-Key" || busy.header.Get("Retry-After") == "" {
		t.Fatalf("retry while the first attempt is alive: %d %s (Retry-After %q)", busy.status, busy.raw, busy.header.Get("Retry-After"))
	}
	if e, _ := busy.body["error"].(map[string]any); e["code"] != "in_progress" {
		t.Fatalf("retry while the first attempt is alive: %s", busy.raw)
	}
	if n := len(e.pub.published()); n != 1 {
		t.Fatalf("a retry produced while the first attempt held the key: %d published", n)
	}
	// The renewals stopped: the next retry takes over.
	if r := e.retainWithKey(path, body, "key-alive"); r.status != 200 || r.body["operation_id"] != alive.ID.String() {
		t.Fatalf("retry after the renewals stopped: %d %s", r.status, r.raw)
	}
}

// A first attempt that ends without an answer to replay (here a 202: not
// persisted within http.retain_wait) gives its claim up, so a retry does
// not wait for a lease to lapse: it takes over at once and produces the
// same event keys again, which the pipeline stores once.
func TestRetainUnansweredAttemptReleasesItsClaim(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{retainWait: 300 * time.Millisecond})
	const path = "/v1/default/banks/b1/memories"
	body := `{"items":[{"content":"Alice moved to Lisbon"}]}`
	first := e.retainWithKey(path, body, "key-1")
	if first.status != 202 {
		t.Fatalf("first: %d %s", first.status, first.raw)
	}
	second := e.retainWithKey(path, body, "key-1")
	if second.status != 202 || second.body["operation_id"] != first.body["operation_id"] {
		t.Fatalf("retry: %d %s", second.status, second.raw)
	}
	pub := e.pub.published()
	if len(pub) != 2 || pub[0].EventID != pub[1].EventID {
		t.Fatalf("published %+v; want the same event twice", pub)
	}
	var claimed bool
	if err := pgtest.DB(e.st).QueryRow(context.Background(), `SELECT claimed_until > now() FROM operations WHERE id = $1`,
		first.body["operation_id"]).Scan(&claimed); err != nil || claimed {
		t.Fatalf("the unanswered retain still holds its claim (%v)", err)
	}
}
