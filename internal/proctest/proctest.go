// Package proctest is what tests that run memstream as a real process
// share: the binary built once per test binary, free addresses, and a log
// buffer safe to read while the process writes it.
package proctest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary returns the path of a memstream binary: $MEMSTREAM_BIN when set
// (make test-console builds one), else ./cmd/memstream built once per test
// binary, so every test of a package runs the same build.
func Binary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("MEMSTREAM_BIN"); bin != "" {
		return bin
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "memstream-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "memstream")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/memstream")
		cmd.Dir = RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/memstream: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// RepoRoot is the checkout's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// FreeAddr returns a loopback address no one listens on now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// LogBuffer collects a process's output; it may be read while written.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Tail is the last n bytes of s, for a failure message that shows a log's end.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// RemoveBinary deletes the binary Binary built, if any; call it from
// TestMain after m.Run.
func RemoveBinary() {
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
}
