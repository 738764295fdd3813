//go:build unix

package gemm

import "syscall"

// cpuSeconds is the user+system CPU time this process has used, so that
// benchmarks can report throughput per CPU-second, which other processes
// competing for the same cores disturb far less than wall-clock time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
