package sysstat

import (
	"os"
	"syscall"
)

// addressSpaceRoom is the process's address-space limit (RLIMIT_AS, as
// ulimit -v sets it) less the address space it already maps; limited is
// false without such a limit. Under it an allocation fails, and the Go
// runtime crashes, long before the machine's memory runs out.
func addressSpaceRoom() (room int64, limited bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &rl); err != nil || rl.Cur > 1<<62 { // RLIM_INFINITY is all ones
		return 0, false
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	kib, ok := statusKiB(status, "VmSize:")
	if !ok {
		return 0, false
	}
	return max(int64(rl.Cur)-kib*1024, 0), true
}
