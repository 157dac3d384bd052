package recallapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/store"
)

// retainItem is Hindsight's MemoryItem plus memstream's event_id.
type retainItem struct {
	Content           contentValue      `json:"content"`
	Timestamp         string            `json:"timestamp"`
	Context           string            `json:"context"`
	Metadata          map[string]string `json:"metadata"`
	DocumentID        string            `json:"document_id"`
	Entities          []entityInput     `json:"entities"`
	ResolveEntities   *bool             `json:"resolve_entities"`
	Tags              tagList           `json:"tags"`
	ObservationScopes json.RawMessage   `json:"observation_scopes"`
	Strategy          *string           `json:"strategy"`
	UpdateMode        *string           `json:"update_mode"`
	// EventID is the event's idempotency key (SPEC §3): a retried retain
	// with the same event_id stores nothing new.
	EventID string `json:"event_id"`
}

// RetainRequest is Hindsight's retain body.
type RetainRequest struct {
	Items        []retainItem `json:"items"`
	Async        bool         `json:"async"`
	DocumentTags tagList      `json:"document_tags"`
	OperationID  *string      `json:"operation_id"`
}

// RetainResponse is Hindsight's RetainResponse, with memstream's account
// of each item: with async:false, whether it was persisted, dead-lettered
// (with its class) or is still pending at http.retain_wait.
type RetainResponse struct {
	Success     bool   `json:"success"`
	BankID      string `json:"bank_id"`
	ItemsCount  int    `json:"items_count"`
	Async       bool   `json:"async"`
	OperationID string `json:"operation_id"`
	// Status is accepted (async), persisted, dead_lettered or pending.
	Status string            `json:"status"`
	Items  []store.ItemState `json:"items,omitempty"`
	Error  *apiError         `json:"error,omitempty"`
}

func (s *Server) retain(w http.ResponseWriter, r *http.Request) error {
	id, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body RetainRequest
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	key := r.Header.Get("Idempotency-Key")
	if len(key) > 255 {
		return badRequest("Idempotency-Key", "the Idempotency-Key header must be at most 255 bytes")
	}
	status, out, replayed, err := s.Retain(r.Context(), id, body, key)
	if err != nil {
		return err
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, status, out)
	return nil
}

