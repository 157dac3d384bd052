package pipeline_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/memstream/memstream/pgserver"
)

// TestPostgresRestartMidIngest stops the PostgreSQL server itself (not just
// its connections) while events are being persisted, starts it again, and
// checks that every event is stored exactly once: persist retries the
// connection errors until the server is back, and nothing is acknowledged
// before it commits.
func TestPostgresRestartMidIngest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts its own PostgreSQL server")
	}
	if _, err := pgserver.FindBinDir(); err != nil {
		t.Skipf("no PostgreSQL binaries: %v", err)
	}
	dir, err := os.MkdirTemp("", "memstream-pgrestart-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The server runs as another user when the tests run as root.
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	pgcfg := pgserver.Config{DataDir: dir + "/data", Port: port}
	srv, err := pgserver.Start(ctx, pgserver.Deps{Logger: log}, pgcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })

	h := newHarnessURL(t, srv.URL())
	const n = 800
	var vals [][]byte
	for i := 0; i < n; i++ {
		vals = append(vals, flightEvent("dora", i))
	}
	h.produce(vals...)
	r := h.start("g-pgrestart")
	deadline := time.Now().Add(2 * time.Minute)
	for h.count(`SELECT count(*) FROM events`) < n/4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // ingest keeps failing and retrying meanwhile
	if srv, err = pgserver.Start(ctx, pgserver.Deps{Logger: log}, pgcfg); err != nil {
		t.Fatal(err)
	}
	h.waitCommitted("g-pgrestart", n, 3*time.Minute)
	r.stop(t)
	if got := h.count(`SELECT count(*) FROM events WHERE bank_id = 'dora'`); got != n {
		t.Fatalf("events = %d, want %d", got, n)
	}
	if dup := h.count(`SELECT count(*) FROM (SELECT substring(text from 'QX[0-9]{5}') f FROM memory_units WHERE text ~ 'QX[0-9]{5}' GROUP BY 1 HAVING count(*) > 1) d`); dup != 0 {
		t.Fatalf("%d facts doubled across the restart", dup)
	}
	if got := h.count(`SELECT count(*) FROM dead_letters`); got != 0 {
		t.Fatalf("%d records dead-lettered because the database was down", got)
	}
}
