package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"

	"github.com/memstream/memstream/pgserver"
)

// tempDataDir makes a private temporary directory that the managed
// PostgreSQL can still use: run as root, pgserver runs the server as
// another user, who must be able to enter it (MkdirTemp makes it 0700).
func tempDataDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// startTempPostgres starts a managed PostgreSQL on a free port in a new
// temporary directory, for benchmarks; the caller stops it and removes dir.
func startTempPostgres(ctx context.Context, prefix string, log *slog.Logger) (*pgserver.Server, string, error) {
	dir, err := tempDataDir(prefix)
	if err != nil {
		return nil, "", fmt.Errorf("temporary PostgreSQL: %w", err)
	}
	port, err := freePort()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", fmt.Errorf("temporary PostgreSQL: find a free port: %w", err)
	}
	srv, err := pgserver.Start(ctx, pgserver.Config{DataDir: filepath.Join(dir, "data"), Port: port}, log)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", fmt.Errorf("temporary PostgreSQL: %w", err)
	}
	return srv, dir, nil
}

// benchBase returns dbURL, or starts a temporary managed PostgreSQL when
// it is empty; release stops and removes that server unless keep is set.
func benchBase(ctx context.Context, dbURL, prefix string, keep bool, log *slog.Logger, progress func(string)) (string, func(), error) {
	if dbURL != "" {
		return dbURL, func() {}, nil
	}
	srv, dir, err := startTempPostgres(ctx, prefix, log)
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
// Other benchmarks use it too.
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

func dropSchema(ctx context.Context, base, schema string) {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
}
