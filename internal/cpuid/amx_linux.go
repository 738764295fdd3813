//go:build linux && amd64 && !noasm

package cpuid

import "syscall"

// requestAMX asks Linux for the AMX tile data state, which it grants per
// process on request (arch_prctl ARCH_REQ_XCOMP_PERM, Linux 5.16 and
// later) so that it can size signal frames for the 8 KiB of tiles. A
// kernel that refuses leaves the tiles off.
func requestAMX() bool {
	const archReqXcompPerm, xfeatureXtiledata = 0x1023, 18
	_, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0)
	return errno == 0
}
