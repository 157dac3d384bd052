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
