package recallapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

// operationView is Hindsight's OperationResponse (the list) and
// OperationStatusResponse (one operation) in one shape: the single read
// adds operation_id, operation_type and completed_at, which the list
// carries too.
type operationView struct {
	ID             string            `json:"id"`
	OperationID    string            `json:"operation_id"`
	TaskType       string            `json:"task_type"`
	OperationType  string            `json:"operation_type"`
	ItemsCount     int               `json:"items_count"`
	DocumentID     *string           `json:"document_id"`
	MentalModelID  *string           `json:"mental_model_id"`
	Status         string            `json:"status"`
	ErrorMessage   *string           `json:"error_message"`
	RetryCount     int               `json:"retry_count"`
	CreatedAt      time.Time         `json:"created_at"`
	UpdatedAt      time.Time         `json:"updated_at"`
	CompletedAt    *time.Time        `json:"completed_at"`
	ResultMetadata json.RawMessage   `json:"result_metadata,omitempty"`
	Items          []store.ItemState `json:"items,omitempty"`
}

func viewOperation(o store.Operation) operationView {
	v := operationView{ID: o.ID.String(), OperationID: o.ID.String(), TaskType: o.Kind, OperationType: o.Kind, ItemsCount: o.ItemsCount,
		Status: o.Status, RetryCount: o.RetryCount, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt, CompletedAt: o.CompletedAt,
		ResultMetadata: o.Result}
	if o.DocumentID != "" {
		v.DocumentID = &o.DocumentID
	}
	if o.MentalModelID != nil {
		s := o.MentalModelID.String()
		v.MentalModelID = &s
	}
	if o.ErrorMessage != "" {
		v.ErrorMessage = &o.ErrorMessage
	}
	return v
}

// operationID reads the operation id path parameter; Hindsight answers a
// malformed one with 400.
func (s *Server) operationID(r *http.Request) (string, uuid.UUID, error) {
	bank, err := s.bankID(r)
	if err != nil {
		return "", uuid.Nil, err
	}
	id, err := uuid.Parse(r.PathValue("operation_id"))
	if err != nil {
		return "", uuid.Nil, badRequest("operation_id", "Invalid operation_id format: operation_id must be a UUID")
	}
	return bank, id, nil
}

var validOpStatus = []string{"pending", "processing", "completed", "failed", "cancelled"}

