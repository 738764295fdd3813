//go:build !noasm

package compress

// topkAsm selects topkSelectAVX512, topkSelectGo's twin (it needs BMI2's
// BZHI as well, which every AVX-512 CPU has).
var topkAsm = quantAsm

// topkSelectAVX512 is topkSelectGo for n values at bits (0 < k < n); keys has
// room for n rounded up to a multiple of 16. Unless the row has a NaN, it
// also sets the mask bits of the k columns Encode sends (keptMask's, 16
// per block of keys, zero past n).
//
//go:noescape
func topkSelectAVX512(keys, bits *uint32, mask *uint64, n, k int) (thr uint32, atLeast int)

// topkPutBitmapAVX512 is putBitmap's loop over the kept values.
//
//go:noescape
func topkPutBitmapAVX512(out *byte, bits *uint32, mask *uint64, n int)

// topkReadBitmapAVX512 is readBitmap's loop, for a mask with no bits past
// the row's n ≥ 1 columns.
//
//go:noescape
func topkReadBitmapAVX512(row *float32, vals *byte, mask *byte, n int)
