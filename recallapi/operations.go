package recallapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
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

// runOperations settles and carries out operations until ctx ends: a
// retain completes when its events are stored or dead-lettered, a
// consolidation when the facts waiting at its start are consolidated, and
// work the API owns (mental-model refreshes, transfers) is run here. Every
// replica may run it; a status change is a compare-and-set, so one
// operation is settled once.
func (s *Server) runOperations(ctx context.Context) {
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.wake:
		}
		ops, err := s.d.Store.OpenOperations(ctx, 200)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("operations: list open", slog.Any("error", err))
			}
			continue
		}
		for _, o := range ops {
			if err := s.settle(ctx, o); err != nil && ctx.Err() == nil {
				s.log.Warn("operations: settle", slog.String("bank_id", o.BankID), slog.String("operation_id", o.ID.String()),
					slog.String("kind", o.Kind), slog.Any("error", err))
			}
		}
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
			if time.Since(o.CreatedAt) > 2*s.retainClaim() {
				_, err := s.d.Store.FinishOperation(ctx, o.ID, "failed", "no event was produced (the request failed before Kafka acknowledged it)", nil)
				return err
			}
			return nil
		}
		st, msg := retainStatus(states)
		if st == "pending" {
			return nil
		}
		return s.finish(ctx, o, st, msg, nil, "retain.completed", map[string]any{"document_id": o.DocumentID, "memory_unit_count": nil})
	case "consolidation":
		left, err := s.d.Store.ConsolidationLeft(ctx, o.BankID, o.CreatedAt)
		if err != nil || left > 0 {
			return err
		}
		return s.finish(ctx, o, "completed", "", nil, "consolidation.completed", map[string]any{})
	}
	if run, ok := s.runners[o.Kind]; ok && o.Status == "pending" {
		claimed, err := s.d.Store.FinishOperation(ctx, o.ID, "processing", "", nil)
		if err != nil || !claimed {
			return err
		}
		result, runErr := run(ctx, o)
		if runErr != nil {
			_, err := s.d.Store.FinishOperation(context.WithoutCancel(ctx), o.ID, "failed", runErr.Error(), result)
			return err
		}
		_, err = s.d.Store.FinishOperation(context.WithoutCancel(ctx), o.ID, "completed", "", result)
		return err
	}
	return nil
}

// finish settles an operation and, in the same transaction, queues the
// webhook event that announces it.
func (s *Server) finish(ctx context.Context, o store.Operation, status, msg string, result json.RawMessage, event string, data map[string]any) error {
	evID := uuid.New()
	evStatus := status
	payload, _ := json.Marshal(map[string]any{"event_id": evID, "event": event, "bank_id": o.BankID, "operation_id": o.ID,
		"status": evStatus, "timestamp": time.Now().UTC(), "data": data})
	_, err := s.d.Store.FinishOperationAnnounced(ctx, o.ID, status, msg, result,
		store.WebhookEvent{ID: evID, BankID: o.BankID, Type: event, Payload: string(payload)})
	return err
}
