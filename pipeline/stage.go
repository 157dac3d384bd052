package pipeline

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/memstream/memstream/internal/wait"

	"github.com/memstream/memstream/event"
	"github.com/memstream/memstream/store"
)

// BatchError is a stage's per-record result: the records it names failed
// with their own errors, and every other record of the batch succeeded.
// It is modelled on Benthos's BatchError. A stage that returns any other
// error failed the whole batch with it.
type BatchError struct {
	failed map[*item]error
}

func newBatchError() *BatchError { return &BatchError{failed: map[*item]error{}} }

// fail records err for it, keeping the first error of a record.
func (b *BatchError) fail(it *item, err error) {
	if _, ok := b.failed[it]; !ok {
		b.failed[it] = err
	}
}

// orNil returns nil when nothing failed.
func (b *BatchError) orNil() error {
	if len(b.failed) == 0 {
		return nil
	}
	return b
}

func (b *BatchError) Error() string {
	for _, err := range b.failed {
		return err.Error() + " (and the other failed records of the batch)"
	}
	return "no record failed"
}

// faultClass says what the stage runner does with a failure.
type faultClass int

const (
	// faultUnknown: retried MaxRetries times, then the batch is split
	// into single records and a record that still fails is dead-lettered.
	faultUnknown faultClass = iota
	// faultTransient: an outage (connection loss, 5xx, timeouts); the
	// records stall and are retried with backoff until the pipeline
	// stops. Ingest stalls, it never drops.
	faultTransient
	// faultUnavailable: auth or configuration (401, no such model,
	// missing table); stalls like a transient fault and also fails
	// readiness at once, since nothing passes until an operator acts.
	faultUnavailable
	// faultInput: this record can never pass (a data error, an input the
	// provider refuses); it is dead-lettered without retries.
	faultInput
)

func (c faultClass) String() string {
	switch c {
	case faultTransient:
		return "transient"
	case faultUnavailable:
		return "unavailable"
	case faultInput:
		return "input"
	}
	return "unknown"
}

// Providers report the class of their errors through these methods, so
// that they need not import this package (llm.Error implements them).
type (
	transientError   interface{ Transient() bool }
	unavailableError interface{ Unavailable() bool }
	rejectedError    interface{ InputRejected() bool }
)

// classify maps an error to its fault class. fallback is the class of
// errors nothing else recognises: persist treats them as transient (a
// non-PostgreSQL error there is the network), the providers as unknown.
func classify(err error, fallback faultClass) faultClass {
	var rec *event.Error
	if errors.As(err, &rec) {
		return faultInput
	}
	var ua unavailableError
	if errors.As(err, &ua) && ua.Unavailable() {
		return faultUnavailable
	}
	var rj rejectedError
	if errors.As(err, &rj) && rj.InputRejected() {
		return faultInput
	}
	var tr transientError
	if errors.As(err, &tr) && tr.Transient() {
		return faultTransient
	}
	// The store says what its errors are; the pipeline never reads
	// PostgreSQL codes.
	if store.IsUnavailable(err) {
		return faultUnavailable
	}
	if store.IsRejected(err) {
		return faultInput
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) {
		return faultTransient
	}
	return fallback
}

// stageFunc runs one stage over items. It returns nil when all succeeded,
// a *BatchError naming the records that failed, or another error that
// failed them all. It must be safe to call again on any subset of items:
// records that failed are retried on their own.
type stageFunc func(ctx context.Context, items []*item) error

// runStage runs fn over batch until every record has either passed the
// stage or been dead-lettered, and returns the records that passed, in
// order. Transient and unavailable failures stall the records (the lane
// reports the stall to the watchdog) and retry them with backoff until the
// lane's context ends; input failures dead-letter their record at once;
// unknown failures are retried MaxRetries times, then the batch is split
// so that only the records that fail alone are dead-lettered.
func (l *lane) runStage(stage string, fallback faultClass, batch []*item, fn stageFunc) []*item {
	p := l.p
	failed := map[*item]bool{}
	attempts := map[*item]int{}
	todo := batch
	delay := 100 * time.Millisecond
	for len(todo) > 0 && l.ctx.Err() == nil {
		l.work(stage, todo[0])
		start := time.Now()
		err := fn(l.ctx, todo)
		if err == nil {
			p.m.stageSeconds.WithLabelValues(stage).Observe(time.Since(start).Seconds())
			break
		}
		if l.ctx.Err() != nil {
			break
		}
		var be *BatchError
		if !errors.As(err, &be) {
			class := classify(err, fallback)
			if len(todo) > 1 && (class == faultInput || (class == faultUnknown && attempts[todo[0]] >= p.cfg.MaxRetries)) {
				// A whole-batch failure that belongs to some record: run
				// the records one by one to find which.
				p.m.retries.WithLabelValues(stage).Inc()
				for _, it := range todo {
					if len(l.runStage(stage, fallback, []*item{it}, fn)) == 0 {
						failed[it] = true
					}
				}
				todo = nil
				break
			}
			be = newBatchError()
			for _, it := range todo {
				be.fail(it, err)
			}
		}
		var retry []*item
		var stallErr error
		stallClass := faultUnknown
		for _, it := range todo {
			ierr, ok := be.failed[it]
			if !ok {
				continue
			}
			switch class := classify(ierr, fallback); class {
			case faultInput:
				failed[it] = true
				l.fail(it, recordError(stage, ierr))
			case faultTransient, faultUnavailable:
				retry = append(retry, it)
				if stallErr == nil || class == faultUnavailable {
					stallErr, stallClass = ierr, class
				}
			default:
				attempts[it]++
				if attempts[it] > p.cfg.MaxRetries {
					failed[it] = true
					l.fail(it, recordError(stage, ierr))
					continue
				}
				retry = append(retry, it)
				if stallErr == nil {
					stallErr, stallClass = ierr, class
				}
			}
		}
		if len(retry) == 0 {
			break
		}
		p.m.retries.WithLabelValues(stage).Inc()
		l.stall(stage, retry[0], stallErr, stallClass)
		p.logStall(stage, retry, stallErr, stallClass)
		if !wait.Sleep(l.ctx, wait.Jitter(delay)) {
			break
		}
		delay = min(delay*2, maxBackoff(stallClass))
		todo = retry
	}
	l.idle(stage)
	if l.ctx.Err() != nil {
		return nil
	}
	var out []*item
	for _, it := range batch {
		if !failed[it] && !it.rec.isFailed() {
			out = append(out, it)
		}
	}
	return out
}

func maxBackoff(c faultClass) time.Duration {
	if c == faultUnavailable {
		return 30 * time.Second
	}
	return 10 * time.Second
}

// recordError turns a stage failure into the dead-letter error of its record.
func recordError(stage string, err error) *event.Error {
	var rec *event.Error
	if errors.As(err, &rec) {
		return rec
	}
	class := event.ClassExtractFailed
	if stage == stagePersist || stage == stageResolve {
		class = event.ClassPersistFailed
	}
	return event.Errorf(class, stage, "%v", err)
}

func (p *Pipeline) logStall(stage string, retry []*item, err error, class faultClass) {
	r := retry[0].msg.Record
	p.log.Warn("stage failed; records stall and are retried", slog.String("stage", stage), slog.String("class", class.String()),
		slog.Int("records", len(retry)), slog.String("topic", r.Topic), slog.Int("partition", int(r.Partition)),
		slog.Int64("offset", r.Offset), slog.String("bank", retry[0].ev.BankID), slog.Any("error", err))
}
