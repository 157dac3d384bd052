package lifetime

import (
	"context"
	"fmt"
	"log/slog"
)

// Named returns the execute function of a run group member: fn on ctx,
// its error prefixed with the member's name.
func Named(name string, fn func(context.Context) error, ctx context.Context) func() error {
	return func() error {
		if err := fn(ctx); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
}

// Interrupt returns the interrupt function of a run group member: stop,
// bounded by the context ctx returns when the group shuts down (the
// shutdown deadline). A stop that fails or outlasts it is logged as a
// warning naming the member; the caller's hard stop comes after.
func Interrupt(name string, stop func(context.Context) error, ctx func() context.Context, log *slog.Logger) func(error) {
	return func(error) {
		if err := stop(ctx()); err != nil {
			log.Warn(name+" did not stop within the shutdown deadline", slog.Any("error", err))
		}
	}
}
