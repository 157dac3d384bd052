package extract

import (
	"fmt"
	"sort"
	"strings"
)

// BatchError reports which inputs of one Extract call failed, so that the
// caller can treat each input on its own: the results of the others are
// valid and kept, and only the failed inputs are retried or dead-lettered,
// depending on their errors. It is modelled on Benthos's BatchError.
//
// An Extract call that returns a *BatchError still returns one (possibly
// empty) result slice per input; the entries of failed inputs are nil.
type BatchError struct {
	failed map[int]error
}

// NewBatchError returns an empty BatchError.
func NewBatchError() *BatchError { return &BatchError{failed: map[int]error{}} }

// Failed records err for input i and returns the BatchError for chaining.
func (e *BatchError) Failed(i int, err error) *BatchError {
	e.failed[i] = err
	return e
}

// Len is the number of failed inputs.
func (e *BatchError) Len() int { return len(e.failed) }

// Err returns the error of input i, nil if it succeeded.
func (e *BatchError) Err(i int) error { return e.failed[i] }

// Each calls fn for every failed input, in input order.
func (e *BatchError) Each(fn func(i int, err error)) {
	idx := make([]int, 0, len(e.failed))
	for i := range e.failed {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		fn(i, e.failed[i])
	}
}

// OrNil returns nil when no input failed, so a caller can return it
// unconditionally.
func (e *BatchError) OrNil() error {
	if e == nil || len(e.failed) == 0 {
		return nil
	}
	return e
}

func (e *BatchError) Error() string {
	var first string
	var parts []string
	e.Each(func(i int, err error) {
		if first == "" {
			first = err.Error()
		}
		parts = append(parts, fmt.Sprint(i))
	})
	return fmt.Sprintf("%d inputs failed (%s), first: %s", len(parts), strings.Join(parts, ", "), first)
}
