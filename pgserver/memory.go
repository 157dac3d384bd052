package pgserver

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// memorySettings are the server's memory settings for a machine with mem
// bytes of RAM available to it.
type memorySettings struct {
	sharedBuffers      int64
	effectiveCacheSize int64
}

// Bounds of shared_buffers. Below 128 MB the HNSW index's upper layers and
// the hot heap pages of one busy bank no longer stay cached; past 8 GB the
// gain over the page cache is small and checkpoints write more.
const (
	minSharedBuffers = 128 << 20
	maxSharedBuffers = 8 << 30
)

// sizeMemory follows PostgreSQL's usual guidance for a server that shares
// the machine with its application: a quarter of RAM for shared_buffers,
// and the planner told that three quarters may be cached (shared buffers
// plus the kernel's page cache). A fixed 256 MB left a million-fact table
// (heap and HNSW index of several GB) to be read back through the page
// cache on every query, on a machine with 24 GB.
func sizeMemory(mem int64) memorySettings {
	if mem <= 0 {
		mem = 2 << 30
	}
	sb := min(max(mem/4, minSharedBuffers), maxSharedBuffers)
	return memorySettings{sharedBuffers: sb, effectiveCacheSize: max(mem*3/4, sb)}
}

// machineMemory is the RAM this process may use: MemTotal, or the cgroup's
// memory limit when a container sets a lower one. 0 when neither is known.
func machineMemory() int64 {
	total := memTotal("/proc/meminfo")
	if lim := cgroupLimit(); lim > 0 && (total == 0 || lim < total) {
		return lim
	}
	return total
}

func memTotal(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// cgroupLimit reads the memory limit of cgroup v2 (memory.max) or v1
// (memory.limit_in_bytes); 0 when there is none.
func cgroupLimit() int64 {
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0
		}
		n, err := strconv.ParseInt(s, 10, 64)
		// v1 reports "no limit" as a huge number.
		if err != nil || n <= 0 || n >= 1<<60 {
			return 0
		}
		return n
	}
	return 0
}

// confBytes renders a size for postgresql.conf in whole megabytes.
func confBytes(n int64) string { return strconv.FormatInt(n>>20, 10) + "MB" }