func (s *Server) listOperations(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	status, err := enumParam(r, "status", validOpStatus...)
	if err != nil {
		return err
	}
	kind, err := textParam(r, "type")
	if err != nil {
		return err
	}
	limit, err := intParam(r, "limit", 20, 1, 100)
	if err != nil {
		return err
	}
	offset, err := intParam(r, "offset", 0, 0, 1<<30)
	if err != nil {
		return err
	}
	ops, total, err := s.d.Store.ListOperations(r.Context(), bank, status, kind, limit, offset)
	if err != nil {
		return err
	}
	views := make([]operationView, len(ops))
	for i, o := range ops {
		views[i] = viewOperation(o)
		if o.Kind == "retain" && (o.Status == "pending" || o.Status == "processing") {
			if err := s.liveRetainStatus(r.Context(), o, &views[i], false); err != nil {
				return err
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"bank_id": bank, "total": total, "limit": limit, "offset": offset, "operations": views})
	return nil
}

func (s *Server) getOperation(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.operationID(r)
	if err != nil {
		return err
	}
	o, err := s.d.Store.GetOperation(r.Context(), bank, id)
	if errors.Is(err, store.ErrNotFound) {
		// Hindsight answers an unknown operation with status not_found.
		writeJSON(w, http.StatusOK, map[string]any{"operation_id": id.String(), "id": id.String(), "status": "not_found",
			"operation_type": nil, "task_type": nil, "created_at": nil, "updated_at": nil, "completed_at": nil, "error_message": nil})
		return nil
	}
	if err != nil {
		return err
	}
	v := viewOperation(o)
	if o.Kind == "retain" {
		if err := s.liveRetainStatus(r.Context(), o, &v, true); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// liveRetainStatus reads what became of a retain's events now, so a poll
// never waits for the runner's next pass.
func (s *Server) liveRetainStatus(ctx context.Context, o store.Operation, v *operationView, withItems bool) error {
	states, err := s.d.Store.OperationItemStates(ctx, o.ID)
	if err != nil {
		return err
	}
	if withItems {
		v.Items = states
	}
	if o.Status == "pending" || o.Status == "processing" {
		if st, msg := retainStatus(states); st != "pending" {
			v.Status = st
			if msg != "" {
				v.ErrorMessage = &msg
			}
		}
	}
	return nil
}

// unplacedRetainLimit is how long a retain whose Kafka positions were
// never recorded may stay pending before it is failed.
const unplacedRetainLimit = time.Hour

// unplacedPending tells whether an item that is still pending has no
// recorded Kafka position (its dead letter, if any, cannot be matched).
func unplacedPending(states []store.ItemState) bool {
	for _, st := range states {
		if st.Status == "pending" && st.Partition < 0 {
			return true
		}
	}
	return false
}

// retainStatus is completed when every event is persisted, failed when
// any was dead-lettered (naming the classes), else pending.
func retainStatus(states []store.ItemState) (string, string) {
	if !allSettled(states) {
		return "pending", ""
	}
	var dead []string
	for _, st := range states {
		if st.Status == "dead_lettered" {
			dead = append(dead, fmt.Sprintf("items[%d]: %s at %s", st.Index, st.ErrorClass, st.ErrorStage))
		}
	}
	if len(dead) > 0 {
		return "failed", "dead-lettered: " + strings.Join(dead, "; ")
	}
	return "completed", ""
}

func (s *Server) cancelOperation(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.operationID(r)
	if err != nil {
		return err
	}
	o, err := s.d.Store.GetOperation(r.Context(), bank, id)
	if err != nil {
		return err
	}
	if o.Kind == "retain" && (o.Status == "pending" || o.Status == "processing") {
		return &apiError{Status: http.StatusConflict, Code: "conflict",
			Message: "a retain's events are already in Kafka and will be ingested; it cannot be cancelled (delete the document afterwards instead)"}
	}
	if err := s.d.Store.CancelOperation(r.Context(), bank, id); err != nil {
		if errors.Is(err, store.ErrTerminal) {
			return &apiError{Status: http.StatusConflict, Code: "conflict",
				Message: fmt.Sprintf("Operation %s cannot be cancelled: status is '%s'", id, o.Status)}
		}
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": fmt.Sprintf("Operation %s cancelled", id), "operation_id": id.String()})
	return nil
}

func (s *Server) retryOperation(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.operationID(r)
	if err != nil {
		return err
	}
	o, err := s.d.Store.RetryOperation(r.Context(), bank, id)
	if err != nil {
		if errors.Is(err, store.ErrNotRetrying) {
			return &apiError{Status: http.StatusConflict, Code: "conflict", Message: fmt.Sprintf("Operation %s is neither failed nor cancelled", id)}
		}
		return err
	}
	if err := s.restartOperation(r.Context(), o); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": fmt.Sprintf("Operation %s queued for retry", id), "operation_id": id.String()})
	return nil
}

// restartOperation redoes what a retried operation needs redone before the
// runner settles it again.
func (s *Server) restartOperation(ctx context.Context, o store.Operation) error {
	switch o.Kind {
	case "consolidation":
		return s.d.Store.EnqueueConsolidation(ctx, o.BankID)
	}
	return nil
}

func (s *Server) deleteOperation(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.operationID(r)
	if err != nil {
		return err
	}
	if err := s.d.Store.DeleteOperation(r.Context(), bank, id); err != nil {
		if errors.Is(err, store.ErrNotTerminal) {
			return &apiError{Status: http.StatusConflict, Code: "conflict", Message: fmt.Sprintf("Operation %s cannot be deleted: it has not finished", id)}
		}
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": fmt.Sprintf("Operation %s deleted", id), "operation_id": id.String()})
	return nil
}

// newOperation records an operation the runner will carry out or settle.
func (s *Server) newOperation(ctx context.Context, o store.Operation) (store.Operation, error) {
	if o.ID == uuid.Nil {
		o.ID = uuid.New()
	}
	out, _, err := s.d.Store.CreateOperation(ctx, o)
	s.kick()
	return out, err
}

// kick wakes the operation runner early.
func (s *Server) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// derivedKinds are the operations whose outcome is read from the store
// (a retain's events, a consolidation's facts) rather than run here.
var derivedKinds = []string{"retain", "consolidation"}

// maxRuns bounds how often an operation is run again after the process
// running it died: a run that kills its process must not loop.
const maxRuns = 3

// maxConcurrentRuns bounds the operations one replica runs at once, so a
// long import does not hold back a mental-model refresh.
const maxConcurrentRuns = 4

// errLeaseLost ends a run whose operation this replica no longer holds.
var errLeaseLost = errors.New("operation lease lost")

// runOperations settles and carries out operations until ctx ends: a
// retain completes when its events are stored or dead-lettered, a
// consolidation when the facts waiting at its start are consolidated, and
// work the API owns (mental-model refreshes, transfers) is claimed with a
// lease and run here. Every replica runs it; claims are SKIP LOCKED and
// status changes compare-and-set, so each operation is run and settled
// once. Idle, it sleeps until the store says something is due, a NOTIFY
// announces new work, or the idle poll (s.idlePoll) passes.
func (s *Server) runOperations(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-s.wake:
		}
		s.passes.WithLabelValues("operations").Inc()
		wait := s.operationsPass(ctx)
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

// operationsPass does what is due and returns how long to sleep.
func (s *Server) operationsPass(ctx context.Context) time.Duration {
	const busy = 250 * time.Millisecond
	lost, err := s.d.Store.ReclaimOperations(ctx, maxRuns)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("operations: reclaim", slog.Any("error", err))
		}
		return busy
	}
	for _, o := range lost {
		s.log.Warn("operations: took back an operation whose runner stopped", slog.String("bank_id", o.BankID),
			slog.String("operation_id", o.ID.String()), slog.String("kind", o.Kind), slog.String("status", o.Status), slog.Int("runs", o.Runs))
	}
	for s.running.Load() < maxConcurrentRuns {
		o, ok, err := s.d.Store.ClaimOperation(ctx, s.runnerKinds, s.owner, s.cfg.OperationLease)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("operations: claim", slog.Any("error", err))
			}
			return busy
		}
		if !ok {
			break
		}
		s.startRun(ctx, o)
	}
	const page = 200
	due, err := s.d.Store.DueOperations(ctx, derivedKinds, page)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("operations: list due", slog.Any("error", err))
		}
		return busy
	}
	for _, o := range due {
		if err := s.settle(ctx, o); err != nil && ctx.Err() == nil {
			s.log.Warn("operations: settle", slog.String("bank_id", o.BankID), slog.String("operation_id", o.ID.String()),
				slog.String("kind", o.Kind), slog.Any("error", err))
		}
	}
	if len(due) == page {
		return 0
	}
	at, ok, err := s.d.Store.NextOperationDue(ctx)
	if err != nil {
		return busy
	}
	wait := s.idlePoll
	if ok {
		// Work that is due but was not claimable now (every run slot busy,
		// or locked by another replica's claim) is looked at again soon.
		wait = max(min(wait, time.Until(at)), busy/5)
		if time.Until(at) <= 0 {
			wait = busy
		}
	}
	return wait
}

