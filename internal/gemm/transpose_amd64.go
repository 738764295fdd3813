//go:build !noasm

package gemm

import (
	"fmt"
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

// transposeAVX2 is transposeGo on AVX2, 8 columns at a time, for kb ≥ 8.
//
//go:noescape
func transposeAVX2(dst *float32, ldd, lanes int, src *float32, lds, h, kb int)

// widenTransposeAVX2 is transposeAVX2 from a bfloat16 src, widening each
// value to its float32 as it moves it, for kb ≥ 8.
//
//go:noescape
func widenTransposeAVX2(dst *float32, ldd, lanes int, src *uint16, lds, h, kb int)

var avx2Transposer = &transposer{name: "avx2", run: func(dst []float32, ldd, lanes int, src []float32, lds, h, kb int) {
	checkTranspose(dst, ldd, lanes, src, lds, h, kb)
	if kb >= 8 {
		transposeAVX2(unsafe.SliceData(dst), ldd, lanes, unsafe.SliceData(src), lds, h, kb)
	} else if kb > 0 {
		transposeGo(dst, ldd, lanes, src, lds, h, kb)
	}
}, widen: func(dst []float32, ldd, lanes int, src []uint16, lds, h, kb int) {
	checkTranspose(dst, ldd, lanes, src, lds, h, kb)
	if kb >= 8 {
		widenTransposeAVX2(unsafe.SliceData(dst), ldd, lanes, unsafe.SliceData(src), lds, h, kb)
	} else if kb > 0 {
		widenTransposeGo(dst, ldd, lanes, src, lds, h, kb)
	}
}}

// bestTransposer is the fastest transposer this CPU runs.
func bestTransposer() *transposer {
	switch cpuid.Detected {
	case cpuid.AVX512:
		return avx512Transposer
	case cpuid.AVX2:
		return avx2Transposer
	}
	return goTransposer
}

// transposers lists every transposer this build can run on this CPU.
func transposers() []*transposer {
	switch cpuid.Detected {
	case cpuid.AVX512:
		return []*transposer{avx512Transposer, avx2Transposer, goTransposer}
	case cpuid.AVX2:
		return []*transposer{avx2Transposer, goTransposer}
	}
	return []*transposer{goTransposer}
}

// checkTranspose panics unless the block fits in dst and src, so that the
// assembly transposers never touch memory outside the slices.
func checkTranspose[T float32 | uint16](dst []float32, ldd, lanes int, src []T, lds, h, kb int) {
	if h < 1 || h > lanes || lanes > 16 || lanes > ldd || kb < 0 ||
		len(dst) < (kb-1)*ldd+lanes || len(src) < (h-1)*lds+kb {
		panic(fmt.Sprintf("gemm: bad transpose h=%d lanes=%d kb=%d ldd=%d lds=%d len(dst)=%d len(src)=%d", h, lanes, kb, ldd, lds, len(dst), len(src)))
	}
}
