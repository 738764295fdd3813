package prefetch

import "unsafe"

// Int32s prefetches base[i] for every i of idx. Indices need not be in
// range: one that is not is a hint that loads nothing.
func Int32s(base []int32, idx []int32) {
	if len(base) > 0 && len(idx) > 0 {
		int32s(base, idx)
	}
}

// Int64s prefetches base[i] for every i of idx, as Int32s does.
func Int64s(base []int64, idx []int32) {
	if len(base) > 0 && len(idx) > 0 {
		int64s(base, idx)
	}
}

// Float32Rows prefetches every cache line of the rows idx[j] of a
// row-major matrix base of the given width: the rows a gather is about to
// copy. Indices need not be in range, as for Int32s.
func Float32Rows(base []float32, width int, idx []int32) {
	if len(base) > 0 && width > 0 && len(idx) > 0 {
		rows(unsafe.Pointer(&base[0]), 4*width, idx)
	}
}

// Uint16Rows is Float32Rows for a matrix of 2-byte values (bfloat16).
func Uint16Rows(base []uint16, width int, idx []int32) {
	if len(base) > 0 && width > 0 && len(idx) > 0 {
		rows(unsafe.Pointer(&base[0]), 2*width, idx)
	}
}
