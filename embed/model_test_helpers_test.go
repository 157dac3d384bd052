package embed

import (
	"os"
	"testing"
)

// testModelDir returns the directory of the installed local model, or skips
// the test when it is not installed. MEMSTREAM_REQUIRE_MODEL=1 (set by `make
// test`, which installs the model first) turns the skip into a failure, so
// CI cannot pass by not running these tests.
func testModelDir(t testing.TB) string {
	t.Helper()
	dir, err := FindModelDir("")
	if err != nil {
		if os.Getenv("MEMSTREAM_REQUIRE_MODEL") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return dir
}

// testMiniLMDir is testModelDir for the MiniLM model.
func testMiniLMDir(t testing.TB) string {
	t.Helper()
	dir, err := FindMiniLMDir("")
	if err != nil {
		if os.Getenv("MEMSTREAM_REQUIRE_MODEL") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return dir
}
