package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/memstream/memstream/pgserver"
)

// benchBase returns dbURL, or starts a temporary managed PostgreSQL when
// it is empty; release stops and removes that server unless keep is set.
func benchBase(ctx context.Context, dbURL, prefix string, keep bool, log *slog.Logger, progress func(string)) (string, func(), error) {
	if dbURL != "" {
		return dbURL, func() {}, nil
	}
	srv, dir, err := pgserver.StartTemp(ctx, prefix, log)
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

// schemaURL creates a fresh schema and returns base with its search_path
// set to it (then public, where the vector and pg_trgm extensions live).
func schemaURL(ctx context.Context, base, schema string) (string, error) {
	return openSchemaURL(ctx, base, schema, false)
}

// openSchemaURL is schemaURL that, with reuse, keeps an existing schema.
func openSchemaURL(ctx context.Context, base, schema string, reuse bool) (string, error) {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	ident := pgx.Identifier{schema}.Sanitize()
	if !reuse {
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+ident+" CASCADE"); err != nil {
			return "", fmt.Errorf("drop schema %s: %w", schema, err)
		}
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+ident); err != nil {
		return "", fmt.Errorf("create schema %s: %w", schema, err)
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("database url: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema+",public")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// dropSchema drops a schema schemaURL made, with everything in it.
func dropSchema(ctx context.Context, base, schema string) error {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	return err
}
