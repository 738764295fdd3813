package metrics

import (
	"bytes"
	"os"
	"strconv"
)

// ResidentBytes is the process's resident memory now, for Epoch.RSSBytes;
// 0 where the system does not say (it reads Linux's /proc/self/statm).
// It is the current figure rather than the peak because a per-epoch
// series of peaks would hide memory given back between epochs.
func ResidentBytes() int64 {
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	// The second field is the resident set, in pages.
	fields := bytes.Fields(statm)
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(string(fields[1]), 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
