package pgserver

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSizeMemory(t *testing.T) {
	t.Parallel()
	const gb = int64(1) << 30
	for _, c := range []struct {
		mem        int64
		sb, cached int64
	}{
		{24 * gb, 6 * gb, 18 * gb},
		{2 * gb, 512 << 20, 1536 << 20},
		{256 << 20, 128 << 20, 192 << 20}, // the floor
		{64 * gb, 8 * gb, 48 * gb},        // the cap
		{0, 512 << 20, 1536 << 20},        // unknown: as if 2 GB
	} {
		got := sizeMemory(c.mem)
		if got.sharedBuffers != c.sb || got.effectiveCacheSize != c.cached {
			t.Errorf("sizeMemory(%d) = %+v, want shared_buffers %d, effective_cache_size %d", c.mem, got, c.sb, c.cached)
		}
	}
	if got := confBytes(6 * gb); got != "6144MB" {
		t.Errorf("confBytes = %q", got)
	}
}

func TestMemTotal(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "meminfo")
	if err := os.WriteFile(p, []byte("MemTotal:       24684084 kB\nMemFree:        15145276 kB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := memTotal(p); got != 24684084<<10 {
		t.Fatalf("memTotal = %d", got)
	}
	if got := memTotal(filepath.Join(t.TempDir(), "none")); got != 0 {
		t.Fatalf("memTotal of a missing file = %d", got)
	}
	if machineMemory() <= 0 {
		t.Fatal("machineMemory found no memory on this machine")
	}
}
