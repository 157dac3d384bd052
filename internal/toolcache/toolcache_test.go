package toolcache

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeT records a Fatal instead of ending the test, to check Dir's refusal.
type fakeT struct {
	testing.TB
	fatal string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.fatal = format
	panic(f)
}

func TestDirBuildsOncePerKey(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	builds := 0
	build := func(dir string) error {
		builds++
		return os.WriteFile(filepath.Join(dir, "tool"), []byte("ok"), 0o644)
	}
	a := Dir(t, "tool", []byte("v1"), build)
	if b := Dir(t, "tool", []byte("v1"), build); b != a || builds != 1 {
		t.Fatalf("second call: %s (first %s), %d builds; want the same directory, one build", b, a, builds)
	}
	if raw, err := os.ReadFile(filepath.Join(a, "tool")); err != nil || string(raw) != "ok" {
		t.Fatalf("built file: %q %v", raw, err)
	}
	if c := Dir(t, "tool", []byte("v2"), build); c == a || builds != 2 {
		t.Fatalf("another key reused %s (%d builds)", c, builds)
	}
}

func TestDirLeavesNothingWhenTheBuildFails(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	ft := &fakeT{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != ft {
				panic(p)
			}
		}()
		Dir(ft, "broken", []byte("k"), func(string) error { return errors.New("no network") })
	}()
	if !strings.Contains(ft.fatal, "install") {
		t.Fatalf("a failed build did not stop the test: %q", ft.fatal)
	}
	left, _ := filepath.Glob(filepath.Join(cache, "memstream", "broken*"))
	if len(left) != 0 {
		t.Fatalf("a failed build left %v", left)
	}
}

// TestNPMInstallsOnceAndRewritesScripts: a package with no dependencies
// (npm ci needs no network for it) is installed once per lock file, and
// its script is written again on every call.
func TestNPMInstallsOnceAndRewritesScripts(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	src := t.TempDir()
	files := map[string]string{
		"package.json":      `{"name": "toolcache-npm-test", "private": true}`,
		"package-lock.json": `{"name": "toolcache-npm-test", "lockfileVersion": 3, "requires": true, "packages": {"": {"name": "toolcache-npm-test"}}}`,
		".npmrc":            "fund=false\n",
		"run.mjs":           "console.log(1)\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := NPM(t, "npm-test", src, "run.mjs")
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		t.Fatalf("not installed: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "installed-marker"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "run.mjs"), []byte("console.log(2)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if again := NPM(t, "npm-test", src, "run.mjs"); again != dir {
		t.Fatalf("second call: %s, first %s", again, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "installed-marker")); err != nil {
		t.Fatal("the second call installed again")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "run.mjs")); string(b) != "console.log(2)\n" {
		t.Fatalf("script not rewritten: %q", b)
	}
}
