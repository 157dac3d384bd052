package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Ingest modes of a benchmark run: how the dataset's events reach
// memstream.
const (
	// IngestKafka produces the events to memstream's Kafka topic
	// (BenchmarkDeps.Produce).
	IngestKafka = "kafka"
	// IngestRetain sends them to the HTTP retain route, the way a
	// Hindsight client user feeds memstream: one retain per session or
	// per message, the conversation as a plain-text transcript.
	IngestRetain = "retain"
)

// RetainItem is one item of a retain request body.
type RetainItem struct {
	Content string `json:"content"`
	// EventID is memstream's idempotency key of the item: the event's own
	// id, so a retried retain stores nothing twice, as a replayed Kafka
	// record does not.
	EventID    string            `json:"event_id,omitempty"`
	Context    string            `json:"context,omitempty"`
	Timestamp  string            `json:"timestamp,omitempty"`
	DocumentID string            `json:"document_id,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	Tags       []string          `json:"tags,omitempty"`
}

// TranscriptLine is how a message is written in a retained transcript:
// "[time] Name (role): text", which event.ParseTranscript reads back into
// a message with its time, speaker and role, as a Kafka event carries
// them; without a name, "[time] role: text", and without a time no
// bracket.
func TranscriptLine(m Message) string {
	text := strings.TrimSpace(m.Content)
	line := m.Role + ": " + text
	if m.Name != "" {
		line = fmt.Sprintf("%s (%s): %s", m.Name, m.Role, text)
	}
	if m.Timestamp.IsZero() {
		return line
	}
	return "[" + m.Timestamp.UTC().Format(time.RFC3339Nano) + "] " + line
}

// RetainItemOf is the retain item a Hindsight user would send for one
// event, carrying what the Kafka event carries and nothing else: its
// messages as transcript lines with their times, the time of its first
// message (a session's start, or the one message's own time), the session
// as the document, the event's id as the item's event_id, and the event's
// metadata and tags. The metadata carries the turn offset of a
// per-message event, which is what lets a stored fact be traced to its
// turn. Its context is the event's, empty unless the run sets a label
// (BenchmarkConfig.Context), which then reaches both paths alike.
func RetainItemOf(e Event) RetainItem {
	lines := make([]string, len(e.Messages))
	for i, m := range e.Messages {
		lines[i] = TranscriptLine(m)
	}
	it := RetainItem{Content: strings.Join(lines, "\n"), EventID: e.EventID, Context: e.Context, DocumentID: e.DocumentID, Metadata: e.Metadata, Tags: e.Tags}
	if len(e.Messages) > 0 && !e.Messages[0].Timestamp.IsZero() {
		it.Timestamp = e.Messages[0].Timestamp.UTC().Format(time.RFC3339)
	}
	return it
}

// retainEvents sends every event as one synchronous retain call. A bank's
// events go one after another, in file order, so a conversation arrives
// in the order it was held; up to conc banks are in flight at once.
// itemOf renders an event as the item (RetainItemOf, or HindsightItemOf).
func retainEvents(ctx context.Context, api *APIRecaller, events []Event, conc int, itemOf func(Event) RetainItem) (int, error) {
	var order []string
	byBank := map[string][]Event{}
	for _, e := range events {
		if _, ok := byBank[e.BankID]; !ok {
			order = append(order, e.BankID)
		}
		byBank[e.BankID] = append(byBank[e.BankID], e)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		sent  int
		first error
		wg    sync.WaitGroup
	)
	banks := make(chan string)
	for range max(conc, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range banks {
				for _, e := range byBank[b] {
					err := retainOne(ctx, api, e.BankID, itemOf(e))
					mu.Lock()
					if err != nil && first == nil {
						first = fmt.Errorf("eval: retain event %s: %w", e.EventID, err)
						cancel()
					}
					if err == nil {
						sent++
					}
					mu.Unlock()
					if err != nil {
						break
					}
				}
			}
		}()
	}
	for _, b := range order {
		select {
		case banks <- b:
		case <-ctx.Done():
		}
	}
	close(banks)
	wg.Wait()
	return sent, first
}

// retainOne sends one event as a synchronous retain. Still pending at
// http.retain_wait (202) or dead-lettered (422 dead_lettered) is not an
// error: the wait on the bank stats that follows counts both.
func retainOne(ctx context.Context, api *APIRecaller, bank string, it RetainItem) error {
	body, err := json.Marshal(map[string]any{"items": []RetainItem{it}, "async": false})
	if err != nil {
		return err
	}
	status, raw, err := api.send(ctx, http.MethodPost, bankPath(bank)+"/memories", body)
	if err != nil {
		return err
	}
	switch status {
	case http.StatusOK, http.StatusAccepted:
		return nil
	case http.StatusUnprocessableEntity:
		var out struct {
			Status string `json:"status"`
		}
		if json.Unmarshal(raw, &out) == nil && out.Status == "dead_lettered" {
			return nil
		}
	}
	return fmt.Errorf("HTTP %d: %s", status, clipBytes(raw, 300))
}

func clipBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}
