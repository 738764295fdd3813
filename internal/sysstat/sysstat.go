package sysstat

import (
	"bytes"
	"os"
	"strconv"
)

// PeakRSS returns the process's peak resident set size in bytes, or 0 where
// it is unknown. On Linux it reads VmHWM, which ResetPeakRSS can lower, so
// that one process can measure several runs; elsewhere it is getrusage's
// ru_maxrss, which only grows.
func PeakRSS() int64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		if v, ok := statusKiB(b, "VmHWM:"); ok {
			return v * 1024
		}
	}
	return rusagePeakRSS()
}

// ResetPeakRSS restarts the peak at the current resident set size, where
// the system allows it (Linux: /proc/self/clear_refs), and reports whether
// it did.
func ResetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// statusKiB returns the value of a "Key:   123 kB" line of /proc/self/status.
func statusKiB(status []byte, key string) (int64, bool) {
	i := bytes.Index(status, []byte(key))
	if i < 0 {
		return 0, false
	}
	line := status[i+len(key):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	fields := bytes.Fields(line)
	if len(fields) == 0 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(fields[0]), 10, 64)
	return v, err == nil
}
