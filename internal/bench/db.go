package bench

import (
	"context"
	"log/slog"
	"os"

	"github.com/memstream/memstream/pgserver"
)

// benchBase returns dbURL, or starts a temporary managed PostgreSQL when
// it is empty; release stops and removes that server unless keep is set.
func benchBase(ctx context.Context, dbURL, prefix string, keep bool, log *slog.Logger, progress func(string)) (string, func(), error) {
	if dbURL != "" {
		return dbURL, func() {}, nil
	}
	srv, dir, err := pgserver.StartTemp(ctx, pgserver.Deps{Logger: log}, prefix)
	if err != nil {
		return "", nil, err
	}
	progress("managed PostgreSQL in " + dir)
	release := func() {
		if keep {
			progress("kept the server running in " + dir)
			return
		}
		_ = srv.Stop(context.WithoutCancel(ctx))
		_ = os.RemoveAll(dir)
	}
	return srv.URL(), release, nil
}
