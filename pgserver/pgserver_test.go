package pgserver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/memstream/memstream/internal/proctest"
	"github.com/memstream/memstream/pgserver"
)

func TestConfigWithDefaults(t *testing.T) {
	t.Parallel()
	got := pgserver.Config{}.WithDefaults()
	want := pgserver.Config{DataDir: ".memstream/postgres", Port: 54329, User: "memstream", Database: "memstream", RelocateDir: "/var/lib/memstream"}
	if got != want {
		t.Fatalf("WithDefaults() = %+v, want %+v", got, want)
	}
	kept := pgserver.Config{DataDir: "/x", Port: 1, BinDir: "/b", User: "u", Database: "d", RelocateDir: "/r"}
	if got := kept.WithDefaults(); got != kept {
		t.Fatalf("WithDefaults() changed set fields: %+v", got)
	}
}

func TestStartWithoutBinaries(t *testing.T) {
	t.Parallel()
	_, err := pgserver.Start(t.Context(), pgserver.Deps{}, pgserver.Config{DataDir: filepath.Join(t.TempDir(), "pg"), BinDir: t.TempDir()})
	if !errors.Is(err, pgserver.ErrNotInstalled) {
		t.Fatalf("Start with an empty bin dir: err = %v, want ErrNotInstalled", err)
	}
	if !strings.Contains(err.Error(), "scripts/install-deps.sh") {
		t.Fatalf("error does not say how to install: %v", err)
	}
}

func TestStartBadPort(t *testing.T) {
	t.Parallel()
	_, err := pgserver.Start(t.Context(), pgserver.Deps{}, pgserver.Config{DataDir: t.TempDir(), Port: 70000})
	if err == nil || !strings.Contains(err.Error(), "port 70000") {
		t.Fatalf("Start with port 70000: err = %v, want one naming the port", err)
	}
}

