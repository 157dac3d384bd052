package proctest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestFreeAddrCanBeListenedOn(t *testing.T) {
	addr := FreeAddr(t)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	ln.Close()
}

func TestLogBufferUnderConcurrentWrites(t *testing.T) {
	var b LogBuffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				fmt.Fprintf(&b, "%d\n", i)
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 800 {
		t.Fatalf("%d lines, want 800", n)
	}
}

func TestTail(t *testing.T) {
	if got := Tail("abcdef", 3); got != "def" {
		t.Errorf("Tail(abcdef, 3) = %q", got)
	}
	if got := Tail("ab", 3); got != "ab" {
		t.Errorf("Tail(ab, 3) = %q", got)
	}
}

func TestBinaryRuns(t *testing.T) {
	if _, err := os.Stat(filepath.Join(RepoRoot(), "go.mod")); err != nil {
		t.Fatalf("RepoRoot %s is not the checkout: %v", RepoRoot(), err)
	}
	out, err := exec.Command(Binary(t), "--help").CombinedOutput()
	if !strings.Contains(string(out), "serve") {
		t.Fatalf("memstream --help (%v) does not list serve:\n%s", err, out)
	}
}
