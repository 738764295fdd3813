//go:build !noasm

package gemm

import "github.com/graft-gnn/graft/internal/cpuid"

// kernel12x32AVX512 is microGo(12, 32, …) on AVX-512: 24 zmm accumulators,
// two loads of b and twelve broadcasts of a per step.
//
//go:noescape
func kernel12x32AVX512(k int, a *float32, astep int, b, c *float32, ldc int, load bool, pf uintptr)

// kernel6x16AVX2 is microGo(6, 16, …) on AVX2+FMA: 12 ymm accumulators.
//
//go:noescape
func kernel6x16AVX2(k int, a *float32, astep int, b, c *float32, ldc int, load bool, pf uintptr)

var (
	avx512Kernel = &microKernel{name: "avx512", mr: 12, nr: 32, run: kernel12x32AVX512}
	avx2Kernel   = &microKernel{name: "avx2", mr: 6, nr: 16, run: kernel6x16AVX2}
)

func bestKernel() *microKernel {
	switch cpuid.Detected {
	case cpuid.AVX512:
		return avx512Kernel
	case cpuid.AVX2:
		return avx2Kernel
	}
	return genericKernel
}

// kernels lists every micro-kernel this build can run on this CPU.
func kernels() []*microKernel {
	switch cpuid.Detected {
	case cpuid.AVX512:
		return []*microKernel{avx512Kernel, avx2Kernel, genericKernel}
	case cpuid.AVX2:
		return []*microKernel{avx2Kernel, genericKernel}
	}
	return []*microKernel{genericKernel}
}
