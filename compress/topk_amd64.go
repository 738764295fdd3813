//go:build !noasm

package compress

// bitmapAsm selects the kernels of the codecs that pick columns by a
// bitmap: topkSelectAVX512 (topkSelectGo's twin), and packMaskedAVX512 and
// unpackMaskedAVX512 (the loops of putBitmap and readBitmap, which the
// subspace codec also uses). They need BMI2's BZHI and PDEP as well, which
// every AVX-512 CPU has.
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

// packMaskedAVX512 writes the values of the columns in mask, in column
// order: putBitmap's loop over the kept values.
//
//go:noescape
func packMaskedAVX512(out *byte, bits *uint32, mask *uint64, n int)

// unpackMaskedAVX512 writes all n ≥ 1 columns of row: the values, in
// column order, at the columns in mask (which has no bits past n), zeros
// elsewhere. It is readBitmap's loop.
//
//go:noescape
func unpackMaskedAVX512(row *float32, vals *byte, mask *byte, n int)

// packRowsAVX512 is packRowsGo for rows ≥ 1 and n ≥ 1.
//
//go:noescape
func packRowsAVX512(out *byte, outStride int, bits *uint32, rows, n int, bitmaps *byte, bitmapStride, k int) int

// unpackRowsAVX512 is unpackRowsGo for rows ≥ 1 and n ≥ 1.
//
//go:noescape
func unpackRowsAVX512(out *float32, bitmaps *byte, bitmapStride int, vals *byte, valStride int, rows, n, k int, scale float32) int