// startRun runs a claimed operation in its own goroutine.
func (s *Server) startRun(ctx context.Context, o store.Operation) {
	s.running.Add(1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.kick() // a slot is free
		defer s.running.Add(-1)
		s.runClaimed(ctx, o)
	}()
}

// runClaimed runs one operation while renewing its lease, and records the
// outcome. A run whose lease is lost (the operation was cancelled, or
// reclaimed while this replica could not reach the database) stops and
// records nothing; a run cut short by this replica's shutdown puts the
// operation back for another replica.
func (s *Server) runClaimed(ctx context.Context, o store.Operation) {
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	beat := make(chan struct{})
	go func() {
		defer close(beat)
		t := time.NewTicker(s.cfg.OperationLease / 3)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
			}
			held, err := s.d.Store.HeartbeatOperation(runCtx, o.ID, s.owner, s.cfg.OperationLease)
			if err != nil {
				if runCtx.Err() == nil {
					s.log.Warn("operations: heartbeat", slog.String("operation_id", o.ID.String()), slog.Any("error", err))
				}
				continue
			}
			if !held {
				cancel(errLeaseLost)
				return
			}
		}
	}()
	result, runErr := s.runners[o.Kind](runCtx, o)
	lost := errors.Is(context.Cause(runCtx), errLeaseLost)
	cancel(nil)
	<-beat
	bg := context.WithoutCancel(ctx)
	attrs := []any{slog.String("bank_id", o.BankID), slog.String("operation_id", o.ID.String()), slog.String("kind", o.Kind)}
	switch {
	case lost:
		s.log.Warn("operations: lost the lease of a running operation; stopped it", attrs...)
		return
	case ctx.Err() != nil:
		if err := s.d.Store.ReleaseClaimedOperation(bg, o.ID, s.owner); err != nil {
			s.log.Warn("operations: release on shutdown", append(attrs, slog.Any("error", err))...)
		}
		return
	}
	status, msg := "completed", ""
	if runErr != nil {
		status, msg = "failed", runErr.Error()
	}
	if _, err := s.d.Store.FinishClaimedOperation(bg, o.ID, s.owner, status, msg, result); err != nil {
		s.log.Warn("operations: finish", append(attrs, slog.Any("error", err))...)
	}
}

