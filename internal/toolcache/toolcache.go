// Package toolcache keeps the outside tools that tests install (a Python
// virtualenv with Hindsight's client, the TypeScript MCP SDK) in the user
// cache directory, keyed by what defines them (a requirements or lock
// file), so each is installed once per machine and never inside the
// repository.
package toolcache

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Dir returns <user cache>/memstream/<name>-<hash of key>, built by build
// the first time. build fills a fresh directory beside the final one, which
// is renamed into place only once build succeeded, so an interrupted
// install never looks complete; when two processes build at once, the
// first rename wins and the other's copy is dropped.
func Dir(t testing.TB, name string, key []byte, build func(dir string) error) string {
	t.Helper()
	sum := sha256.Sum256(key)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "memstream", name+"-"+hex.EncodeToString(sum[:6]))
	marker := filepath.Join(dir, ".complete")
	if _, err := os.Stat(marker); err == nil {
		return dir
	}
	tmp := fmt.Sprintf("%s.tmp-%d", dir, os.Getpid())
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := build(tmp); err != nil {
		_ = os.RemoveAll(tmp)
		t.Fatalf("install %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), key, 0o644); err != nil {
		_ = os.RemoveAll(tmp)
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.RemoveAll(tmp)
		if _, statErr := os.Stat(marker); statErr != nil {
			t.Fatal(err) // nobody else built it either
		}
	}
	return dir
}

// NPM installs the Node package in src (npm ci from its package-lock.json,
// with its .npmrc) into the cache, once per lock file, and writes the
// named scripts from src beside it on every call, since they change
// without the lock file. It returns the directory, where `node <script>`
// resolves the installed packages. Without npm the test is skipped, and
// fails under CI, whose make test needs Node.js for the console too.
func NPM(t testing.TB, name, src string, scripts ...string) string {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("npm is missing: make test needs Node.js and npm, as the console's build does (Debian: apt-get install nodejs npm)")
		}
		t.Skip("npm is not installed")
	}
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := Dir(t, name, lock, func(dir string) error {
		for _, f := range []string{"package.json", "package-lock.json", ".npmrc"} {
			if err := copyFile(filepath.Join(src, f), filepath.Join(dir, f)); err != nil {
				return err
			}
		}
		c := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		c.Dir = dir
		if b, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("npm ci: %v\n%s", err, b)
		}
		return nil
	})
	for _, s := range scripts {
		// Atomically, under a name of its own: another test process may
		// be running the previous copy.
		tmp := filepath.Join(dir, fmt.Sprintf(".%s-%d", s, os.Getpid()))
		if err := copyFile(filepath.Join(src, s), tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, s)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}
