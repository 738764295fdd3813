//go:build unix

package bench

import (
	"runtime"
	"syscall"
)

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
