//go:build !noasm && !amd64.v3

package compress

// deltaAsm selects the AVX-512 kernels of the delta codec's rows
// (delta_amd64.s), twins of encodeDeltaRow's and applyDeltaRow's
// loops in deltarow.go; they need what the quantiser's
// need (AVX-512 F, BW and BMI2's PEXT, PDEP and BZHI). At GOAMD64=v3 the
// Go loops fuse the codes' multiply and add into one rounding, which the
// kernels do not, so that build runs the Go loops (delta_other.go).
var deltaAsm = quantAsm

// deltaEncodeRowsAVX512 is encodeDeltaRow of each of rows ≥ 1 rows of
// width ≥ 1 in turn (x's and rec's rows), writing rows·rowBytes(nbits,
// width) bytes at dst.
//
//go:noescape
func deltaEncodeRowsAVX512(dst *byte, x, rec *float32, rows, width, nbits int)

// deltaApplyRowsAVX512 is applyDeltaRow of each of rows ≥ 1 rows of
// width ≥ 1 in turn: rows·rowBytes(nbits, width) bytes at src, added to
// rec's rows, the sums written to out's rows too (out may be rec).
//
//go:noescape
func deltaApplyRowsAVX512(rec, out *float32, src *byte, rows, width, nbits int)