func (s *Server) settle(ctx context.Context, o store.Operation) error {
	switch o.Kind {
	case "retain":
		states, err := s.d.Store.OperationItemStates(ctx, o.ID)
		if err != nil {
			return err
		}
		if len(states) == 0 {
			// No event was recorded: the request failed before producing,
			// unless an attempt still holds the key's claim.
			claimed := o.ClaimedUntil != nil && time.Until(*o.ClaimedUntil) > 0
			if !claimed && time.Since(o.CreatedAt) > 2*(s.cfg.RetainWait+s.cfg.RequestTimeout) {
				_, err := s.d.Store.FinishOperation(ctx, o.ID, "failed", "no event was produced (the request failed before Kafka acknowledged it)", nil)
				return err
			}
			return nil
		}
		st, msg := retainStatus(states)
		if st == "pending" {
			if !unplacedPending(states) || time.Since(o.CreatedAt) < unplacedRetainLimit {
				return nil
			}
			// The process that produced these events died before it
			// recorded where they landed, so a dead letter of theirs
			// cannot be found; after this long they will not be persisted.
			st, msg = "failed", fmt.Sprintf("some items were not persisted within %s, and the server that produced them stopped before recording their Kafka positions: look for them in the dead-letter topic", unplacedRetainLimit)
		}
		return s.finish(ctx, o, st, msg, nil, "retain.completed", map[string]any{"document_id": o.DocumentID, "memory_unit_count": nil})
	case "consolidation":
		left, err := s.d.Store.ConsolidationLeft(ctx, o.BankID, o.CreatedAt)
		if err != nil || left > 0 {
			return err
		}
		return s.finish(ctx, o, "completed", "", nil, "consolidation.completed", map[string]any{})
	}
	return nil
}

// finish settles an operation and, in the same transaction, queues the
// webhook event that announces it.
func (s *Server) finish(ctx context.Context, o store.Operation, status, msg string, result json.RawMessage, event string, data map[string]any) error {
	// One id per operation, event and retry: the event a receiver sees is
	// the same whichever replica settled the operation.
	evID := store.DeriveID("webhook-event", o.ID.String(), event, strconv.Itoa(o.RetryCount))
	evStatus := status
	payload, _ := json.Marshal(map[string]any{"event_id": evID, "event": event, "bank_id": o.BankID, "operation_id": o.ID,
		"status": evStatus, "timestamp": time.Now().UTC(), "data": data})
	changed, err := s.d.Store.FinishOperationAnnounced(ctx, o.ID, status, msg, result,
		store.WebhookEvent{ID: evID, BankID: o.BankID, Type: event, Payload: string(payload)})
	if changed {
		s.kickWebhooks()
	}
	return err
}