// retainEvents turns the items into events, checked exactly as the
// pipeline checks an event it consumes (event.Validate and the event size
// limit), so that nothing is produced that would only be dead-lettered.
func (s *Server) retainEvents(bank, opID string, body RetainRequest) ([]event.Event, error) {
	if len(body.Items) == 0 {
		return nil, badRequest("items", "items must contain at least one item")
	}
	// Like Hindsight: when no item names a document, the request is one
	// generated document; otherwise an item without one is its own.
	sharedDoc := ""
	if !slices.ContainsFunc(body.Items, func(it retainItem) bool { return it.DocumentID != "" }) {
		sharedDoc = "retain-" + opID
	}
	// Hindsight's update_mode "replace": the document loses what was
	// stored of it before this request. The first event of the document
	// carries it, so the pipeline deletes the old content in the
	// transaction that stores the new (a failed produce leaves the
	// document whole), and the request's other items add to it.
	replaced := map[string]bool{}
	for _, it := range body.Items {
		if it.UpdateMode != nil && *it.UpdateMode == "replace" && it.DocumentID != "" {
			replaced[it.DocumentID] = true
		}
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	events := make([]event.Event, len(body.Items))
	for i, it := range body.Items {
		field := fmt.Sprintf("items[%d]", i)
		if it.Content.Blocked != "" {
			return nil, badRequest(field+".content", field+".content"+it.Content.Blocked+": only text content blocks are supported (memstream has no vision model)")
		}
		if strings.TrimSpace(it.Content.Text) == "" {
			return nil, badRequest(field+".content", field+".content must not be empty")
		}
		if it.UpdateMode != nil && *it.UpdateMode != "replace" && *it.UpdateMode != "append" {
			return nil, badRequest(field+".update_mode", field+".update_mode must be replace or append")
		}
		ev := event.Event{BankID: bank, EventID: it.EventID, DocumentID: it.DocumentID, Content: it.Content.Text,
			Context: it.Context, Metadata: it.Metadata, Tags: mergeTags(it.Tags, body.DocumentTags)}
		if ev.EventID == "" {
			ev.EventID = fmt.Sprintf("retain/%s/%d", opID, i)
		}
		if ev.DocumentID == "" {
			ev.DocumentID = sharedDoc
		}
		if ev.DocumentID == "" {
			ev.DocumentID = ev.EventID
		}
		if replaced[ev.DocumentID] {
			ev.UpdateMode = "replace"
			delete(replaced, ev.DocumentID)
		}
		switch ts := strings.TrimSpace(it.Timestamp); {
		case ts == "":
			ev.Timestamp = now
		case strings.EqualFold(ts, "unset"):
			// Timeless content: the event carries no time of its own, so
			// it is dated when it is ingested.
		default:
			t, ok := parseISO(ts)
			if !ok {
				return nil, badRequest(field+".timestamp", fmt.Sprintf("%s.timestamp %q is not an ISO 8601 datetime or \"unset\"", field, clip(ts, 40)))
			}
			ev.Timestamp = t.Format(time.RFC3339Nano)
		}
		// A transcript ("Name (role): text" lines) is a conversation, not
		// one long user message.
		if ms, ok := event.ParseTranscript(ev.Content); ok {
			ev.Messages, ev.Content = ms, ""
		}
		if err := ev.Validate(); err != nil {
			var ee *event.Error
			if errors.As(err, &ee) {
				f := field
				if ee.Field != "" {
					f += "." + ee.Field
				}
				return nil, badRequest(f, field+": "+ee.Msg)
			}
			return nil, err
		}
		raw, err := json.Marshal(ev)
		if err != nil {
			return nil, fmt.Errorf("retain bank %s: encode item %d: %w", bank, i, err)
		}
		if len(raw) > s.cfg.MaxEventBytes {
			return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Code: "too_large", Field: field,
				Message: fmt.Sprintf("%s is %d bytes as an event; kafka.max_event_bytes is %d", field, len(raw), s.cfg.MaxEventBytes)}
		}
		events[i] = ev
	}
	return events, nil
}

