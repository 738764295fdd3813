//go:build !noasm

package gemm

import (
	"unsafe"

	"github.com/graft-gnn/graft/internal/cpuid"
)

// transposeAVX512 is transposeGo on AVX-512, 16 columns at a time.
//
//go:noescape
func transposeAVX512(dst *float32, ldd, lanes int, src *float32, lds, h, kb int)

var avx512Transposer = &transposer{name: "avx512", run: func(dst []float32, ldd, lanes int, src []float32, lds, h, kb int) {
	checkTranspose(dst, ldd, lanes, src, lds, h, kb)
	if kb > 0 {
		transposeAVX512(unsafe.SliceData(dst), ldd, lanes, unsafe.SliceData(src), lds, h, kb)
	}
}}

// bestTransposer is the fastest transposer this CPU runs.
func bestTransposer() *transposer {
	if cpuid.Detected == cpuid.AVX512 {
		return avx512Transposer
	}
	return goTransposer
}

// transposers lists every transposer this build can run on this CPU.
func transposers() []*transposer {
	if cpuid.Detected == cpuid.AVX512 {
		return []*transposer{avx512Transposer, goTransposer}
	}
	return []*transposer{goTransposer}
}