// TestLifecycle covers first start (initdb), extensions and an HNSW index,
// restart with data kept, reuse of a running server, and stale pid files.
func TestLifecycle(t *testing.T) {
	binDir, err := pgserver.FindBinDir()
	if errors.Is(err, pgserver.ErrNotInstalled) {
		t.Skipf("skipping: PostgreSQL server binaries are not installed (run scripts/install-deps.sh): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := pgserver.Config{DataDir: filepath.Join(searchableTempDir(t), "pg"), Port: freePort(t), BinDir: binDir}

	srv := start(t, cfg, log)
	wantURL := fmt.Sprintf("postgres://memstream@127.0.0.1:%d/memstream?sslmode=disable", cfg.Port)
	if srv.URL() != wantURL {
		t.Fatalf("URL() = %q, want %q", srv.URL(), wantURL)
	}
	conn := connect(t, srv.URL())

	var exts []string
	rows, _ := conn.Query(ctx, "SELECT extname FROM pg_extension")
	exts, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"vector", "pg_trgm", "btree_gin"} {
		if !slices.Contains(exts, want) {
			t.Errorf("extension %s missing; have %v", want, exts)
		}
	}
	for name, want := range map[string]string{
		"fsync":                "on",
		"listen_addresses":     "127.0.0.1",
		"maintenance_work_mem": "512MB",
		"server_encoding":      "UTF8",
		"data_checksums":       "on",
	} {
		var got string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("setting %s = %q, want %q", name, got, want)
		}
	}

	mustExec(t, conn,
		"CREATE TABLE items (id bigint PRIMARY KEY, embedding vector(3))",
		"INSERT INTO items VALUES (1, '[1,0,0]'), (2, '[0,1,0]'), (3, '[0,0,1]')",
		"CREATE INDEX items_embedding_idx ON items USING hnsw (embedding vector_cosine_ops)",
	)
	var nearest int64
	if err := conn.QueryRow(ctx, "SELECT id FROM items ORDER BY embedding <=> '[0.1,0.9,0]' LIMIT 1").Scan(&nearest); err != nil {
		t.Fatal(err)
	}
	if nearest != 2 {
		t.Fatalf("nearest neighbour = %d, want 2", nearest)
	}
	var started time.Time
	if err := conn.QueryRow(ctx, "SELECT pg_postmaster_start_time()").Scan(&started); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	// A second Start while the server runs (another memstream process, or
	// one that died without Stop) reuses it instead of failing or starting
	// another; the first handle's Stop then leaves it to the second.
	first := srv
	srv = start(t, cfg, log)
	if err := first.Stop(ctx); err != nil {
		t.Fatalf("Stop of the first handle: %v", err)
	}
	conn = connect(t, srv.URL())
	var startedAgain time.Time
	if err := conn.QueryRow(ctx, "SELECT pg_postmaster_start_time()").Scan(&startedAgain); err != nil {
		t.Fatal(err)
	}
	if !startedAgain.Equal(started) {
		t.Errorf("server was restarted (start time %v, then %v); want the running one reused", started, startedAgain)
	}
	conn.Close(ctx)

	if err := srv.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := srv.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("postmaster.pid after Stop: %v", err)
	}

	srv = start(t, cfg, log)
	assertItems(t, srv.URL())
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	// postmaster.pid left by a crash: its pid is gone, or now belongs to
	// another program.
	for _, tc := range []struct {
		name string
		pid  int
	}{
		{"dead pid", deadPID(t)},
		{"pid of another program", os.Getpid()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stale := fmt.Sprintf("%d\n%s\n%d\n%d\n%s\n127.0.0.1\n  1234567         1\nready   \n",
				tc.pid, cfg.DataDir, time.Now().Unix(), cfg.Port, cfg.DataDir)
			if err := os.WriteFile(filepath.Join(cfg.DataDir, "postmaster.pid"), []byte(stale), 0o600); err != nil {
				t.Fatal(err)
			}
			srv := start(t, cfg, log)
			assertItems(t, srv.URL())
			if err := srv.Stop(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func start(t *testing.T, cfg pgserver.Config, log *slog.Logger) *pgserver.Server {
	t.Helper()
	srv, err := pgserver.Start(t.Context(), pgserver.Deps{Logger: log}, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return srv
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func mustExec(t *testing.T, conn *pgx.Conn, stmts ...string) {
	t.Helper()
	for _, stmt := range stmts {
		if _, err := conn.Exec(t.Context(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

func assertItems(t *testing.T, url string) {
	t.Helper()
	conn := connect(t, url)
	var n int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM items").Scan(&n); err != nil {
		t.Fatalf("data lost across restart: %v", err)
	}
	if n != 3 {
		t.Fatalf("items after restart = %d, want 3", n)
	}
}

// searchableTempDir returns a temporary directory that the unprivileged
// server user can enter: testing creates it 0700, and as root the server
// runs as another user.
func searchableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestStopLeavesServerOthersUse: a second Start on a running server (a
// one-shot command beside `serve`) reuses it, and neither its Release nor
// its Stop may take the server away from the first.
func TestStopLeavesServerOthersUse(t *testing.T) {
	binDir := binDirOrSkip(t)
	ctx := t.Context()
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	cfg := pgserver.Config{DataDir: filepath.Join(searchableTempDir(t), "pg"), Port: freePort(t), BinDir: binDir}

	serve := start(t, cfg, log)
	if !serve.Started() {
		t.Fatal("first Start: Started() = false, want true")
	}
	oneShot := start(t, cfg, log)
	if oneShot.Started() {
		t.Fatal("second Start on a running server: Started() = true, want false (reused)")
	}
	if err := oneShot.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	assertUp(t, serve.URL(), "after the reusing Server's Release")

	other := start(t, cfg, log)
	if err := other.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	assertUp(t, serve.URL(), "after Stop of a Server while another still uses it")

	// The last user stops it.
	if err := serve.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("postmaster.pid after the last user's Stop: %v", err)
	}

	// A one-shot user that started the server itself stops it on Release,
	// unless someone started using it meanwhile.
	first := start(t, cfg, log)
	second := start(t, cfg, log)
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	assertUp(t, second.URL(), "after Release by the starter while another uses it")
	if err := second.Release(ctx); err != nil {
		t.Fatal(err)
	}
	assertUp(t, second.URL(), "after Release by a Server that did not start it")
	last := start(t, cfg, log)
	if err := last.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("postmaster.pid after the last Stop: %v", err)
	}
}

// TestStartAsRootFromPrivateDir: as root the server runs as user
// postgres, who cannot enter a 0700 directory of root's (a mktemp -d, a
// clone under /root). The cluster then lives where that user can enter,
// with a symlink at the configured path, and survives a restart.
func TestStartAsRootFromPrivateDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: only root runs the server as another user")
	}
	binDir := binDirOrSkip(t)
	ctx := t.Context()
	var logs proctest.LogBuffer
	log := slog.New(slog.NewTextHandler(io.MultiWriter(t.Output(), &logs), nil))
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	relocate := filepath.Join(searchableTempDir(t), "clusters")
	configured := filepath.Join(private, "clone", ".memstream", "postgres")
	cfg := pgserver.Config{DataDir: configured, Port: freePort(t), BinDir: binDir, RelocateDir: relocate}

	srv := start(t, cfg, log)
	conn := connect(t, srv.URL())
	mustExec(t, conn,
		"CREATE TABLE items (id bigint PRIMARY KEY)",
		"INSERT INTO items VALUES (1), (2), (3)")
	conn.Close(ctx)

	real := srv.DataDir()
	if !strings.HasPrefix(real, relocate+string(filepath.Separator)) {
		t.Fatalf("DataDir() = %s, want a directory under %s", real, relocate)
	}
	if target, err := os.Readlink(configured); err != nil || target != real {
		t.Fatalf("configured data dir %s: readlink = %q, %v; want a symlink to %s", configured, target, err, real)
	}
	if _, err := os.Stat(filepath.Join(configured, "PG_VERSION")); err != nil {
		t.Fatalf("cluster not reachable through the configured path: %v", err)
	}
	if !strings.Contains(logs.String(), real) {
		t.Fatalf("the log does not say where the cluster lives (%s):\n%s", real, logs.String())
	}
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	srv = start(t, cfg, log)
	if srv.DataDir() != real {
		t.Fatalf("after restart DataDir() = %s, want %s", srv.DataDir(), real)
	}
	assertItems(t, srv.URL())
}

func binDirOrSkip(t *testing.T) string {
	t.Helper()
	binDir, err := pgserver.FindBinDir()
	if errors.Is(err, pgserver.ErrNotInstalled) {
		t.Skipf("skipping: PostgreSQL server binaries are not installed (run scripts/install-deps.sh): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return binDir
}

// assertUp fails unless the server at url answers a query.
func assertUp(t *testing.T, url, when string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatalf("server down %s: %v", when, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), "SELECT 1"); err != nil {
		t.Fatalf("server down %s: %v", when, err)
	}
}
