package sysstat

import (
	"os"
	"syscall"
	"testing"
)

// Under an address-space limit (ulimit -v) the memory available is what
// the limit leaves: allocations past it fail and crash the runtime however
// much memory the machine has free.
func TestAvailableMemoryUnderAddressSpaceLimit(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &old); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	kib, ok := statusKiB(status, "VmSize:")
	if !ok {
		t.Skip("no VmSize")
	}
	const headroom = 512 << 20
	limit := uint64(kib*1024 + headroom)
	if limit > old.Cur {
		t.Skipf("the limit is already below %d bytes", limit)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: old.Max}); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	n, ok := AvailableMemory()
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &old); err != nil {
		t.Fatalf("restoring the limit: %v", err)
	}
	if !ok || n > headroom {
		t.Fatalf("AvailableMemory() = %d, %v under a limit %d bytes above the mapped address space", n, ok, headroom)
	}
}
