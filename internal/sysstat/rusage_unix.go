//go:build unix

package sysstat

import (
	"runtime"
	"syscall"
	"time"
)

// CPUTime is the user plus system CPU time the process has used, or 0 if
// the system will not say.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rusagePeakRSS is getrusage's peak resident set size in bytes. Linux and the
// BSDs report ru_maxrss in KiB, macOS in bytes.
func rusagePeakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}

// MajorFaults is the number of page faults the process has taken that
// waited for a read from storage.
func MajorFaults() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Majflt)
}
