package hugepage

import (
	"slices"
	"unsafe"
)

// Threshold is the smallest slice, in bytes, that Advise and the
// allocators advise: below it a slice spans at most one huge page, and the
// system call would cost more than it saves.
const Threshold = 4 << 20

// Size is the huge page size advised regions are aligned to.
const Size = 2 << 20

// Advise asks that b's 2 MiB-aligned interior be backed by huge pages, if
// b is at least Threshold bytes and the system offers huge pages.
func Advise(b []byte) {
	if len(b) < Threshold || !enabled() {
		return
	}
	if lo, hi := interior(uintptr(unsafe.Pointer(unsafe.SliceData(b))), len(b)); hi > lo {
		advise(b[lo:hi])
	}
}

// Collapse moves the 2 MiB-aligned interior of s to huge pages now, if s
// is at least Threshold bytes: memory already written is copied into them
// (a few milliseconds a megabyte), as for arrays filled once and then read
// at random, a loaded graph's adjacency and features. Memory not yet
// written, which the kernel cannot collapse, and any where the kernel has
// no collapse (before Linux 6.1) is advised instead (Advise).
func Collapse[T any](s []T) {
	n := len(s) * int(unsafe.Sizeof(*new(T)))
	if n < Threshold || !enabled() {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), n)
	if lo, hi := interior(uintptr(unsafe.Pointer(unsafe.SliceData(b))), n); hi > lo {
		collapse(b[lo:hi])
	}
}

// interior returns the offsets [lo, hi) of the whole huge pages within n
// bytes at address start (hi <= lo when there is none).
func interior(start uintptr, n int) (lo, hi int) {
	a := (start + Size - 1) &^ (Size - 1)
	b := (start + uintptr(n)) &^ (Size - 1)
	return int(a - start), int(b - start)
}

// Bytes returns n zeroed bytes, advised before their first write when n is
// at least Threshold. Communication buffers, which Grow makes on the
// exchange's path, are advised, not collapsed: a collapse copies recycled
// memory at once, and under memory pressure compacts and reclaims first.
func Bytes(n int) []byte {
	b := make([]byte, n)
	Advise(b)
	return b
}

// Float32s returns n zeroed float32s, on huge pages (Collapse) when they
// take at least Threshold bytes: matrices that live for the run (features,
// the layers' kept buffers, halo rows), made once.
func Float32s(n int) []float32 { return alloc[float32](n) }

// Uint16s returns n zeroed uint16s (bfloat16 matrices), collapsed like
// Float32s.
func Uint16s(n int) []uint16 { return alloc[uint16](n) }

func alloc[T float32 | uint16](n int) []T {
	s := make([]T, n)
	Collapse(s)
	return s
}

// Grow is slices.Grow for byte buffers: it returns b with room for n more
// bytes. When that takes a new allocation of at least Threshold bytes, the
// new array is advised (Bytes) before b's contents are copied into it.
func Grow(b []byte, n int) []byte {
	if n <= cap(b)-len(b) || len(b)+n < Threshold {
		return slices.Grow(b, n)
	}
	c := Bytes(max(len(b)+n, cap(b)+cap(b)/4)) // append's growth for large slices
	copy(c, b)
	return c[:len(b)]
}
