package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Listen LISTENs on channels over a connection of its own (outside the
// pool: it is held for as long as ctx lives) and calls on for every
// notification. ready is called once LISTEN is in effect; notifications
// sent before that are not seen, so a caller that caches or waits should
// catch up in ready. It returns when ctx ends (nil) or the connection
// fails (the error), and the caller decides whether to listen again.
func (s *Store) Listen(ctx context.Context, channels []string, ready func(), on func(channel, payload string)) error {
	name := strings.Join(channels, ",")
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("listen %s: connect: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, ch := range channels {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("listen %s: %w", ch, err)
		}
	}
	if ready != nil {
		ready()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, context.Canceled) {
				return nil
			}
			return fmt.Errorf("listen %s: %w", name, err)
		}
		on(n.Channel, n.Payload)
	}
}
