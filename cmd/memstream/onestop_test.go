package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/memstream/memstream/pgserver"
)

// TestOneShotCommandsKeepServerTheyDidNotStart: `memstream migrate`,
// `export pages`, `consolidate` and `defense rescan` share commandStore.
// Run beside a server (here one started first, as `serve` would), they
// reuse its PostgreSQL and must leave it running when they finish.
func TestOneShotCommandsKeepServerTheyDidNotStart(t *testing.T) {
	if _, err := pgserver.FindBinDir(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	ctx := t.Context()
	dataDir := filepath.Join(reachableTempDir(t), "data")
	port := freeTCPPort(t)
	serve, err := pgserver.Start(ctx, pgserver.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, pgserver.Config{DataDir: filepath.Join(dataDir, "postgres"), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = serve.Stop(context.Background()) })

	sets := []string{"--set", "data_dir=" + dataDir, "--set", "database.embedded_port=" + strconv.Itoa(port)}
	var out, errOut bytes.Buffer
	if err := cmdMigrate(ctx, sets, &out, &errOut); err != nil {
		t.Fatalf("migrate: %v\n%s", err, errOut.String())
	}
	out.Reset()
	if err := cmdExport(ctx, append([]string{"pages", "--bank", "nobody", "--out", t.TempDir()}, sets...), &out, &errOut); err != nil {
		t.Fatalf("export pages: %v\n%s", err, errOut.String())
	}
	conn, err := pgx.Connect(ctx, serve.URL())
	if err != nil {
		t.Fatalf("the server started first is gone after one-shot commands: %v\n%s", err, errOut.String())
	}
	conn.Close(ctx)

	// Without a server running, a one-shot command starts its own and stops
	// it when done.
	if err := serve.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cmdMigrate(ctx, sets, &out, &errOut); err != nil {
		t.Fatalf("migrate: %v\n%s", err, errOut.String())
	}
	if _, err := os.Stat(filepath.Join(dataDir, "postgres", "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a one-shot command left the server it started running (postmaster.pid: %v)", err)
	}
}

// reachableTempDir is a temporary directory that the server user can
// enter when the tests run as root.
func reachableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestEmbeddedPostgresAsRootFromPrivateDir: `make demo` or `serve` as root
// from a directory user postgres cannot enter (a clone under /root, a
// mktemp -d). The managed server must start, and the log say where its
// cluster lives.
func TestEmbeddedPostgresAsRootFromPrivateDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: only root runs the managed server as another user")
	}
	if _, err := pgserver.FindBinDir(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(private, "clone", ".memstream")
	t.Cleanup(func() {
		// The cluster lives outside the test's directories.
		if target, err := os.Readlink(filepath.Join(dataDir, "postgres")); err == nil {
			_ = os.RemoveAll(target)
		}
	})
	sets := []string{"--set", "data_dir=" + dataDir, "--set", "database.embedded_port=" + strconv.Itoa(freeTCPPort(t))}
	var out, errOut bytes.Buffer
	if err := cmdMigrate(t.Context(), sets, &out, &errOut); err != nil {
		t.Fatalf("migrate as root with data_dir under a 0700 directory: %v\n%s", err, errOut.String())
	}
	target, err := os.Readlink(filepath.Join(dataDir, "postgres"))
	if err != nil {
		t.Fatalf("data_dir/postgres is not a symlink to the relocated cluster: %v", err)
	}
	if !bytes.Contains(errOut.Bytes(), []byte(target)) {
		t.Fatalf("the log does not say where the cluster lives (%s):\n%s", target, errOut.String())
	}
}
