package sysstat

import (
	"bytes"
	"os"
	"strconv"
)

// Resident is the process's resident memory as the kernel splits it:
// anonymous pages (heap, stacks) and file pages (mapped files' pages the
// page cache holds, which the kernel can drop and read again).
type Resident struct {
	Anon, File int64
}

// ResidentNow reads the split from /proc/self/status; ok is false where
// the system does not give it.
func ResidentNow() (r Resident, ok bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return r, false
	}
	anon, ok1 := statusKiB(b, "RssAnon:")
	file, ok2 := statusKiB(b, "RssFile:")
	return Resident{Anon: anon * 1024, File: file * 1024}, ok1 && ok2
}

// StorageReadBytes is how many bytes the process has caused to be read
// from storage (read_bytes of /proc/self/io): page-cache misses, its own
// and the readahead it asked for; ok is false where the system does not
// count them.
func StorageReadBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, false
	}
	const key = "read_bytes:"
	i := bytes.Index(b, []byte("\n"+key))
	if i < 0 {
		return 0, false
	}
	line := b[i+1+len(key):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	v, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 10, 64)
	return v, err == nil
}
