//go:build !noasm && !amd64.v3

package compress

import "github.com/graft-gnn/graft/internal/cpuid"

// deltaKernel selects the kernels of the delta codec's rows, twins of
// encodeDeltaRow's and applyDeltaRow's loops in deltarow.go: the AVX-512
// ones (delta_amd64.s) where the quantiser's run (AVX-512 F, BW and BMI2's
// PEXT, PDEP and BZHI), else the AVX2 ones (delta_avx2_amd64.s, no BMI2)
// on a CPU with AVX2, else the Go loops. At GOAMD64=v3 the Go loops fuse
// the codes' multiply and add into one rounding, which the kernels do
// not, so that build runs the Go loops (delta_other.go).
var deltaKernel = deltaKernelFor(quantAsm, cpuid.Detected >= cpuid.AVX2)

func deltaKernelFor(avx512, avx2 bool) int {
	switch {
	case avx512:
		return deltaAVX512
	case avx2:
		return deltaAVX2
	}
	return deltaGo
}

// deltaEncodeRows runs deltaKernel's encoder.
func deltaEncodeRows(dst *byte, x, rec *float32, rows, width, nbits int) {
	if deltaKernel == deltaAVX512 {
		deltaEncodeRowsAVX512(dst, x, rec, rows, width, nbits)
		return
	}
	deltaEncodeRowsAVX2(dst, x, rec, rows, width, nbits)
}

// deltaApplyRows runs deltaKernel's decoder; with stream, the AVX-512
// one writes out past the cache (deltaStreamOut).
func deltaApplyRows(rec, out *float32, src *byte, rows, width, nbits int, stream bool) {
	if deltaKernel == deltaAVX512 {
		s := 0
		if stream {
			s = 1
		}
		deltaApplyRowsAVX512(rec, out, src, rows, width, nbits, s)
		return
	}
	deltaApplyRowsAVX2(rec, out, src, rows, width, nbits)
}

// deltaEncodeRowsAVX512 is encodeDeltaRow of each of rows ≥ 1 rows of
// width ≥ 1 in turn (x's and rec's rows), writing rows·rowBytes(nbits,
// width) bytes at dst.
//
//go:noescape
func deltaEncodeRowsAVX512(dst *byte, x, rec *float32, rows, width, nbits int)

// deltaApplyRowsAVX512 is applyDeltaRow of each of rows ≥ 1 rows of
// width ≥ 1 in turn: rows·rowBytes(nbits, width) bytes at src, added to
// rec's rows, the sums written to out's rows too (out may be rec), with
// non-temporal stores where stream is not 0 and out is not rec.
//
//go:noescape
func deltaApplyRowsAVX512(rec, out *float32, src *byte, rows, width, nbits, stream int)

// deltaEncodeRowsAVX2 is deltaEncodeRowsAVX512 with AVX2 alone.
//
//go:noescape
func deltaEncodeRowsAVX2(dst *byte, x, rec *float32, rows, width, nbits int)

// deltaApplyRowsAVX2 is deltaApplyRowsAVX512 with AVX2 alone.
//
//go:noescape
func deltaApplyRowsAVX2(rec, out *float32, src *byte, rows, width, nbits int)
