//go:build !noasm

package gemm

import (
	"fmt"
	"unsafe"

	"github.com/graft-gnn/graft/internal/cpuid"
)

// kernel12x32BF16 is microBF16Go(12, 32, …) with VDPBF16PS: 24 zmm
// accumulators, two loads of b and twelve broadcast pairs of a per step.
//
//go:noescape
func kernel12x32BF16(steps int, a, b *uint32, c *float32, ldc int, load bool, pf uintptr)

// zipRowsAVX512 is zipGo on AVX-512 (BW), 32 lanes at a time.
//
//go:noescape
func zipRowsAVX512(dst *uint32, ldd int, src *uint16, lds int, w, width, steps int)

var bf16Kernel = &bfKernel{name: "avx512bf16", mr: 12, nr: 32, run: kernel12x32BF16}

var avx512Zipper = &zipper{name: "avx512", run: func(dst []uint32, ldd, lanes int, src []uint16, lds, h, steps int) {
	if h < 1 || h > lanes || lanes > ldd || steps < 1 ||
		len(dst) < (steps-1)*ldd+lanes || len(src) < (2*steps-1)*lds+h {
		panic(fmt.Sprintf("gemm: bad zip h=%d lanes=%d steps=%d ldd=%d lds=%d len(dst)=%d len(src)=%d", h, lanes, steps, ldd, lds, len(dst), len(src)))
	}
	zipRowsAVX512(unsafe.SliceData(dst), ldd, unsafe.SliceData(src), lds, h, lanes, steps)
}}

// bestBF16Kernel is AMX tiles where the CPU and OS allow them, else
// VDPBF16PS where the CPU has it and is not Intel's, else widening to
// float32 for the AVX-512 or AVX2 float32 kernels, else the pure-Go twin.
// Intel's cores retire one VDPBF16PS every two cycles against two FMAs a
// cycle, so it multiplies half as many products as float32 does (the
// kernel runs at 0.55–0.71 of Gemm's rate on a Xeon of family 6, model 207,
// BenchmarkGemmBF16), while AMD's run it at the FMA's rate, twice
// the products (1.9–2.6×).
func bestBF16Kernel() *bfKernel {
	switch {
	case cpuid.AMX:
		return amxKernel
	case cpuid.BF16 && !cpuid.Intel:
		return bf16Kernel
	case cpuid.Detected >= cpuid.AVX2:
		return convertBF16
	}
	return genericBF16
}

// bfKernels lists every bf16 kernel this build can run on this CPU.
func bfKernels() []*bfKernel {
	switch {
	case cpuid.AMX:
		return []*bfKernel{amxKernel, bf16Kernel, convertBF16, genericBF16, genericTiles}
	case cpuid.BF16:
		return []*bfKernel{bf16Kernel, convertBF16, genericBF16, genericTiles}
	case cpuid.Detected >= cpuid.AVX2:
		return []*bfKernel{convertBF16, genericBF16, genericTiles}
	}
	return []*bfKernel{genericBF16, genericTiles}
}

func bestZipper() *zipper {
	if cpuid.Detected == cpuid.AVX512 {
		return avx512Zipper
	}
	return goZipper
}

func zippers() []*zipper {
	if cpuid.Detected == cpuid.AVX512 {
		return []*zipper{avx512Zipper, goZipper}
	}
	return []*zipper{goZipper}
}
