package pgserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// TempDir makes a private temporary directory that a managed server can
// still use: run as root, the server runs as another user, who must be able
// to enter it (os.MkdirTemp makes it 0700).
func TempDir(prefix string) (string, error) {
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

// FreePort asks the kernel for a free loopback TCP port. The server binds
// it a moment later, which is racy in principle but fine for a private run.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// StartTemp starts a server on a free port in a new temporary directory,
// for benchmarks and evaluations that must not touch a configured one. The
// caller stops the server and removes dir.
func StartTemp(ctx context.Context, deps Deps, prefix string) (srv *Server, dir string, err error) {
	dir, err = TempDir(prefix)
	if err != nil {
		return nil, "", fmt.Errorf("temporary PostgreSQL: %w", err)
	}
	port, err := FreePort()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", fmt.Errorf("temporary PostgreSQL: find a free port: %w", err)
	}
	srv, err = Start(ctx, deps, Config{DataDir: filepath.Join(dir, "data"), Port: port})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", fmt.Errorf("temporary PostgreSQL: %w", err)
	}
	return srv, dir, nil
}
