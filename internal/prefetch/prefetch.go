package prefetch

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
		float32Rows(base, width, idx)
	}
}