// mergeTags adds the batch's document_tags to an item's tags, once each.
func mergeTags(tags, extra []string) []string {
	out := slices.Clone(tags)
	for _, t := range extra {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// gateEvents applies the bank's defense policy as the pipeline will, to
// every text it gates, so a block fails here (422 naming the field, never
// the value) and not after a 200. A block is announced to the bank's
// memory_defense.triggered webhooks from here, since nothing reaches the
// pipeline; a redaction is announced when the pipeline stores the event
// (store.announceDefense), once per event whichever way it came.
func (s *Server) gateEvents(ctx context.Context, bank, idemKey string, body RetainRequest, events []event.Event) error {
	// Fail closed: if the bank's policy cannot be read, a block it holds
	// could not be enforced, so nothing is produced.
	raw, err := s.d.Store.BankPolicy(ctx, bank)
	if err != nil {
		return fmt.Errorf("retain bank %s: read defense policy: %w", bank, err)
	}
	policy, err := defense.MergePolicy(s.cfg.BasePolicy, raw)
	if err != nil {
		return fmt.Errorf("retain bank %s: stored defense policy: %w", bank, err)
	}
	for i, ev := range events {
		field := fmt.Sprintf("items[%d]", i)
		checks := [][2]string{{field + ".content", ev.Content}, {field + ".context", ev.Context}}
		for j, tag := range ev.Tags {
			checks = append(checks, [2]string{fmt.Sprintf("%s.tags[%d]", field, j), tag})
		}
		for _, k := range slices.Sorted(maps.Keys(ev.Metadata)) {
			checks = append(checks, [2]string{field + ".metadata." + k, ev.Metadata[k]})
		}
		labels := map[string]bool{}
		for _, c := range checks {
			if c[1] == "" {
				continue
			}
			_, audit, err := s.d.Gate.Check(ev.EventID, c[1], policy)
			for _, a := range audit {
				if a.Action != defense.ActionAllow {
					labels[a.Label] = true
				}
			}
			if err != nil {
				var be *defense.BlockedError
				if errors.As(err, &be) {
					s.announceBlock(ctx, bank, blockedKey(idemKey, body, events, i), ev.DocumentID, slices.Sorted(maps.Keys(labels)))
					return &apiError{Status: http.StatusUnprocessableEntity, Code: "blocked_by_policy", Message: err.Error(), Field: c[0]}
				}
				return err
			}
		}
	}
	return nil
}

// blockedKey names a blocked item for its announcement, so that a retry of
// the same retain announces nothing more: its event_id, or its place under
// the request's Idempotency-Key, or the event key it would have had.
func blockedKey(idemKey string, body RetainRequest, events []event.Event, i int) string {
	switch {
	case body.Items[i].EventID != "":
		return events[i].EventID
	case idemKey != "":
		return fmt.Sprintf("retain-key/%s/%d", idemKey, i)
	}
	return events[i].EventID
}

// announceBlock queues the memory_defense.triggered event of an item the
// policy blocked (labels only, never values).
func (s *Server) announceBlock(ctx context.Context, bank, key, documentID string, labels []string) {
	id := store.DefenseEventID(bank, key)
	payload := store.DefensePayload(id, bank, key, documentID, "", string(defense.ActionBlock), labels)
	if err := s.d.Store.QueueWebhookEvent(context.WithoutCancel(ctx), store.WebhookEvent{ID: id, BankID: bank, Type: store.DefenseEventType,
		Payload: payload}); err != nil {
		s.log.Warn("could not queue memory_defense.triggered", "bank_id", bank, "error", err)
		return
	}
	s.kickWebhooks()
}

// Retain validates the items exactly as the pipeline will, applies the
// bank's defense policy, produces them to Kafka (the one write path) and,
// unless async, waits until each is persisted or dead-lettered. With an
// idempotency key (the Idempotency-Key header, or Hindsight's
// operation_id) a retry of the same request produces nothing new and
// answers as the first attempt did. It returns the HTTP status with the
// answer, and whether the answer is a replay. It is the retain route
// without its HTTP framing.
func (s *Server) Retain(ctx context.Context, bank string, body RetainRequest, idemKey string) (int, RetainResponse, bool, error) {
	opID := uuid.New()
	if body.OperationID != nil && *body.OperationID != "" {
		id, err := uuid.Parse(*body.OperationID)
		if err != nil {
			return 0, RetainResponse{}, false, badRequest("operation_id", "operation_id must be a UUID")
		}
		opID = id
		if idemKey == "" {
			idemKey = id.String()
		}
	}
	if !cleanText(idemKey) {
		return 0, RetainResponse{}, false, badRequest("Idempotency-Key", "the Idempotency-Key header must be valid UTF-8 without NUL characters")
	}
	events, err := s.retainEvents(bank, opID.String(), body)
	if err != nil {
		return 0, RetainResponse{}, false, err
	}
	if err := s.gateEvents(ctx, bank, idemKey, body, events); err != nil {
		return 0, RetainResponse{}, false, err
	}
	canon, _ := json.Marshal(body)
	sum := sha256.Sum256(canon)
	op := store.Operation{ID: opID, BankID: bank, Kind: "retain", ItemsCount: len(events), DocumentID: events[0].DocumentID,
		IdempotencyKey: idemKey, RequestHash: hex.EncodeToString(sum[:])}
	// An idempotent retain is claimed by this attempt until it answers,
	// with a lease it renews while it runs: a retry waits for the answer,
	// or takes over once the claim is given up or has lapsed (the process
	// died), and re-produces the same event keys, which are stored once.
	attempt := uuid.NewString()
	if idemKey != "" {
		op.ClaimedBy, op.ClaimFor = attempt, s.cfg.OperationLease
	}
	got, existing, err := s.d.Store.CreateOperation(ctx, op)
	if err != nil {
		return 0, RetainResponse{}, false, err
	}
	if existing {
		if got.RequestHash != op.RequestHash {
			return 0, RetainResponse{}, false, &apiError{Status: http.StatusConflict, Code: "idempotency_key_reused", Field: "Idempotency-Key",
				Message: "this idempotency key was already used for a different retain request"}
		}
		status, out, answered, err := s.awaitOrTakeOver(ctx, bank, got, attempt)
		if err != nil || answered {
			return status, out, answered, err
		}
		if got.ID != opID {
			opID = got.ID
			if events, err = s.retainEvents(bank, opID.String(), body); err != nil {
				return 0, RetainResponse{}, false, err
			}
		}
	}
	if idemKey != "" {
		stop := s.holdRetain(opID, attempt)
		defer stop()
	}
	// The events' keys are recorded before they are produced: a process
	// that dies between Kafka's acknowledgement and the positions below
	// leaves an operation that still finds its events once persisted.
	items := make([]store.OperationItem, len(events))
	for i, ev := range events {
		items[i] = store.OperationItem{Index: i, EventKey: ev.EventID, Partition: -1, Offset: -1}
	}
	if err := s.d.Store.SetOperationItems(ctx, opID, items); err != nil {
		return 0, RetainResponse{}, false, err
	}
	pos, err := s.d.Publisher.Publish(ctx, events)
	if err != nil {
		if idemKey == "" {
			// With a key, the claim is given up instead and a retry
			// takes over.
			_, _ = s.d.Store.FinishOperation(context.WithoutCancel(ctx), opID, "failed", "could not publish to Kafka (an item Kafka did accept is still ingested): "+err.Error(), nil)
		}
		return 0, RetainResponse{}, false, &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "could not publish to Kafka: " + err.Error()}
	}
	for i := range items {
		if i < len(pos) {
			items[i].Topic, items[i].Partition, items[i].Offset = pos[i].Topic, pos[i].Partition, pos[i].Offset
		}
	}
	// The events are in Kafka; what is left is bookkeeping, which must not
	// be cut short by a client that hangs up now.
	bg := context.WithoutCancel(ctx)
	if err := s.d.Store.SetOperationItems(bg, opID, items); err != nil {
		return 0, RetainResponse{}, false, err
	}
	out := RetainResponse{Success: true, BankID: bank, ItemsCount: len(events), Async: body.Async, OperationID: opID.String(), Status: "accepted"}
	status := http.StatusOK
	if !body.Async {
		status, out = s.retainOutcome(ctx, opID, out)
	}
	if status != http.StatusAccepted {
		raw, _ := json.Marshal(struct {
			Status int            `json:"status"`
			Body   RetainResponse `json:"body"`
		}{status, out})
		if err := s.d.Store.SetOperationResponse(bg, opID, raw); err != nil {
			return 0, RetainResponse{}, false, err
		}
	}
	return status, out, false, nil
}

// storedAnswer is the answer an operation recorded, if any.
func storedAnswer(o store.Operation) (int, RetainResponse, bool) {
	if len(o.Response) == 0 {
		return 0, RetainResponse{}, false
	}
	var a struct {
		Status int            `json:"status"`
		Body   RetainResponse `json:"body"`
	}
	if err := json.Unmarshal(o.Response, &a); err != nil || a.Status == 0 {
		return 0, RetainResponse{}, false
	}
	return a.Status, a.Body, true
}

// awaitOrTakeOver handles a retry of an idempotent retain whose first
// attempt has not answered: it waits up to http.retain_wait for that
// answer (answered true, a replay), or takes the retain over as attempt
// once the first attempt's claim is given up or has lapsed (answered
// false: the caller runs the retain). Past the wait it is a 409 in_progress
// with Retry-After: the first attempt is alive and still renewing.
func (s *Server) awaitOrTakeOver(ctx context.Context, bank string, o store.Operation, attempt string) (int, RetainResponse, bool, error) {
	wait, cancel := context.WithTimeout(ctx, s.cfg.RetainWait)
	defer cancel()
	for {
		if status, out, ok := storedAnswer(o); ok {
			return status, out, true, nil
		}
		if _, err := s.d.Store.TakeOverRetain(wait, bank, o.ID, attempt, s.cfg.OperationLease); err == nil {
			s.log.Info("retain: took over an idempotent retain whose first attempt stopped", "bank_id", bank, "operation_id", o.ID)
			return 0, RetainResponse{}, false, nil
		} else if !errors.Is(err, store.ErrNotFound) && wait.Err() == nil {
			return 0, RetainResponse{}, false, err
		}
		select {
		case <-wait.Done():
			if ctx.Err() != nil {
				return 0, RetainResponse{}, false, ctx.Err()
			}
			return 0, RetainResponse{}, false, &apiError{Status: http.StatusConflict, Code: "in_progress", Field: "Idempotency-Key",
				RetryAfter: s.cfg.OperationLease / 3,
				Message:    "a retain with this idempotency key is still in progress; retry later or poll operation " + o.ID.String()}
		case <-time.After(200 * time.Millisecond):
		}
		if got, err := s.d.Store.GetOperation(wait, bank, o.ID); err == nil {
			o = got
		}
	}
}

// holdRetain renews attempt's claim on an idempotent retain every third
// of http.operation_lease until the returned stop is called, which also
// gives the claim up if the retain has not answered by then (an error,
// a client gone, a 202 still pending), so that a retry takes over at once.
func (s *Server) holdRetain(id uuid.UUID, attempt string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(s.cfg.OperationLease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			held, err := s.d.Store.HeartbeatRetain(ctx, id, attempt, s.cfg.OperationLease)
			if err != nil && ctx.Err() == nil {
				s.log.Warn("retain: could not renew the idempotency claim", "operation_id", id, "error", err)
			}
			if err == nil && !held {
				// Answered, or lapsed and taken over: the other attempt
				// produces the same event keys, so nothing is doubled.
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer rcancel()
		if err := s.d.Store.ReleaseRetain(rctx, id, attempt); err != nil {
			s.log.Warn("retain: could not release the idempotency claim", "operation_id", id, "error", err)
		}
	}
}

// retainOutcome waits up to http.retain_wait for every item to be
// persisted or dead-lettered and reports each: 200 when all are stored,
// 422 naming the first item dead-lettered (with its class), 202 when some
// are still pending at the deadline (they will be ingested; poll the
// operation).
func (s *Server) retainOutcome(ctx context.Context, opID uuid.UUID, out RetainResponse) (int, RetainResponse) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RetainWait)
	defer cancel()
	delay := 20 * time.Millisecond
	var states []store.ItemState
	for {
		st, err := s.d.Store.OperationItemStates(ctx, opID)
		if err == nil {
			states = st
			if allSettled(st) {
				break
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
			delay = min(delay*2, 250*time.Millisecond)
			continue
		}
		break
	}
	out.Items = states
	out.Success, out.Status = false, "pending"
	if !allSettled(states) {
		out.Error = &apiError{Code: "pending", Message: fmt.Sprintf("not every item was persisted within http.retain_wait (%s); they were accepted by Kafka and will be ingested: poll the operation", s.cfg.RetainWait)}
		return http.StatusAccepted, out
	}
	for _, it := range states {
		if it.Status == "dead_lettered" {
			out.Status = "dead_lettered"
			out.Error = &apiError{Code: "dead_lettered", Field: fmt.Sprintf("items[%d]", it.Index),
				Message: fmt.Sprintf("items[%d] was dead-lettered at %s: %s (see the dead-letter topic)", it.Index, it.ErrorStage, it.ErrorClass)}
			return http.StatusUnprocessableEntity, out
		}
	}
	out.Success, out.Status = true, "persisted"
	return http.StatusOK, out
}

func allSettled(states []store.ItemState) bool {
	if len(states) == 0 {
		return false
	}
	for _, it := range states {
		if it.Status == "pending" {
			return false
		}
	}
	return true
}
