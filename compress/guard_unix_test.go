//go:build unix

package compress

import (
	"syscall"
	"testing"
)

// guardedBytes returns n bytes that end where an inaccessible page begins,
// so that a kernel reading or writing past the slice faults.
func guardedBytes(t *testing.T, n int) []byte {
	page := syscall.Getpagesize()
	size := (n+page-1)/page*page + page
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skip("mmap:", err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[size-page:], syscall.PROT_NONE); err != nil {
		t.Skip("mprotect:", err)
	}
	return mem[size-page-n : size-page]
}
