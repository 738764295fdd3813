package sysstat

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// AvailableMemory returns how many more bytes this process can take before
// the machine or its control group runs out, or its address space limit
// is reached: the smallest of the kernel's MemAvailable, the cgroup v2
// limit less its usage, and RLIMIT_AS (ulimit -v) less the address space
// mapped. ok is false where none is known.
func AvailableMemory() (n int64, ok bool) {
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if kib, found := statusKiB(b, "MemAvailable:"); found {
			n, ok = kib*1024, true
		}
	}
	if cg, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		dir := filepath.Join("/sys/fs/cgroup", cgroupPath(cg))
		limit, err1 := os.ReadFile(filepath.Join(dir, "memory.max"))
		usage, err2 := os.ReadFile(filepath.Join(dir, "memory.current"))
		if err1 == nil && err2 == nil {
			if room, limited := cgroupRoom(limit, usage); limited && (!ok || room < n) {
				n, ok = room, true
			}
		}
	}
	if room, limited := addressSpaceRoom(); limited && (!ok || room < n) {
		n, ok = room, true
	}
	return n, ok
}

// cgroupPath is the process's cgroup v2 path from /proc/self/cgroup
// ("0::/path"), "" when there is none.
func cgroupPath(b []byte) string {
	for _, line := range bytes.Split(b, []byte("\n")) {
		if p, ok := bytes.CutPrefix(line, []byte("0::")); ok {
			return string(p)
		}
	}
	return ""
}

// cgroupRoom is memory.max less memory.current; limited is false for "max"
// (no limit) or unreadable values.
func cgroupRoom(limit, usage []byte) (room int64, limited bool) {
	l, err1 := strconv.ParseInt(string(bytes.TrimSpace(limit)), 10, 64)
	u, err2 := strconv.ParseInt(string(bytes.TrimSpace(usage)), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return max(l-u, 0), true
}
