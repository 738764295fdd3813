//go:build unix

package guardtest

import (
	"syscall"
	"testing"
	"unsafe"
)

// Bytes returns n bytes that end where an inaccessible page begins. The
// memory is released when the test ends; the test is skipped where the
// system will not map it.
func Bytes(t testing.TB, n int) []byte {
	t.Helper()
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

// Float32s is Bytes for n float32s.
func Float32s(t testing.TB, n int) []float32 {
	t.Helper()
	b := Bytes(t, 4*n)
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
}

// Uint16s is Bytes for n uint16s.
func Uint16s(t testing.TB, n int) []uint16 {
	t.Helper()
	b := Bytes(t, 2*n)
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), n)
}
