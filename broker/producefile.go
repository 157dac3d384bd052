package broker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/schollz/progressbar/v3"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/event"
)

// ProduceFile publishes every line of a JSONL file (or stdin for "-") with
// the recommended key, showing progress. A line that is not a JSON object
// stops the run with its line number: better than dead-lettering a typo.
func ProduceFile(ctx context.Context, cl *kgo.Client, file, topic, bank string, progress io.Writer) (int, error) {
	if file == "-" {
		return ProduceReader(ctx, cl, os.Stdin, -1, file, topic, bank, progress)
	}
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	size := int64(-1)
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	return ProduceReader(ctx, cl, f, size, file, topic, bank, progress)
}

// ProduceReader is ProduceFile over any reader of JSONL events: size (or
// -1 when unknown) drives the progress bar, name labels errors.
func ProduceReader(ctx context.Context, cl *kgo.Client, r io.Reader, size int64, name, topic, bank string, progress io.Writer) (int, error) {
	bar := progressbar.NewOptions64(size, progressbar.OptionSetWriter(progress), progressbar.OptionShowBytes(true),
		progressbar.OptionSetDescription("producing"), progressbar.OptionShowCount(), progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(100_000_000))
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	n, line := 0, 0
	var errMu sync.Mutex
	var firstErr error
	onDone := func(_ *kgo.Record, err error) {
		if err != nil {
			errMu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			errMu.Unlock()
		}
	}
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		_ = bar.Add(len(sc.Bytes()) + 1)
		if len(raw) == 0 {
			continue
		}
		var ev event.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			return n, fmt.Errorf("%s line %d: not a JSON event: %w", name, line, err)
		}
		value := append([]byte(nil), raw...)
		if bank != "" {
			ev.BankID = bank
			if value, _ = setBank(raw, bank); value == nil {
				return n, fmt.Errorf("%s line %d: cannot set bank_id", name, line)
			}
		}
		doc := ev.DocumentID
		if doc == "" {
			doc = ev.ConversationID
		}
		rec := &kgo.Record{Topic: topic, Key: RecordKey(ev.BankID, doc), Value: value}
		cl.Produce(ctx, rec, onDone)
		n++
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("%s: %w", name, err)
	}
	// Flush waits for every callback, so firstErr is final afterwards.
	if err := cl.Flush(ctx); err != nil {
		return n, err
	}
	_ = bar.Finish()
	errMu.Lock()
	defer errMu.Unlock()
	if firstErr != nil {
		return n, fmt.Errorf("produce to %s: %w", topic, firstErr)
	}
	return n, nil
}

func setBank(raw []byte, bank string) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	m["bank_id"] = bank
	return json.Marshal(m)
}
