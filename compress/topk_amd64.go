//go:build !noasm

package compress

// bitmapAsm selects the kernels of the codecs that pick columns by a
// bitmap: topkSelectAVX512 and topkSelectPairAVX512 (topkSelectGo's
// twins), and packRowsAVX512 and unpackRowsAVX512 (bitmap.go's, which the
// subspace codec also uses). They need BMI2 (BZHI, PDEP, SHRX) and POPCNT
// as well, which every AVX-512 CPU has.
var bitmapAsm = quantAsm

// topkSelectAVX512 is topkSelectGo for n values at bits (0 < k < n); keys has
// room for n rounded up to a multiple of 16. Unless the row has a NaN, it
// also sets the mask bits of the k columns Encode sends (keptMask's, 16
// per block of keys, zero past n).
//
//go:noescape
func topkSelectAVX512(keys, bits *uint32, mask *uint64, n, k int) (thr uint32, atLeast int)

// topkSelectPairAVX512 sets the masks of two rows of n ≤ 64 values at a
// time, as topkSelectAVX512 would, or reports false having written
// nothing (a NaN, at most k nonzero values, or ties at a threshold).
//
//go:noescape
func topkSelectPairAVX512(a, b *uint32, maskA, maskB *uint64, n, k int) bool

// packRowsAVX512 is packRowsGo for rows ≥ 1 and n ≥ 1.
//
//go:noescape
func packRowsAVX512(out *byte, outStride int, bits *uint32, rows, n int, bitmaps *byte, bitmapStride, k int) int

// unpackRowsAVX512 is unpackRowsGo for rows ≥ 1 and n ≥ 1.
//
//go:noescape
func unpackRowsAVX512(out *float32, bitmaps *byte, bitmapStride int, vals *byte, valStride int, rows, n, k int, scale float32) int
