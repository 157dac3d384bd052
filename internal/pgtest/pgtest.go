// Package pgtest gives tests a real PostgreSQL database with pgvector and
// pg_trgm (STYLE.md §11: tests run against real PostgreSQL).
//
// By default it uses one managed server (package pgserver) per machine and
// user, in /tmp/memstream-pgtest-<uid> on Port() (54339 for root). The first test
// process starts it and leaves it running, so later test processes, and
// the test binaries that `go test` runs in parallel, reuse it. Set
// MEMSTREAM_TEST_DATABASE_URL to use another server instead.
//
// Each test should call Schema to work in its own schema, so that tests can
// run in parallel and leave nothing behind.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/memstream/memstream/pgserver"
)

// EnvURL names the environment variable that points tests at an existing
// database instead of the managed test server.
const EnvURL = "MEMSTREAM_TEST_DATABASE_URL"

// basePort is root's test server port, apart from the embedded default
// (54329) so that tests never touch a developer's demo data.
const basePort = 54339

// Port returns the managed test server's port for this user: each user has
// their own server and data directory, so two users testing on one machine
// must not race for one port.
func Port() int {
	uid := os.Getuid()
	if uid <= 0 {
		return basePort
	}
	return basePort + 1 + uid%4000
}

// startTimeout covers a first initdb on a slow machine.
const startTimeout = 3 * time.Minute

var (
	once     sync.Once
	dbURL    string
	setupErr error
)

// Dir returns the data directory of the managed test server.
func Dir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("memstream-pgtest-%d", os.Getuid()), "data")
}

// URL returns the URL of a database that has the vector and pg_trgm
// extensions in its public schema. It starts the managed test server on
// first use in this process (or reuses the one another process started).
//
// Without PostgreSQL binaries the test is skipped, except under CI, where a
// missing database is a failure: CI runs scripts/install-deps.sh first.
func URL(t testing.TB) string {
	t.Helper()
	once.Do(func() { dbURL, setupErr = setup() })
	if errors.Is(setupErr, pgserver.ErrNotInstalled) && os.Getenv("CI") == "" {
		t.Skipf("skipping: no PostgreSQL for tests: %v (or set %s)", setupErr, EnvURL)
	}
	if setupErr != nil {
		t.Fatalf("pgtest: %v", setupErr)
	}
	return dbURL
}

func setup() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if u := os.Getenv(EnvURL); u != "" {
		// The managed server creates the extensions itself; an external
		// database may not have them yet.
		if err := ensureExtensions(ctx, u); err != nil {
			return "", fmt.Errorf("%s: %w", EnvURL, err)
		}
		return u, nil
	}
	// pgserver.Start serialises concurrent starts of one data directory
	// across processes with a flock on <dir>.lock, so test binaries that
	// race here start the server once and the others reuse it.
	srv, err := pgserver.Start(ctx, pgserver.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, pgserver.Config{DataDir: Dir(), Port: Port()})
	if err != nil {
		return "", fmt.Errorf("start test server in %s: %w", Dir(), err)
	}
	// Deliberately not stopped: the next test process reuses it.
	return srv.URL(), nil
}

func ensureExtensions(ctx context.Context, dbURL string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, ext := range []string{"vector", "pg_trgm", "btree_gin"} {
		if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS "+ext+" WITH SCHEMA public"); err != nil {
			return fmt.Errorf("create extension %s: %w", ext, err)
		}
	}
	return nil
}

// Schema creates a fresh schema named after the test and returns a URL
// whose search_path is "<schema>,public", so unqualified tables land in the
// schema while the vector type and pg_trgm resolve from public. The schema
// is dropped when the test ends.
func Schema(t testing.TB) (dbURL, schema string) {
	t.Helper()
	base := URL(t)
	schema = schemaName(t.Name())
	ident := pgx.Identifier{schema}.Sanitize()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+ident); err != nil {
		t.Fatalf("pgtest: create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+ident+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
	})

	dbURL, err = withSearchPath(base, schema+",public")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dbURL, schema
}

// withSearchPath adds search_path to a connection string.
func withSearchPath(connString, path string) (string, error) {
	return withParam(connString, "search_path", path)
}

// withParam adds a parameter to a connection string; pgx sends parameters
// it does not know to the server as run-time settings.
func withParam(connString, key, value string) (string, error) {
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		u, err := url.Parse(connString)
		if err != nil {
			return "", fmt.Errorf("parse %s: %w", EnvURL, err)
		}
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	// keyword=value form
	return connString + " " + key + "='" + strings.ReplaceAll(value, "'", `\'`) + "'", nil
}

// schemaName turns a test name into a unique, valid, lower-case identifier
// of at most 63 bytes, readable in psql when a test is debugged.
func schemaName(testName string) string {
	var b strings.Builder
	b.WriteString("t_")
	for _, r := range strings.ToLower(testName) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	const maxLen = 63 - 1 - 8 // "_" + 8 hex digits
	if len(name) > maxLen {
		name = name[:maxLen]
	}
	return name + "_" + hex.EncodeToString(suffix)
}
