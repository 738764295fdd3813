//go:build !noasm

package prefetch

// In prefetch_amd64.s: PREFETCHT0 of base[idx[j]] for every j.

//go:noescape
func int32s(base []int32, idx []int32)

//go:noescape
func int64s(base []int64, idx []int32)

//go:noescape
func float32Rows(base []float32, width int, idx []int32)
