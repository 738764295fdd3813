//go:build !noasm && !amd64.v3

package compress

// deltaAsm selects the AVX-512 kernels of the delta codec's rows
// (delta_amd64.s), twins of diffMinMax, the codes loops and
// applyDeltaRow's loops in deltarow.go; they need what the quantiser's
// need (AVX-512 F, BW and BMI2's PEXT, PDEP and BZHI). At GOAMD64=v3 the
// Go loops fuse the codes' multiply and add into one rounding, which the
// kernels do not, so that build runs the Go loops (delta_other.go).
var deltaAsm = quantAsm

// deltaDiffMinMaxAVX512 writes row − rec to diff (n values) and returns
// the difference's minimum and maximum, NaNs left out (±Inf if n is 0 or
// every value is NaN), a zero's sign as it falls.
//
//go:noescape
func deltaDiffMinMaxAVX512(diff, row, rec *float32, n int) (lo, hi float32)

// deltaCodesAVX512 writes the nbits-wide codes of diff's n values,
// (d − qlo)·inv + ½ truncated into [0, 2^nbits − 1] (below 1 and NaN:
// 0), packed little-endian in ⌈n·nbits/8⌉ bytes at codes, and adds each
// code's level dlo + code·dstep to rec.
//
//go:noescape
func deltaCodesAVX512(codes *byte, diff, rec *float32, n, nbits int, qlo, inv, dlo, dstep float32)

// deltaApplyAVX512 adds the levels dlo + code·dstep of the n nbits-wide
// codes at codes to rec.
//
//go:noescape
func deltaApplyAVX512(rec *float32, codes *byte, n, nbits int, dlo, dstep float32)
