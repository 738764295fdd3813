package dataset

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// residentBytes counts the bytes of the mapping b in the page cache.
func residentBytes(b []byte) (int64, bool) {
	page := os.Getpagesize()
	vec := make([]byte, (len(b)+page-1)/page)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return 0, false
	}
	var n int64
	for _, v := range vec {
		n += int64(v & 1)
	}
	return min(n*int64(page), int64(len(b))), true
}
